"""What only kuota may change on a queued object, decided for each update (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kuota.operator import guard, kinds

Body = dict[str, Any]
JOB = kinds.KINDS["Job"]


def job(*, queue: str | None = "main", suspend: bool = True, parallelism: int = 1,
        cpu: str = "1", original: str | None = None) -> Body:
    meta: Body = {"name": "j", "namespace": "ns", "labels": {}}
    if queue is not None:
        meta["labels"]["kuota.dev/queue-name"] = queue
    if original is not None:
        meta["annotations"] = {"kuota.dev/original-pod-template": original}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"suspend": suspend, "parallelism": parallelism, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}}


@dataclass(frozen=True)
class Case:
    name: str
    old: Body
    new: Body
    want_in_refusal: str | None


CASES = [
    Case("unsuspend a queued Job", job(), job(suspend=False), "cannot be unsuspended by hand"),
    Case("remove its queue label", job(), job(queue=None), "cannot be removed"),
    Case("move a suspended Job to another queue", job(), job(queue="other"), None),
    Case("move a running Job", job(suspend=False), job(queue="other", suspend=False),
         "only while the Job is suspended"),
    Case("scale a running Job", job(suspend=False), job(suspend=False, parallelism=3),
         "cannot change while it runs"),
    Case("ask for more CPU while running", job(suspend=False), job(suspend=False, cpu="8"),
         "cannot change while it runs"),
    # Started with a partial admission: kuota saved the user's 4; it runs 2.
    Case("scale a partially admitted Job back to what it asked",
         job(suspend=False, parallelism=2, original='{"parallelism": 4}'),
         job(suspend=False, parallelism=4, original='{"parallelism": 4}'),
         "cannot change while it runs"),
    Case("edit a suspended Job (its Workload is made anew)", job(), job(parallelism=3), None),
    Case("suspend a running Job", job(suspend=False), job(), None),
    Case("an object kuota does not queue", job(queue=None), job(queue=None, suspend=False),
         None),
    Case("add a queue label (kuota starts queueing it)", job(queue=None, suspend=False),
         job(suspend=False), None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_update_refusal(case: Case) -> None:
    got = guard.update_refusal(JOB, case.old, case.new)
    if case.want_in_refusal is None:
        assert got is None
    else:
        assert got is not None and case.want_in_refusal in got and "Job ns/j" in got


def pod(*, gates: tuple[str, ...] = ("kuota.dev/admission",), group: str = "g",
        queue: str | None = "main") -> Body:
    labels = {"kuota.dev/pod-group-name": group}
    if queue:
        labels["kuota.dev/queue-name"] = queue
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels},
            "spec": {"schedulingGates": [{"name": g} for g in gates]}}


@pytest.mark.parametrize(("old", "new", "want_in_refusal"), [
    (pod(), pod(gates=()), "spec.schedulingGates[kuota.dev/admission]"),
    (pod(), pod(group="theirs"), "metadata.labels[kuota.dev/pod-group-name]"),
    (pod(), pod(queue=None), "metadata.labels[kuota.dev/queue-name]"),
    (pod(gates=("kuota.dev/admission", "other")), pod(), None),  # someone else's gate
    (pod(queue=None), pod(queue=None, group="other"), None),  # not a queued pod
])
def test_pod_update_refusal(old: Body, new: Body, want_in_refusal: str | None) -> None:
    got = guard.pod_update_refusal(old, new)
    assert (got is None) if want_in_refusal is None else (want_in_refusal in (got or ""))
