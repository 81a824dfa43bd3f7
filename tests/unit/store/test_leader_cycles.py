"""How many scheduling cycles one leader step runs before it persists and places.

A cycle admits at most one head per ClusterQueue. Cheap cycles (few queues, a deep
backlog) run on within ``Timing.cycle_budget``, so a backlog is admitted in batches. A
step whose cycles have tried ``Timing.cycle_heads`` heads stops and hands its decisions on:
the next cycle then decides on the quota that pods freed meanwhile."""

from __future__ import annotations

import pytest

from tests.integration.redis.harness import CQ, queues
from tests.unit.store.store_builders import SteppedPool


def _admitted(pool: SteppedPool, keys: list[str]) -> int:
    return sum(pool.state(k) != "Pending" for k in keys)


# (a budget no cycle here comes near, so that a slow machine cannot end a step early)
ROOMY = 5.0


def test_cheap_cycles_admit_a_queues_backlog_in_one_step() -> None:
    pool = SteppedPool(cycle_budget=ROOMY)
    keys = [pool.submit(f"w{i}") for i in range(4)]  # one queue: one head per cycle
    pool.run(steps=1)
    assert _admitted(pool, keys) == 4


@pytest.mark.parametrize(("cycle_heads", "want_first_step"), [(2, 3), (100, 6)])
def test_a_step_stops_once_its_cycles_tried_enough_heads(cycle_heads: int,
                                                         want_first_step: int) -> None:
    pool = SteppedPool(cycle_budget=ROOMY, cycle_heads=cycle_heads)
    pool.client.apply(queues(*(CQ(name, {"cpu": 4}) for name in ("a", "b", "c"))))
    keys = [pool.client.submit(["true"], queue=f"default/lq-{cq}", name=f"{cq}{i}",
                               requests={"cpu": 1}).key
            for cq in ("a", "b", "c") for i in range(2)]
    pool.run(steps=1)
    # Three queues: a cycle tries three heads, one each.
    assert _admitted(pool, keys) == want_first_step
    pool.run(steps=1)
    assert _admitted(pool, keys) == 6


def test_a_cycle_past_its_time_is_decided_and_the_step_goes_on_at_once() -> None:
    # (cycle_most 0: every cycle ends its nomination after one head)
    pool = SteppedPool(cycle_budget=ROOMY, cycle_most=0.0)
    pool.client.apply(queues(*(CQ(name, {"cpu": 4}) for name in ("a", "b", "c"))))
    keys = [pool.client.submit(["true"], queue=f"default/lq-{cq}", name=f"{cq}{i}",
                               requests={"cpu": 1}).key
            for cq in ("a", "b", "c") for i in range(2)]
    pool.run(steps=1)
    assert _admitted(pool, keys) == 1  # decided, persisted: the rest waits a step
    assert pool.scheduler.leader.busy  # (the next step comes at once)
    pool.run(steps=5)
    assert _admitted(pool, keys) == 6
