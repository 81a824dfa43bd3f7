"""The leader follows the event stream in slices, asking Redis for the workloads of the
next slice while it reconciles the one before. A workload the next slice names may change
meanwhile: what was read for it must still be what the leader needs."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from kuota.service import following
from queueing.store.events import Event
from tests.unit.store.store_builders import SteppedPool


def test_a_workload_finished_by_one_slice_and_read_without_spec_for_the_next_enters_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(following, "FOLLOW_SLICE", 1)
    pool = SteppedPool()
    pool.submit("first", cpu=4)  # holds the whole queue: what follows waits
    key = pool.submit("again", cpu=4)
    pool.run(steps=2)
    assert pool.state(key) == "Pending"
    # Two entries name it: its cancel, then any "look again".
    pool.client.cancel(key)
    pool.store.redis.xadd(pool.store.keys.events, {"kind": "workload", "key": key})
    # Between the read of the first slice (the cancel: it reads Finished) and that of the
    # second, a user submits it again. The second read is asked for while the workload is
    # still live in the engine, so without its spec; the first slice then finishes it.
    see = following.Follower._see
    submitted: list[str] = []

    def see_and_submit(follower: following.Follower, events: Iterable[Event]) -> None:
        see(follower, events)
        if not submitted:
            submitted.append(pool.submit("again", cpu=1))

    monkeypatch.setattr(following.Follower, "_see", see_and_submit)
    pool.run(steps=1)
    assert submitted == [key]
    assert pool.state(key) == "Pending"  # not set aside as Invalid for a missing spec
    leader = pool.scheduler.leader
    assert leader is not None
    assert leader.engine.records[key].info.pod_sets[0].requests == {"cpu": 1000}
