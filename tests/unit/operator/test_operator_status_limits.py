"""What the operator writes for a maximum execution time and a preemption gate: Kueue's
conditions, reasons and messages, and ``accumulatedPastExecutionTimeSeconds``."""

from __future__ import annotations

from typing import Any

import pytest

from admission import cycle, execution
from admission.events import Kind, WorkloadEvent
from kuota.operator import controller, status
from quota.workload import Admission, PodSetAdmission

Body = dict[str, Any]
KUEUE_REASON = "DeactivatedDueToMaximumExecutionTimeExceeded"
KUEUE_MESSAGE = "The workload is deactivated due to exceeding the maximum execution time"


def evicted(patch: Body) -> tuple[str, str]:
    (cond,) = [c for c in patch["status"]["conditions"] if c["type"] == "Evicted"]
    return cond["reason"], cond["message"]


@pytest.mark.parametrize(("event", "want_evicted", "want_accumulated"), [
    # wait_for_stop: Evicting first (pods stopping), then Deactivated.
    (WorkloadEvent(10, "ns/w", Kind.EVICTING, "Deactivated", execution.REASON,
                   execution.MESSAGE, executed=0.0), (KUEUE_REASON, KUEUE_MESSAGE), None),
    (WorkloadEvent(12, "ns/w", Kind.DEACTIVATED, execution.REASON, "", execution.MESSAGE,
                   executed=0.0), (KUEUE_REASON, KUEUE_MESSAGE), None),
    # Another deactivation keeps kuota's reason.
    (WorkloadEvent(12, "ns/w", Kind.DEACTIVATED, "InactiveWorkload", "",
                   "spec.active is false"), ("Deactivated", "spec.active is false"), "absent"),
    # An eviction of a workload with a maximum records the time admitted so far.
    (WorkloadEvent(12, "ns/w", Kind.EVICTED, "Preempted", "InClusterQueue", "to admit x",
                   executed=17.6), ("Preempted", "to admit x"), 17),
])
def test_deactivation_and_time_admitted_as_kueue_writes_them(
        event: WorkloadEvent, want_evicted: tuple[str, str], want_accumulated: Any) -> None:
    current = {"status": {"accumulatedPastExecutionTimeSeconds": 40}}
    patch = status.workload_status(current, event)
    assert evicted(patch) == want_evicted
    if want_accumulated == "absent":
        assert "accumulatedPastExecutionTimeSeconds" not in patch["status"]
    else:
        assert patch["status"]["accumulatedPastExecutionTimeSeconds"] == want_accumulated


def blocked(patch: Body | None) -> tuple[str, str] | None:
    assert patch is not None
    found = [c for c in patch["status"]["conditions"] if c["type"] == "BlockedOnPreemptionGates"]
    return (found[0]["status"], found[0]["reason"]) if found else None


def test_a_gated_workload_is_blocked_on_its_gates_until_it_waits_for_another_reason() -> None:
    gated = status.pending_status({}, cycle.PREEMPTION_GATED, cycle.GATED_MESSAGE, 10)
    assert blocked(gated) == ("True", "PreemptionGated")
    quota_reserved = [c for c in gated["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert [(c["reason"], c["message"]) for c in quota_reserved] == \
        [("AdmissionGated", "Workload requires preemption, but it's gated")]
    later = status.pending_status(gated, "Pending", "waiting for quota", 20)
    assert blocked(later) == ("False", "Pending")
    assert blocked(status.pending_status({}, "Pending", "waiting for quota", 20)) is None


def test_admission_clears_the_blocked_condition() -> None:
    gated = status.pending_status({}, cycle.PREEMPTION_GATED, cycle.GATED_MESSAGE, 10)
    assert gated is not None
    admission = Admission("team", (PodSetAdmission("main", 1, {"cpu": "f"}, {"cpu": 1000}),))
    admitted = status.workload_status(gated, WorkloadEvent(20, "ns/w", Kind.ADMITTED,
                                                           admission=admission))
    assert blocked(admitted) == ("False", "Admitted")


@pytest.mark.parametrize(("body", "want"), [
    ({"spec": {}}, False),
    ({"spec": {"preemptionGates": [{"name": "a"}]}}, True),
    ({"spec": {"preemptionGates": [{"name": "a"}]},
      "status": {"preemptionGates": [{"name": "a", "position": "Open"}]}}, False),
    ({"spec": {"preemptionGates": [{"name": "a"}, {"name": "b"}]},
      "status": {"preemptionGates": [{"name": "a", "position": "Open"}]}}, True),
    ({"spec": {"preemptionGates": [{"name": "a"}]},
      "status": {"preemptionGates": [{"name": "a", "position": "Closed"}]}}, True),
])
def test_a_gate_is_closed_until_its_status_says_open(body: Body, want: bool) -> None:
    assert controller.preemption_gated(body) is want
