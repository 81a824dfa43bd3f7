"""Engine: evictions, requeue backoff, pods-ready deadlines, admission checks, outbox."""

from __future__ import annotations

import random

import pytest

from admission import backoff
from admission.engine import Engine
from admission.events import Kind
from quota.config import (
    AdmissionCheckConfig,
    EngineConfig,
    PodsReadyConfig,
    PreemptionConfig,
    RequeuingStrategy,
)
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine(config: EngineConfig | None = None, **cq_fields: object) -> Engine:
    e = Engine(config=config or EngineConfig(), rng=random.Random(1))
    e.apply(flavor("f"))
    e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).set(**cq_fields).obj())
    e.apply(local_queue("cq", name="lq"))
    return e


def submit(e: Engine, name: str, cpu: int = 4, priority: int = 0, at: float = 0.0) -> str:
    return e.submit(WorkloadBuilder(name).pod_set(count=cpu, cpu=1).priority(priority)
                    .created(at).obj()).info.key


@pytest.mark.parametrize(("attempt", "want_low", "want_high"), [
    (1, 10.0, 11.0), (2, 20.0, 22.0), (3, 40.0, 44.0), (10, 100.0, 100.0)])
def test_backoff_doubles_and_caps(attempt: int, want_low: float, want_high: float) -> None:
    strategy = RequeuingStrategy(backoff_base_seconds=10, backoff_max_seconds=100)
    got = backoff.delay(strategy, attempt, random.Random(attempt), jitter=0.1)
    assert want_low <= got <= want_high


def test_pods_ready_timeout_backs_off_then_deactivates() -> None:
    ready = PodsReadyConfig(timeout=30, requeuing=RequeuingStrategy(
        backoff_limit_count=1, backoff_base_seconds=10))
    e = engine(EngineConfig(wait_for_pods_ready=ready, backoff_jitter=0.0))
    key = submit(e, "stuck")
    e.run_until_idle(0)
    assert e.next_wakeup() == 30
    e.run_until_idle(30)
    record = e.records[key]
    assert record.state is State.PENDING and record.requeue_at == 40
    assert [ev.reason for ev in record.evictions] == ["PodsReadyTimeout"]
    assert e.queues.heads() == []  # not back in the queue while backing off
    e.run_until_idle(40)
    assert record.state is State.ADMITTED
    e.run_until_idle(70)
    assert record.state is State.INACTIVE
    assert record.pending_reason == "RequeuingLimitExceeded"
    kinds = [ev.kind for ev in e.drain_outbox()]
    assert kinds == [Kind.ADMITTED, Kind.EVICTED, Kind.REQUEUED, Kind.ADMITTED, Kind.EVICTED,
                     Kind.DEACTIVATED]


def test_ready_pods_stop_the_deadline() -> None:
    e = engine(EngineConfig(wait_for_pods_ready=PodsReadyConfig(timeout=30)))
    key = submit(e, "fine")
    e.run_until_idle(0)
    e.pods_ready(key, 5)
    assert e.next_wakeup() is None
    e.run_until_idle(100)
    assert e.records[key].state is State.ADMITTED


def test_preemption_outbox_names_reason_and_preemptor() -> None:
    e = engine(preemption=PreemptionConfig(within_cluster_queue="LowerPriority"))
    low = submit(e, "low", priority=0)
    e.run_until_idle(0)
    high = submit(e, "high", priority=5, at=1)
    e.run_until_idle(1)
    events = [(ev.kind, ev.key, ev.reason, ev.detail) for ev in e.drain_outbox()]
    assert (Kind.EVICTED, low, "Preempted", "InClusterQueue") in events
    assert events[-1][:2] == (Kind.ADMITTED, high)
    assert e.records[low].state is State.PENDING


def test_admission_check_states() -> None:
    e = engine(admission_checks=(("gate", ()),))
    e.apply(AdmissionCheckConfig("gate", "example.com/gate"))
    key = submit(e, "w")
    e.run_until_idle(0)
    assert e.records[key].state is State.QUOTA_RESERVED
    with pytest.raises(ValueError, match="unknown state"):
        e.set_check(key, "gate", "Maybe", 1)
    e.set_check(key, "gate", "Retry", 1)
    assert e.records[key].state is State.PENDING
    e.run_until_idle(2)
    e.set_check(key, "gate", "Ready", 3)
    assert e.records[key].state is State.ADMITTED


class ApproveAll:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def reserved(self, record, check, now):  # type: ignore[no-untyped-def]
        self.seen.append(record.info.key)
        return ("Ready", "approved")


def test_check_controller_answers_at_reservation() -> None:
    e = engine(admission_checks=(("gate", ()),))
    e.apply(AdmissionCheckConfig("gate", "example.com/approve"))
    controller = ApproveAll()
    e.controllers["example.com/approve"] = controller
    key = submit(e, "w")
    e.run_until_idle(0)
    assert controller.seen == [key]
    assert e.records[key].state is State.ADMITTED


def test_hold_and_drain_evicts_running_workloads() -> None:
    e = engine()
    key = submit(e, "w")
    e.run_until_idle(0)
    e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).set(
        stop_policy="HoldAndDrain").obj())
    e.run_until_idle(1)
    record = e.records[key]
    assert record.state is State.PENDING
    assert record.evictions[-1].reason == "ClusterQueueStopped"
    assert record.pending_reason == "ClusterQueueStopped"


def test_restore_counts_usage_without_a_decision() -> None:
    e = engine()
    info = WorkloadBuilder("held").pod_set(count=3, cpu=1).obj()
    from quota.workload import Admission, PodSetAdmission
    admission = Admission("cq", (PodSetAdmission("main", 3, {"cpu": "f"}, {"cpu": 3000}),))
    record = e.restore(info, admission, 5.0)
    assert record.state is State.ADMITTED and record.admitted_at == 5.0
    assert sum(e.cache.tree.queues["cq"].usage.values()) == 3000
    assert e.drain_outbox() == []
    assert e.queues.heads() == []


@pytest.mark.parametrize(("stored", "controller", "want_state", "want_asked", "want_checks"), [
    # a verdict the previous process never gave: the controller is asked again
    ({}, True, State.ADMITTED, True, {"gate": ("Ready", "approved")}),
    ({"gate": ("Pending", "")}, False, State.QUOTA_RESERVED, False, {"gate": ("Pending", "")}),
    # already decided: kept, not asked again
    ({"gate": ("Ready", "ok")}, True, State.ADMITTED, False, {"gate": ("Ready", "ok")}),
    ({"gate": ("Retry", "again")}, True, State.PENDING, False, {}),
], ids=["pending-asks-again", "pending-no-controller", "ready-admits", "retry-evicts"])
def test_restore_in_quota_reserved_resumes_admission_checks(
        stored: dict[str, tuple[str, str]], controller: bool, want_state: State,
        want_asked: bool, want_checks: dict[str, tuple[str, str]]) -> None:
    from quota.workload import Admission, PodSetAdmission
    e = engine(admission_checks=(("gate", ()),))
    e.apply(AdmissionCheckConfig("gate", "example.com/approve"))
    approver = ApproveAll()
    if controller:
        e.controllers["example.com/approve"] = approver
    info = WorkloadBuilder("held").pod_set(count=3, cpu=1).obj()
    admission = Admission("cq", (PodSetAdmission("main", 3, {"cpu": "f"}, {"cpu": 3000}),))
    record = e.restore(info, admission, 5.0, admitted=False, checks=stored, now=7.0)
    assert record.state is want_state
    assert (approver.seen == [info.key]) is want_asked
    assert record.checks == want_checks
    held = sum(e.cache.tree.queues["cq"].usage.values())
    assert held == (0 if want_state is State.PENDING else 3000)
