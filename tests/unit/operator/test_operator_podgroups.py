"""Pod groups: membership, podSets by shape, the start patch, the outcome."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator import webhooks
from kuota.operator.kinds import podgroups
from quota import api
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission

GATE = {"name": "kuota.dev/admission"}


def pod(name: str, *, cpu: str = "1", total: str | None = "3", gated: bool = True,
        phase: str | None = None, kueue: bool = False, started: bool = False,
        terminating: bool = False, selector: dict[str, str] | None = None) -> dict[str, Any]:
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
    if started:  # ungated by kuota under an admission
        body["metadata"]["annotations"]["kuota.dev/admission"] = "team"
    if terminating:
        body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if selector:
        body["spec"]["nodeSelector"] = selector
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
        # A failed pod of a retriable group waits for its replacement.
        (["Succeeded", "Failed", "Succeeded"], None),
        (["Succeeded", "Failed", "Succeeded", "Succeeded"], "Succeeded"),  # replaced
        (["Succeeded", "Failed", "Succeeded", "unretriable"], "Failed"),
        (["Failed", "Running", "unretriable"], None),  # one still runs
        (["Succeeded", "Running", "Succeeded"], None),
        # Deleted pods are leaving: stopped by an eviction, they fail nothing.
        (["deleted-Failed", "deleted-Failed", "deleted-Failed", "unretriable"], None),
        (["deleted-Succeeded", "Succeeded", "Succeeded"], None),
    ])
    def test_outcome(self, phases: list[str], want: str | None) -> None:
        pods = [pod(f"p{i}", phase=phase.removeprefix("deleted-"),
                    terminating=phase.startswith("deleted-"))
                for i, phase in enumerate(phases) if phase != "unretriable"]
        if "unretriable" in phases:
            pods[0]["metadata"]["annotations"]["kueue.x-k8s.io/retriable-in-group"] = "false"
        got = podgroups.outcome(pods, 3)
        assert (got[0] if got else None) == want


class TestDyingPods:
    @pytest.mark.parametrize(("body", "want_live", "want_started"), [
        (pod("a"), True, False),
        (pod("a", gated=False, started=True), True, True),
        (pod("a", gated=False, started=True, terminating=True), False, True),
        (pod("a", gated=False, started=True, phase="Failed"), False, True),
        (pod("a", gated=False), True, False),  # ungated, but not by kuota
    ])
    def test_live_and_started(self, body: dict[str, Any], want_live: bool,
                              want_started: bool) -> None:
        assert (podgroups.live(body), podgroups.started(body)) == (want_live, want_started)

    @pytest.mark.parametrize(("pods", "want"), [
        ([], True),
        ([pod("gated")], True),  # never ran
        ([pod("a", gated=False, started=True)], False),
        ([pod("a", gated=False, started=True, terminating=True)], False),  # still dying
        ([pod("a", gated=False, started=True, phase="Succeeded"), pod("b")], True),
    ])
    def test_stopped(self, pods: list[dict[str, Any]], want: bool) -> None:
        assert podgroups.stopped(pods) is want


class TestStartConflicts:
    @pytest.mark.parametrize(("selector", "want_problem"), [
        (None, None),
        ({"tier": "fast"}, None),  # already there: nothing changes
        ({"zone": "a"}, None),  # another key: the flavor's is added beside it
        ({"tier": "slow"}, "tier=slow"),  # the API server would refuse the change
    ])
    def test_start_conflict(self, selector: dict[str, str] | None,
                            want_problem: str | None) -> None:
        worker = pod("w1", selector=selector)
        admission = Admission("team", (PodSetAdmission(podgroups.shape(worker), 1,
                                                       {"cpu": "fast"}, {"cpu": 1000}),))
        flavors = {"fast": FlavorConfig("fast", {"tier": "fast"})}
        got = podgroups.start_conflict(worker, admission, flavors)
        if want_problem is None:
            assert got is None
        else:
            assert got is not None and want_problem in got
