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
def test_job_needs_suspend(labels: dict[str, str], suspend: bool | None, default_queue: bool,
                           want: bool) -> None:
    got = webhooks.job_needs_suspend(job(labels, suspend), default_queue=default_queue,
                                     queue_exists=lambda ns, name: name == "default")
    assert got is want


@pytest.mark.parametrize("label", ["kuota.dev/queue-name", "kueue.x-k8s.io/queue-name"])
def test_a_malformed_queue_name_is_rejected_naming_the_label(label: str) -> None:
    with pytest.raises(webhooks.Rejected, match=f"metadata.labels\\[{label}\\]"):
        webhooks.job_needs_suspend(job({label: "Bad_Name"}), default_queue=False,
                                   queue_exists=lambda ns, name: True)
