"""Why pending workloads wait is written to their records every ``Timing.reasons_every``,
but not while the leader is catching up with a burst of events (its reads come back
full): the reasons wait, at most ``REASONS_DEFERRED_MOST`` seconds, so that following
the burst (the ends of pods among it) does not."""

from __future__ import annotations

import pytest

from kuota.service import leader as leader_module
from kuota.service import reasons as reasons_module
from tests.unit.store.store_builders import SteppedPool

SUBMITTED = "waiting for the scheduler"  # the message a submission is stored with


def _message(pool: SteppedPool, key: str) -> str:
    return pool.store.workloads.get(key).message


def _holding_pool() -> SteppedPool:
    pool = SteppedPool()
    pool.submit("holder", cpu=4)  # holds the whole queue: what follows waits
    pool.run(steps=3, advance=1.0)
    return pool


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> SteppedPool:
    monkeypatch.setattr(leader_module, "READ_COUNT", 2)  # a read of two entries is full
    return _holding_pool()


def test_reasons_wait_while_reads_come_back_full_and_are_written_after(
        pool: SteppedPool) -> None:
    waiters = [pool.submit(f"w-{i}", cpu=4) for i in range(4)]
    pool.run(steps=1, advance=1.0)  # two of four read: a burst
    assert _message(pool, waiters[0]) == SUBMITTED
    pool.run(steps=4, advance=1.0)
    # The head was tried (its class then set aside): its reason is written.
    assert "insufficient" in _message(pool, waiters[0])


def test_a_workload_not_tried_yet_keeps_the_pending_it_was_submitted_with(
        pool: SteppedPool) -> None:
    """Its record says Pending already: writing the engine's "waiting for a try" over it
    told nothing (and cost a write per submission of a burst)."""
    waiters = [pool.submit(f"w-{i}", cpu=4) for i in range(3)]
    pool.run(steps=4, advance=1.0)
    engine = pool.scheduler.leader.engine
    untried = [k for k in waiters if engine.records[k].pending_reason == "Pending"]
    assert untried, "w-1 entered with the head, before its class was set aside"
    assert [(pool.store.workloads.get(k).reason, _message(pool, k)) for k in untried] == \
        [("Pending", SUBMITTED)] * len(untried)


def test_a_new_leader_writes_only_the_reasons_that_changed(
        pool: SteppedPool, monkeypatch: pytest.MonkeyPatch) -> None:
    head = pool.submit("head", cpu=4)
    pool.run(steps=3, advance=1.0)
    assert "insufficient" in _message(pool, head)
    written: list[str] = []
    store_type = type(pool.store.workloads)
    original = store_type.set_reasons

    def spy(self: object, holder: str, reasons: list[tuple[str, int, str, str]]) -> str:
        written.extend(key for key, *_ in reasons)
        return original(self, holder, reasons)  # type: ignore[arg-type]

    monkeypatch.setattr(store_type, "set_reasons", spy)
    pool.restart_scheduler()
    pool.run(steps=3, advance=1.0)
    late = pool.submit("late", cpu=4)
    pool.run(steps=3, advance=1.0)
    assert head not in written, "the reason it found stored is not written again"
    assert late in written, "entered behind a class set aside: told why"
    assert "insufficient" in _message(pool, head)


def test_reasons_wait_no_longer_than_the_most_for_a_burst_that_does_not_end(
        pool: SteppedPool) -> None:
    first = pool.submit("first", cpu=4)
    seconds = 0
    while _message(pool, first) == SUBMITTED and seconds < 20:
        pool.submit(f"a-{seconds}", cpu=4)  # every read comes back full
        pool.submit(f"b-{seconds}", cpu=4)
        pool.run(steps=1, advance=1.0)
        seconds += 1
    most = reasons_module.REASONS_DEFERRED_MOST
    assert most <= seconds <= most + 2


class _CountedWalks(dict):  # type: ignore[type-arg]
    """The engine's records, counting the walks over all of them (a walk begins with a
    list of their keys)."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.walks += 1
        return super().__iter__()


def test_an_idle_leader_does_not_walk_its_workloads_for_reasons(pool: SteppedPool) -> None:
    """Nothing changed since the last walk: no reason can be new. At 50,000 workloads the
    walk every 2.5 s was half of an idle leader's CPU."""
    waiters = [pool.submit(f"w-{i}", cpu=4) for i in range(3)]
    pool.run(steps=6, advance=1.0)
    engine = pool.scheduler.leader.engine
    engine.records = records = _CountedWalks(engine.records)
    pool.run(steps=6, advance=1.0)
    assert records.walks == 0
    late = pool.submit("late", cpu=4)
    pool.run(steps=6, advance=1.0)
    assert records.walks >= 1
    assert "insufficient" in _message(pool, late)
    assert all("insufficient" in _message(pool, k) or _message(pool, k) == SUBMITTED
               for k in waiters)


def _reasons_written(pool: SteppedPool, monkeypatch: pytest.MonkeyPatch
                     ) -> tuple[dict[str, str], list[int]]:
    """Three workloads waiting behind the holder, twenty steps: their stored messages, and
    how many reasons each ``set_reasons`` call wrote."""
    per_call: list[int] = []
    store_type = type(pool.store.workloads)
    original = store_type.set_reasons

    def spy(self: object, holder: str, reasons: list[tuple[str, int, str, str]]) -> str:
        per_call.append(len(reasons))
        return original(self, holder, reasons)  # type: ignore[arg-type]

    monkeypatch.setattr(store_type, "set_reasons", spy)
    waiters = [pool.submit(f"w-{i}", cpu=4) for i in range(3)]
    pool.run(steps=20, advance=1.0)
    return {k: _message(pool, k) for k in waiters}, per_call


def test_a_walk_for_reasons_looks_over_a_slice_a_step_and_ends_where_a_whole_one_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk over 50,000 workloads held one step for half a second on a slow host: it
    now looks over ``REASONS_SLICE`` a step and goes on at the next."""
    monkeypatch.setattr(leader_module, "READ_COUNT", 2)
    whole, _ = _reasons_written(_holding_pool(), monkeypatch)
    monkeypatch.setattr(reasons_module, "REASONS_SLICE", 1)
    sliced, per_call = _reasons_written(_holding_pool(), monkeypatch)
    assert sliced == whole
    assert any("insufficient" in message for message in sliced.values())
    assert max(per_call) == 1  # (one workload looked at a step)
