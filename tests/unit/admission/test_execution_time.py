"""Maximum execution time (``spec.maximumExecutionTimeSeconds``) in the engine: the time of
every admission adds up, and once it reaches the maximum the workload is deactivated with
reason MaximumExecutionTimeExceeded, whichever adapter drives the engine."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from admission import execution
from admission.engine import Engine
from admission.events import Kind
from quota.config import EngineConfig, PreemptionConfig
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine(*, wait_for_stop: bool = False) -> Engine:
    e = Engine(config=EngineConfig(), rng=random.Random(1), wait_for_stop=wait_for_stop)
    e.apply_all([flavor("f"),
                 ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).set(
                     preemption=PreemptionConfig(within_cluster_queue="LowerPriority")).obj(),
                 local_queue("cq", name="lq")])
    return e


def capped(name: str = "capped", *, limit: float = 50, past: float = 0.0,
           priority: int = 0) -> WorkloadBuilder:
    return (WorkloadBuilder(name).pod_set(count=4, cpu=1).priority(priority)
            .max_execution(limit, past=past))


@dataclass(frozen=True)
class Case:
    name: str
    limit: float
    past: float
    #: (time, what): "evict" preempts it by a higher-priority workload that ends 10 s later
    steps: tuple[tuple[float, str], ...]
    want_deactivated_at: float


CASES = [
    Case("one admission reaches the limit", 50, 0, (), 50),
    Case("time admitted before counts (status.accumulatedPastExecutionTimeSeconds)",
         50, 45, (), 5),
    Case("admissions add up: 20 s, preempted, then 30 s", 50, 0, ((20, "evict"),), 60),
    Case("already past the limit: deactivated at its first tick", 50, 80, (), 0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_deactivated_once_admitted_for_the_maximum(case: Case) -> None:
    e = engine()
    key = e.submit(capped(limit=case.limit, past=case.past).obj()).info.key
    e.run_until_idle(0)
    for at, what in case.steps:
        assert what == "evict"
        e.submit(WorkloadBuilder(f"urgent-{at:g}").pod_set(count=4, cpu=1).priority(10)
                 .created(at).obj())
        e.run_until_idle(at)
        assert e.records[key].state is State.PENDING
        e.finish(f"ns/urgent-{at:g}", at + 10)
        e.run_until_idle(at + 10)
        assert e.records[key].state is State.ADMITTED
    want = case.want_deactivated_at
    if want:  # (else it was deactivated at the tick that followed its admission)
        assert e.next_wakeup() == want
        e.run_until_idle(want - 0.001)
        assert e.records[key].state is State.ADMITTED
    e.run_until_idle(want)
    record = e.records[key]
    assert record.state is State.INACTIVE and e.cache.holding(key) is None
    assert (record.pending_reason, record.pending_message) == (execution.REASON,
                                                              execution.MESSAGE)
    (event,) = [ev for ev in e.drain_outbox() if ev.key == key and ev.kind is Kind.DEACTIVATED]
    assert (event.at, event.reason, event.executed) == (want, execution.REASON, 0.0)


def test_a_workload_that_finishes_in_time_is_left_alone() -> None:
    e = engine()
    key = e.submit(capped(limit=50).obj()).info.key
    e.run_until_idle(0)
    e.finish(key, 49)
    assert e.next_wakeup() is None
    e.run_until_idle(100)
    assert e.records[key].state is State.FINISHED


def test_without_a_maximum_nothing_is_timed() -> None:
    e = engine()
    key = e.submit(WorkloadBuilder("free").pod_set(count=4, cpu=1).obj()).info.key
    e.run_until_idle(0)
    assert e.next_wakeup() is None
    e.run_until_idle(10**9)
    assert e.records[key].state is State.ADMITTED


def test_an_eviction_reports_the_time_admitted_so_far() -> None:
    e = engine()
    key = e.submit(capped(limit=50, past=5).obj()).info.key
    e.run_until_idle(0)
    e.evict(key, 12, "Preempted", "InClusterQueue", "test")
    evicted = [ev for ev in e.drain_outbox() if ev.kind is Kind.EVICTED]
    assert [ev.executed for ev in evicted] == [17.0]


def test_a_reactivated_workload_gets_its_full_time_again() -> None:
    e = engine()
    key = e.submit(capped(limit=50).obj()).info.key
    e.run_until_idle(0)
    e.run_until_idle(50)
    assert e.records[key].state is State.INACTIVE
    e.activate(key, 100)
    e.run_until_idle(100)
    assert e.records[key].state is State.ADMITTED
    assert e.next_wakeup() == 150


def test_with_wait_for_stop_it_is_evicting_until_its_pods_are_gone() -> None:
    e = engine(wait_for_stop=True)
    key = e.submit(capped(limit=50).obj()).info.key
    e.run_until_idle(0)
    e.drain_outbox()
    e.run_until_idle(50)
    record = e.records[key]
    assert record.state is State.EVICTING and e.cache.holding(key) is not None
    (evicting,) = e.drain_outbox()
    assert (evicting.kind, evicting.reason, evicting.detail) == \
        (Kind.EVICTING, "Deactivated", execution.REASON)
    e.stopped(key, 52)
    (deactivated,) = e.drain_outbox()
    assert (deactivated.kind, deactivated.reason) == (Kind.DEACTIVATED, execution.REASON)
    assert record.state is State.INACTIVE and e.cache.holding(key) is None


def test_restore_counts_from_when_the_admission_began() -> None:
    e = engine()
    info = capped(limit=50, past=10).obj()
    first = engine()
    first.submit(info)
    first.run_until_idle(0)
    admission = first.records[info.key].admission
    assert admission is not None
    e.restore(info, admission, at=0.0, now=100.0, admitted_at=80.0)
    assert e.next_wakeup() == 120.0  # 80 + 50 - 10
