"""Which Jobs the webhook suspends at creation."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator import webhooks


def job(labels: dict[str, str], suspend: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {}}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"metadata": {"name": "j", "namespace": "ns", "labels": labels}, "spec": spec}


@pytest.mark.parametrize(("labels", "suspend", "default_queue", "want"), [
    ({"kuota.dev/queue-name": "q"}, None, False, True),
    ({"kueue.x-k8s.io/queue-name": "q"}, False, False, True),
    ({"kuota.dev/queue-name": "q"}, True, False, False),  # already suspended: no patch
    ({}, None, False, False),
    ({}, None, True, True),  # the namespace has a LocalQueue "default"
    ({"app": "web"}, None, False, False),
])
def test_needs_suspend(labels: dict[str, str], suspend: bool | None, default_queue: bool,
                           want: bool) -> None:
    got = webhooks.needs_suspend(job(labels, suspend), default_queue=default_queue,
                                     queue_exists=lambda ns, name: name == "default")
    assert got is want


@pytest.mark.parametrize("label", ["kuota.dev/queue-name", "kueue.x-k8s.io/queue-name"])
def test_a_malformed_queue_name_is_rejected_naming_the_label(label: str) -> None:
    with pytest.raises(webhooks.Rejected, match=f"metadata.labels\\[{label}\\]"):
        webhooks.needs_suspend(job({label: "Bad_Name"}), default_queue=False,
                                   queue_exists=lambda ns, name: True)


TOPOLOGY = {"kuota.dev/podset-required-topology": "rack"}


def new_pod(*, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
            owner: str | None = None, gates: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "labels": labels or {},
                            "annotations": annotations or {}}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner}]
    return {"metadata": meta,
            "spec": {"schedulingGates": [{"name": g} for g in gates or []]}}


GROUP = {"kuota.dev/pod-group-name": "g", "kuota.dev/queue-name": "q"}
GROUP_SIZE = {"kuota.dev/pod-group-total-count": "2"}


@pytest.mark.parametrize(("pod", "want"), [
    # A pod of a managed Job (by owner, or by the Job controller's label) asking for topology.
    (new_pod(annotations=TOPOLOGY, owner="managed"), ["kuota.dev/topology"]),
    (new_pod(annotations=TOPOLOGY, labels={"batch.kubernetes.io/job-name": "managed"}),
     ["kuota.dev/topology"]),
    (new_pod(annotations={"kueue.x-k8s.io/podset-preferred-topology": "rack"},
             labels={"job-name": "managed"}), ["kuota.dev/topology"]),
    # Labelled by a Job kuota started: gated even where the Job is not in the cache.
    (new_pod(annotations=TOPOLOGY, labels={"kuota.dev/tas": "true"}, owner="unknown"),
     ["kuota.dev/topology"]),
    # Other gates are kept, ours added once.
    (new_pod(annotations=TOPOLOGY, owner="managed", gates=["example.com/x"]),
     ["example.com/x", "kuota.dev/topology"]),
    (new_pod(annotations=TOPOLOGY, owner="managed", gates=["kuota.dev/topology"]), None),
    # Not kuota's, or no topology asked: untouched.
    (new_pod(annotations=TOPOLOGY, owner="unmanaged"), None),
    (new_pod(owner="managed"), None),
    (new_pod(annotations=TOPOLOGY), None),
    # A queued pod group asking for topology: both gates.
    (new_pod(labels=GROUP, annotations={**GROUP_SIZE, **TOPOLOGY}),
     ["kuota.dev/admission", "kuota.dev/topology"]),
    (new_pod(labels=GROUP, annotations=GROUP_SIZE), ["kuota.dev/admission"]),
])
def test_pod_gates(pod: dict[str, Any], want: list[str] | None) -> None:
    got = webhooks.pod_gates(pod, job_managed=lambda ns, name: (ns, name) == ("ns", "managed"))
    assert (None if got is None else [g["name"] for g in got]) == want


def _sized_job(cpu: str, queue: str = "main") -> dict[str, Any]:
    return {"kind": "Job", "metadata": {"generateName": "train-", "namespace": "ns",
                                        "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"parallelism": 2, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}}


@pytest.mark.parametrize(("cpu", "queue", "want_reason"), [
    ("1", "main", None),  # 2 cpu of 4: it fits once the queue is free
    ("3", "main", "ExceedsMaxQuota"),  # 6 cpu: more than the queue can ever get
    ("1", "nope", None),  # maybe one made a moment ago: the leader's Event tells it
])
def test_a_job_that_can_never_fit_is_warned_at_creation(
        cpu: str, queue: str, want_reason: str | None) -> None:
    from admission.engine import Engine
    from tests.builders import ClusterQueueBuilder, flavor, local_queue

    engine = Engine()
    engine.apply(flavor("f"))
    engine.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).obj())
    engine.apply(local_queue("cq", name="main", namespace="ns"))
    warning = webhooks.never_fits_warning(_sized_job(cpu, queue), default_queue=False,
                                          queue_exists=lambda ns, name: name == "main",
                                          never_fits=engine.never_fits)
    if want_reason is None:
        assert warning is None
    else:
        assert warning is not None and want_reason in warning
        assert warning.startswith("Job ns/(new) can never be admitted")


def test_a_replica_without_the_queues_warns_of_nothing() -> None:
    assert webhooks.never_fits_warning(_sized_job("100"), default_queue=False,
                                       queue_exists=lambda ns, name: True, never_fits=None) is None
