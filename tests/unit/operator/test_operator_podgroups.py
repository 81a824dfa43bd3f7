"""Pod groups: membership, podSets by shape, the start patch, the outcome."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator import podgroups, webhooks
from quota import api
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission

GATE = {"name": "kuota.dev/admission"}


def pod(name: str, *, cpu: str = "1", total: str | None = "3", gated: bool = True,
        phase: str | None = None, kueue: bool = False) -> dict[str, Any]:
    prefix = "kueue.x-k8s.io" if kueue else "kuota.dev"
    annotations = {} if total is None else {f"{prefix}/pod-group-total-count": total}
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns",
                     "labels": {f"{prefix}/pod-group-name": "g", f"{prefix}/queue-name": "q"},
                     "annotations": annotations, "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": cpu}}}]}}
    if gated:
        body["spec"]["schedulingGates"] = [GATE]
    if phase:
        body["status"] = {"phase": phase}
    return body


class TestMembership:
    @pytest.mark.parametrize(("body", "want"), [
        (pod("a"), ("ns/g", 3)),
        (pod("a", kueue=True), ("ns/g", 3)),
        ({"metadata": {"name": "plain", "namespace": "ns"}}, None),
    ])
    def test_group_of(self, body: dict[str, Any], want: tuple[str, int] | None) -> None:
        assert podgroups.group_of(body) == want

    @pytest.mark.parametrize("total", [None, "0", "three"])
    def test_a_bad_size_is_an_error(self, total: str | None) -> None:
        with pytest.raises(podgroups.GroupError, match="pod-group-total-count"):
            podgroups.group_of(pod("a", total=total))

    def test_the_webhook_gates_group_pods_once(self) -> None:
        fresh = pod("a", gated=False)
        assert webhooks.pod_gates(fresh) == [GATE]
        assert webhooks.pod_gates(pod("a")) is None
        with pytest.raises(webhooks.Rejected):
            webhooks.pod_gates(pod("a", total=None))


class TestWorkload:
    def test_pod_sets_by_shape(self) -> None:
        pods = [pod("driver", cpu="2"), pod("w1"), pod("w2")]
        body = podgroups.workload_for("ns/g", pods, queue="q", priority=0, priority_class=None)
        workload = api.parse_object(body)
        assert isinstance(workload, api.Workload)
        sets = {ps.name: ps for ps in workload.spec.pod_sets}
        assert sorted(ps.count for ps in sets.values()) == [1, 2]
        assert sets[podgroups.shape(pods[0])].pod_requests() == {"cpu": 2000}
        assert all("schedulingGates" not in ps["template"]["spec"]
                   for ps in body["spec"]["podSets"])

    def test_start_patch_lifts_the_gate_with_the_flavor(self) -> None:
        worker = pod("w1")
        admission = Admission("team", (PodSetAdmission(podgroups.shape(worker), 2,
                                                       {"cpu": "fast"}, {"cpu": 2000}),))
        flavors = {"fast": FlavorConfig("fast", {"tier": "fast"})}
        patch = podgroups.start_patch(worker, admission, flavors)
        assert patch is not None
        assert patch["spec"] == {"schedulingGates": None, "nodeSelector": {"tier": "fast"}}
        assert podgroups.start_patch(pod("w1", gated=False), admission, flavors) is None
        # Its podSet is recorded: the new nodeSelector changes its shape.
        started = dict(worker, metadata={**worker["metadata"], **patch["metadata"]},
                       spec={**worker["spec"], "nodeSelector": {"tier": "fast"}})
        assert podgroups.shape(started) != podgroups.shape(worker)
        assert podgroups.pod_set_of(started) == podgroups.shape(worker)

    @pytest.mark.parametrize(("phases", "want"), [
        (["Succeeded", "Succeeded", "Succeeded"], "Succeeded"),
        (["Succeeded", "Failed", "Succeeded"], "Failed"),
        (["Succeeded", "Running", "Succeeded"], None),
    ])
    def test_outcome(self, phases: list[str], want: str | None) -> None:
        pods = [pod(f"p{i}", phase=phase) for i, phase in enumerate(phases)]
        got = podgroups.outcome(pods, 3)
        assert (got[0] if got else None) == want
