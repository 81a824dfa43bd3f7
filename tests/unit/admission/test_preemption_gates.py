"""Preemption gates (``spec.preemptionGates``): a workload with a closed gate preempts
nothing. Where it fits only by preempting it waits with Kueue's reason (AdmissionGated);
where it fits as it is, it is admitted; once its gate opens it preempts as any other."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import pytest

from admission import cycle
from admission.engine import Engine
from quota.config import EngineConfig, PreemptionConfig
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, cohort, flavor, local_queue


def engine() -> Engine:
    e = Engine(config=EngineConfig(), rng=random.Random(1))
    e.apply_all([
        flavor("f"), cohort("co"),
        ClusterQueueBuilder("cq").cohort("co").flavor("f", {"cpu": 4}).set(
            preemption=PreemptionConfig(within_cluster_queue="LowerPriority",
                                        reclaim_within_cohort="Any")).obj(),
        ClusterQueueBuilder("other").cohort("co").flavor("f", {"cpu": 0}).obj(),
        local_queue("cq", name="lq"), local_queue("other", name="lq-other")])
    return e


@dataclass(frozen=True)
class Case:
    name: str
    #: cpu the low-priority workload already running in ``cq`` takes
    running: int
    #: cpu the gated workload asks for
    asks: int
    gated: bool
    want_state: State
    want_reason: str | None
    want_running_evicted: bool


CASES = [
    Case("closed gate, fits only by preempting: waits", 3, 2, True, State.PENDING,
         cycle.PREEMPTION_GATED, False),
    Case("closed gate, fits without preempting: admitted", 2, 2, True, State.ADMITTED,
         None, False),
    Case("no gate: preempts, then is admitted", 3, 2, False, State.ADMITTED, None, True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_closed_gate_holds_back_preemption(case: Case) -> None:
    e = engine()
    low = e.submit(WorkloadBuilder("low").pod_set(count=case.running, cpu=1).obj()).info.key
    e.run_until_idle(0)
    high = WorkloadBuilder("high").pod_set(count=case.asks, cpu=1).priority(10).created(1)
    key = e.submit(high.gated(case.gated).obj()).info.key
    e.run_until_idle(1)
    record = e.records[key]
    assert record.state is case.want_state
    assert record.pending_reason == case.want_reason
    if case.want_reason == cycle.PREEMPTION_GATED:
        assert record.pending_message == cycle.GATED_MESSAGE
    assert (e.records[low].state is State.PENDING) is case.want_running_evicted


def test_a_borrowing_workload_that_would_be_reclaimed_waits_too() -> None:
    """Reclaiming lent quota in the cohort is preemption as well."""
    e = engine()
    borrower = e.submit(WorkloadBuilder("borrower", queue="lq-other").pod_set(count=4, cpu=1)
                        .obj()).info.key
    e.run_until_idle(0)
    assert e.records[borrower].state is State.ADMITTED
    key = e.submit(WorkloadBuilder("owner").pod_set(count=2, cpu=1).gated().created(1)
                   .obj()).info.key
    e.run_until_idle(1)
    assert e.records[key].pending_reason == cycle.PREEMPTION_GATED
    assert e.records[borrower].state is State.ADMITTED


def test_opening_the_gate_lets_it_preempt() -> None:
    e = engine()
    low = e.submit(WorkloadBuilder("low").pod_set(count=3, cpu=1).obj()).info.key
    e.run_until_idle(0)
    gated = WorkloadBuilder("high").pod_set(count=2, cpu=1).priority(10).created(1).gated().obj()
    key = e.submit(gated).info.key
    e.run_until_idle(1)
    e.run_until_idle(2)  # set aside: nothing changed, nothing tried
    assert e.records[key].pending_reason == cycle.PREEMPTION_GATED
    e.update(dataclasses.replace(gated, preemption_gated=False))
    e.run_until_idle(3)
    assert e.records[low].state is State.PENDING  # preempted
    e.run_until_idle(3)
    assert e.records[key].state is State.ADMITTED


def test_update_refuses_a_change_of_queue_or_pod_sets() -> None:
    e = engine()
    info = WorkloadBuilder("w").pod_set(count=1, cpu=1).obj()
    e.submit(info)
    with pytest.raises(ValueError, match="only its gates and execution limit"):
        e.update(dataclasses.replace(info, queue_name="lq-other"))
