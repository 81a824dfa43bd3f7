"""The leader follows the event stream: each workload an entry names is read again and the
engine made to agree with it. Entries are followed in slices, the workloads of the next
slice asked of Redis while the one before is reconciled; a workload may change meanwhile,
and may even be another submission under the same name than the one the engine holds."""

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


@pytest.mark.parametrize(("first_admitted", "want_state"), [(False, "Pending"), (True, "Admitted")],
                         ids=["was waiting", "was admitted"])
def test_a_workload_ended_and_submitted_again_between_two_steps_is_the_new_one(
        first_admitted: bool, want_state: str) -> None:
    pool = SteppedPool()
    if not first_admitted:
        pool.submit("first", cpu=4)  # holds the whole queue: what follows waits
    key = pool.submit("again", cpu=1 if first_admitted else 4)
    pool.run(steps=2)
    assert pool.state(key) == ("Admitted" if first_admitted else "Pending")
    # Cancelled (never placed: it finishes at once) and submitted again under its name, with
    # another shape, before the leader looks: one read sees only the new submission.
    pool.client.cancel(key)
    pool.submit("again", cpu=2)
    pool.run(steps=2)
    leader = pool.scheduler.leader
    assert leader is not None
    assert leader.engine.records[key].info.pod_sets[0].requests == {"cpu": 2000}
    # Admitted as the new one if the queue has room (the old one's quota was given back).
    assert pool.state(key) == want_state

