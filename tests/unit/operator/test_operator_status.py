"""Status written by the operator: Workload conditions per engine event, queue statuses."""

from __future__ import annotations

from typing import Any

import pytest

from admission.engine import Engine
from admission.events import Kind, WorkloadEvent
from kuota.operator import status
from quota.api import LabelSelector
from quota.config import ClusterQueueConfig, FlavorConfig, LocalQueueConfig, ResourceGroupConfig
from quota.resources import FlavorResource
from quota.tree import CellQuota
from quota.workload import Admission, PodSetAdmission, PodSetInfo, WorkloadInfo

ADMISSION = Admission("team", (PodSetAdmission("main", 2, {"cpu": "spot"}, {"cpu": 2000}),))


def kinds(patch: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in patch["status"]["conditions"]}


class TestWorkloadStatus:
    @pytest.mark.parametrize(("event", "want_conditions", "want_admission"), [
        (WorkloadEvent(10, "ns/w", Kind.ADMITTED, admission=ADMISSION),
         {"QuotaReserved": ("True", "QuotaReserved"), "Admitted": ("True", "Admitted"),
          "Evicted": ("False", "Admitted")}, True),
        (WorkloadEvent(10, "ns/w", Kind.QUOTA_RESERVED, admission=ADMISSION),
         {"QuotaReserved": ("True", "QuotaReserved"), "Admitted": ("False", "Pending"),
          "Evicted": ("False", "Admitted")}, True),
        (WorkloadEvent(10, "ns/w", Kind.EVICTED, "Preempted", "InClusterQueue", "to admit x"),
         {"QuotaReserved": ("False", "Pending"), "Admitted": ("False", "NoReservation"),
          "Evicted": ("True", "Preempted"), "Preempted": ("True", "InClusterQueue"),
          "Requeued": ("True", "Preempted"), "PodsReady": ("False", "Evicted")}, False),
        (WorkloadEvent(10, "ns/w", Kind.EVICTED, "PodsReadyTimeout", "", "not ready"),
         {"QuotaReserved": ("False", "Pending"), "Admitted": ("False", "NoReservation"),
          "Evicted": ("True", "PodsReadyTimeout"), "Requeued": ("False", "PodsReadyTimeout"),
          "PodsReady": ("False", "Evicted")}, False),
        (WorkloadEvent(10, "ns/w", Kind.FINISHED, "Failed", message="boom"),
         {"Finished": ("True", "Failed")}, None),
        # Evicting: its pods still stop, so QuotaReserved and the admission are kept.
        (WorkloadEvent(10, "ns/w", Kind.EVICTING, "Preempted", "InClusterQueue", "to admit x",
                       ADMISSION),
         {"Evicted": ("True", "Preempted"), "Preempted": ("True", "InClusterQueue"),
          "PodsReady": ("False", "Evicted")}, None),
        (WorkloadEvent(10, "ns/w", Kind.EVICTING, "Deactivated", "InactiveWorkload", "off",
                       ADMISSION),
         {"Evicted": ("True", "Deactivated"), "PodsReady": ("False", "Evicted")}, None),
    ])
    def test_conditions_per_event(self, event: WorkloadEvent,
                                  want_conditions: dict[str, tuple[str, str]],
                                  want_admission: bool | None) -> None:
        patch = status.workload_status({}, event)
        assert kinds(patch) == want_conditions
        if want_admission is None:
            assert "admission" not in patch["status"]
        elif want_admission:
            assert patch["status"]["admission"] == {
                "clusterQueue": "team", "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "spot"}, "count": 2,
                     "resourceUsage": {"cpu": "2"}}]}
        else:
            assert patch["status"]["admission"] is None  # merge patch: delete

    def test_transition_times_change_only_with_the_status(self) -> None:
        first = status.workload_status({}, WorkloadEvent(10, "ns/w", Kind.ADMITTED,
                                                         admission=ADMISSION))
        again = status.workload_status(first, WorkloadEvent(20, "ns/w", Kind.ADMITTED,
                                                            admission=ADMISSION))
        evicted = status.workload_status(again, WorkloadEvent(30, "ns/w", Kind.EVICTED,
                                                              "Preempted"))
        times = {c["type"]: c["lastTransitionTime"] for c in again["status"]["conditions"]}
        assert times["Admitted"] == status.timestamp(10)
        times = {c["type"]: c["lastTransitionTime"] for c in evicted["status"]["conditions"]}
        assert times["Admitted"] == status.timestamp(30)

    def test_admission_checks_are_written_and_reset_by_an_eviction(self) -> None:
        reserved = status.workload_status(
            {}, WorkloadEvent(10, "ns/w", Kind.QUOTA_RESERVED, admission=ADMISSION),
            {"provision": ("Pending", "")})
        assert [(c["name"], c["state"]) for c in reserved["status"]["admissionChecks"]] == \
            [("provision", "Pending")]
        ready = {"status": dict(reserved["status"], admissionChecks=[
            dict(reserved["status"]["admissionChecks"][0], state="Ready")])}
        evicted = status.workload_status(ready, WorkloadEvent(20, "ns/w", Kind.EVICTED,
                                                              "AdmissionCheck"))
        (check,) = evicted["status"]["admissionChecks"]
        assert (check["state"], check["lastTransitionTime"]) == ("Pending", status.timestamp(20))

    def test_pending_reason_is_written_once(self) -> None:
        patch = status.pending_status({}, "Insufficient", "needs 4 cpu", 5)
        assert patch is not None and kinds(patch) == {"QuotaReserved": ("False", "Insufficient")}
        assert status.pending_status(patch, "Insufficient", "needs 4 cpu", 9) is None
        assert status.pending_status(patch, "Insufficient", "needs 8 cpu", 9) is not None


def engine_with(*cells: tuple[str, int]) -> Engine:
    engine = Engine()
    engine.apply(FlavorConfig("spot"))
    quotas = {FlavorResource("spot", "cpu"): CellQuota(nominal=4000)}
    engine.apply(ClusterQueueConfig("team", resource_groups=(
        ResourceGroupConfig(("cpu",), ("spot",)),), quotas=quotas,
        namespace_selector=LabelSelector(), cohort="org"))
    engine.apply(ClusterQueueConfig("other", quotas={
        FlavorResource("spot", "cpu"): CellQuota(nominal=4000)}, resource_groups=(
        ResourceGroupConfig(("cpu",), ("spot",)),), cohort="org"))
    engine.apply(LocalQueueConfig("ns", "main", "team"))
    for name, cpus in cells:
        engine.submit(WorkloadInfo("ns", name, "main", (
            PodSetInfo("main", cpus, {"cpu": 1000}),)))
    return engine


class TestQueueStatus:
    def test_counts_reservation_and_borrowing(self) -> None:
        engine = engine_with(("a", 3), ("b", 3), ("c", 9))
        engine.run_until_idle(1)
        patch = status.cluster_queue_status(engine, "team", {}, 1)["status"]
        assert (patch["pendingWorkloads"], patch["reservingWorkloads"],
                patch["admittedWorkloads"]) == (1, 2, 2)
        assert patch["flavorsReservation"] == [
            {"name": "spot", "resources": [{"name": "cpu", "total": "6", "borrowed": "2"}]}]
        assert kinds({"status": patch})["Active"] == ("True", "Ready")
        lq = status.local_queue_status(engine, "ns/main", {}, 1)["status"]
        assert (lq["pendingWorkloads"], lq["admittedWorkloads"]) == (1, 2)
        assert lq["flavorsUsage"] == [{"name": "spot", "resources": [
            {"name": "cpu", "total": "6"}]}]

    @pytest.mark.parametrize(("problem", "delete_flavor", "want_reason"), [
        ("spec.resourceGroups[0]: bad", False, "InvalidSpec"),
        (None, True, "FlavorNotFound"),
    ])
    def test_inactive(self, problem: str | None, delete_flavor: bool,
                      want_reason: str) -> None:
        engine = engine_with()
        if delete_flavor:
            engine.delete("ResourceFlavor", "spot")
        patch = status.cluster_queue_status(engine, "team", {}, 1, problem)
        active = next(c for c in patch["status"]["conditions"] if c["type"] == "Active")
        assert (active["status"], active["reason"]) == ("False", want_reason)
        if problem:
            assert problem in active["message"]

    def test_differs_ignores_transition_times(self) -> None:
        engine = engine_with()
        first = status.cluster_queue_status(engine, "team", {}, 1)
        later = status.cluster_queue_status(engine, "team", first, 99)
        assert not status.differs(first, later)
