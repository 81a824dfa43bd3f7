"""The leader's resync compares what Redis stores with what the engine holds, a slice a
step: a pass over 50,000 live workloads never holds up one step, and still finds every
difference no event told of."""

from __future__ import annotations

import pytest

from kuota.service import resync as resync_module
from quota.lifecycle import State
from tests.unit.store.store_builders import SteppedPool


def test_a_pass_compares_a_slice_a_step_and_finds_a_difference_in_its_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resync_module, "RESYNC_SLICE", 2)
    pool = SteppedPool(resync_every=1.0)
    keys = [pool.submit(f"w{i}", cpu=9) for i in range(6)]  # more than the queue: all wait
    pool.run(3)
    store, leader = pool.store, pool.scheduler.leader
    last = keys[-1]
    # Finished behind the scheduler's back: no event tells of it.
    store.redis.hset(store.keys.workload(last), mapping={"state": "Finished",
                                                         "outcome": "Succeeded"})
    compared: list[int] = []
    compare = resync_module.Resync._compare

    def counted(self: resync_module.Resync, keys: list[str]) -> None:
        compared.append(len(keys))
        compare(self, keys)

    monkeypatch.setattr(resync_module.Resync, "_compare", counted)
    pool.run(1, advance=6.0)  # a node check: the pass begins
    assert leader.engine.records[last].state is State.PENDING, "not compared yet"
    pool.run(6)
    # The six live workloads two a step, then the window of stored ones two a step too.
    assert compared == [2, 2, 2, 2, 2, 2, 0]
    assert not leader.resync.running
    assert last not in leader.engine.records or \
        leader.engine.records[last].state is State.FINISHED
