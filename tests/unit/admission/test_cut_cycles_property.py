"""Property test: cycles cut short anywhere, with preemption and with workloads ending and
forgotten between two cycles (as the Redis leader and the operator do), never break the
quota rules, never fail, and leave nothing untried once cycles run to the end again.

The quota rules are those of :mod:`tests.unit.admission.test_quota_invariants`, checked
after every step from the workloads that hold quota."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from admission.engine import Engine
from quota.config import ClusterQueueConfig, PreemptionConfig
from quota.lifecycle import HOLDS_QUOTA, State
from tests.builders import WorkloadBuilder
from tests.unit.admission.test_cycles_cut_short import after
from tests.unit.admission.test_quota_invariants import check_invariants, engine_for, queue_specs

PREEMPTING = PreemptionConfig(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")

submits = st.tuples(st.just("submit"), st.integers(0, 3), st.integers(1, 3), st.integers(1, 2),
                    st.integers(0, 3))  # queue, pods, cpu per pod, priority
actions = st.one_of(
    submits, submits,
    st.tuples(st.just("end"), st.integers(0, 50)),  # a live workload (which one)
    st.tuples(st.just("stopped"), st.integers(0, 50)),  # an evicting workload's pods gone
)
#: Each step, as a leader's: what the adapters saw, then one cycle cut after so many heads.
steps = st.lists(st.tuples(actions, st.integers(1, 3)), min_size=20, max_size=60)


def live(engine: Engine, *states: State) -> list[str]:
    return sorted(k for k, r in engine.records.items() if r.state in states)


def end(engine: Engine, key: str, now: float) -> None:
    """The workload ended (cancelled, or done): as the adapters end one."""
    if engine.records[key].state in HOLDS_QUOTA:
        engine.finishing(key, now)  # its pods stop first; ``stopped`` finishes it
    else:
        engine.finish(key, now)
    forget_if_finished(engine, key)


def stopped(engine: Engine, key: str, now: float) -> None:
    """An evicting workload's pods are gone."""
    engine.stopped(key, now)
    forget_if_finished(engine, key)


def forget_if_finished(engine: Engine, key: str) -> None:
    if engine.records[key].state is State.FINISHED:
        del engine.records[key]  # the adapters drop a finished record


@settings(max_examples=100, deadline=None)
@given(specs=queue_specs(), ops=steps)
def test_cut_cycles_keep_quota_invariants(specs: list[ClusterQueueConfig],
                                          ops: list[tuple[tuple[Any, ...], int]]) -> None:
    specs = [replace(cq, preemption=PREEMPTING) for cq in specs]
    engine = engine_for(specs, wait_for_stop=True)
    now = 0.0
    for n, (op, cut) in enumerate(ops):
        now += 1
        if op[0] == "submit":
            _, q, pods, cpu, priority = op
            engine.submit(WorkloadBuilder(f"w{n}", queue=specs[q % len(specs)].name)
                          .pod_set("a", count=pods, cpu=cpu)
                          .priority(priority).created(now).obj())
        elif op[0] == "end":
            keys = live(engine, State.PENDING, *HOLDS_QUOTA)
            if keys:
                end(engine, keys[op[1] % len(keys)], now)
        else:
            keys = live(engine, State.EVICTING)
            if keys:
                stopped(engine, keys[op[1] % len(keys)], now)
        engine.schedule(now, enough=after(cut))
        check_invariants(engine, specs)
    # Pods stop, and cycles run to the end: every head is tried, and no claim kept by a
    # cut cycle holds quota a waiting workload could have.
    engine.run_until_idle(now)
    while keys := live(engine, State.EVICTING):
        for key in keys:
            stopped(engine, key, now)
        engine.run_until_idle(now)
    check_invariants(engine, specs)
    assert engine.queues.heads() == []
