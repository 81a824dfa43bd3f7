"""The store's indexes: ``Keys.unfinished`` holds exactly the workloads not Finished,
``Keys.finished`` the finished ones by when they finished.

Whatever reads only live workloads — a scheduler's rebuild, the dashboard, ``kuota
status``, ``kuota get workloads`` — reads the first, and retention forgets the oldest of
the second, so that a pool retaining a week of finished workloads costs them nothing.
Each way a workload is stored, finished, purged or removed is driven here through the
store's scripts, and the indexes are then compared with the states the records hold.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from store_builders import (
    SteppedPool,
    admit,
    lead,
    new_store,
    node,
    place,
    running_gang,
    submit,
)

from queueing.store import PodRef, Store, StoreError
from queueing.store.pods import PodExit
from quota.lifecycle import State
from quota.workload import Admission, PodSetAdmission


def index(store: Store) -> set[str]:
    return set(store.redis.zrange(store.keys.unfinished, 0, -1))


def finished_index(store: Store) -> dict[str, float]:
    return dict(store.redis.zrange(store.keys.finished, 0, -1, withscores=True))


def unfinished(store: Store) -> set[str]:
    return {r.key for r in store.workloads.all() if r.state is not State.FINISHED}


def finished(store: Store) -> dict[str, float]:
    return {r.key: r.finished_at or 0.0 for r in store.workloads.all()
            if r.state is State.FINISHED}


def exit_all(store: Store, refs: list, code: int) -> None:
    store.pods.exit_many([PodExit(ref, f"n{ref.index}", len(refs), code, False, "", 1)
                          for ref in refs], 9.0)


def cancel_running(store: Store) -> None:
    holder, refs = running_gang(store)
    store.workloads.cancel("ns/w", now=5.0)  # pods live: Evicting until they are gone
    assert "ns/w" in index(store)
    store.pods.exit_many([PodExit(ref, f"n{ref.index}", 2, 143, True, "stopped", 1)
                          for ref in refs], 6.0)
    assert store.workloads.stopped_many(holder, [store.workloads.get("ns/w")], now=7.0) == [
        "ok:Finished"]


def resubmit(store: Store) -> None:
    submit(store)
    store.workloads.cancel("ns/w", now=2.0)
    submit(store, submission="again", now=3.0)


def purge(store: Store) -> None:
    holder, refs = running_gang(store)
    exit_all(store, refs, 0)
    assert store.workloads.purge_finished(holder, ["ns/w"], before=99.0) == {
        "ns/w": "ok:purged"}


def dispatched(remove: bool) -> Callable[[Store], None]:
    def run(store: Store) -> None:
        admission = Admission("", (PodSetAdmission("main", 1, {}, {}),))
        assert store.dispatched.create("ns/copy", origin="mgr", spec={"spec": {}},
                                       admission=admission, pods=1, backoff_limit=0,
                                       now=1.0) == "created"
        if remove:
            assert store.dispatched.remove("ns/copy", origin="mgr") == "deleted"
    return run


def rejected(store: Store) -> None:
    submit(store)
    assert store.workloads.reject(lead(store), "ns/w", message="unreadable", now=2.0) == "ok"


def quarantined(store: Store) -> None:
    submit(store)
    assert store.workloads.quarantine(lead(store), "ns/w", message="bad", now=2.0) == "ok"


def admitted(store: Store) -> None:
    submit(store)
    assert admit(store, lead(store)) == "ok:1"


@dataclass(frozen=True)
class Case:
    run: Callable[[Store], None]
    want_unfinished: set[str]
    want_finished: frozenset[str] = frozenset()


W = frozenset({"ns/w"})  # the finished index holds ns/w
CASES = {
    "submitted": Case(lambda s: submit(s), {"ns/w"}),
    "admitted": Case(admitted, {"ns/w"}),
    "running": Case(lambda s: running_gang(s), {"ns/w"}),
    "cancelled while pending": Case(
        lambda s: (submit(s), s.workloads.cancel("ns/w", now=2.0)), set(), W),
    "cancelled while running, then its pods stopped": Case(cancel_running, set(), W),
    "every pod exited 0": Case(lambda s: exit_all(s, running_gang(s)[1], 0), set(), W),
    "failed, no retry left": Case(
        lambda s: exit_all(s, running_gang(s, pods=1)[1], 1), set(), W),
    "failed, requeued": Case(
        lambda s: exit_all(s, running_gang(s, pods=1, backoff_limit=1)[1], 1), {"ns/w"}),
    "rejected": Case(rejected, set(), W),
    "set aside as Invalid": Case(quarantined, {"ns/w"}),
    "finished, then submitted again": Case(resubmit, {"ns/w"}),
    "purged": Case(purge, set()),
    "dispatched here": Case(dispatched(remove=False), {"ns/copy"}),
    "dispatched here, then removed": Case(dispatched(remove=True), set()),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_indexes_follow_every_way_a_workload_comes_and_goes(case: Case) -> None:
    store = new_store()
    case.run(store)
    assert index(store) == case.want_unfinished == unfinished(store)
    assert finished_index(store) == finished(store)
    assert finished_index(store).keys() == case.want_finished


def test_a_store_written_before_the_indexes_is_indexed_once() -> None:
    store = new_store()
    for i, finish in enumerate([False, True, False, True]):
        submit(store, f"ns/w{i}", now=float(i))
        if finish:
            store.workloads.cancel(f"ns/w{i}", now=10.0 + i)
    store.redis.delete(store.keys.unfinished, store.keys.finished)  # as an older kuota left it
    assert store.indexes.unfinished_keys() == ["ns/w0", "ns/w1", "ns/w2", "ns/w3"], \
        "until the indexes are complete, every key is read"
    assert store.indexes.finished_keys(since=12.0) == ["ns/w0", "ns/w1", "ns/w2", "ns/w3"]
    assert store.indexes.build(chunk=3) == 4
    assert store.indexes.unfinished_keys() == ["ns/w0", "ns/w2"]
    assert store.redis.zscore(store.keys.unfinished, "ns/w2") == 2.0  # its submission time
    assert finished_index(store) == {"ns/w1": 11.0, "ns/w3": 13.0}  # when they finished
    assert store.indexes.finished_keys(since=12.0) == ["ns/w3"]
    assert store.indexes.finished_keys() == ["ns/w1", "ns/w3"]
    assert store.indexes.build() == 0  # marked complete: not walked again
    assert set(store.workloads.unfinished()) == {"ns/w0", "ns/w2"}


def test_a_key_left_behind_by_an_older_writer_is_not_read_as_unfinished() -> None:
    store = new_store()
    submit(store)
    store.indexes.build()
    store.workloads.cancel("ns/w", now=2.0)
    store.redis.zadd(store.keys.unfinished, {"ns/w": 1.0})  # an older kuota finished it
    assert store.workloads.unfinished() == {}


def test_the_leaders_resync_puts_back_what_an_older_writer_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    """A workload stored by an older kuota after the index was complete is missing from
    it: the rebuild would not see it. The leader's resync window finds it and puts it
    back; the scheduler, which followed its submission, runs it as any other."""
    pool = SteppedPool(resync_every=1.0)
    pool.run(2)  # leading: the index is complete
    store = pool.store
    assert store.redis.exists(store.keys.unfinished_marker)
    key = pool.submit("old-writer", cpu=9)  # more than the queue holds: it stays Pending
    store.redis.zrem(store.keys.unfinished, key)
    pool.run(3, advance=6.0)  # (the resync comes with a node check: every 5 s)
    assert pool.state(key) == "Pending" and key in index(store)
    assert "1 workload(s) were missing from the store's indexes" in caplog.text


@pytest.mark.parametrize(("case", "want_status", "want_score"), [
    ("live, listed by an older writer", "state:Pending", None),
    ("a copy a manager dispatched here", "dispatched", None),
    ("listed too early", "young", 50.0),
])
def test_retention_drops_what_is_wrongly_in_the_finished_index(
        case: str, want_status: str, want_score: float | None) -> None:
    """Retention reads the finished index oldest first: an entry it may not forget must
    leave it (or move to its true time), else it would block the ones behind it."""
    store = new_store()
    holder = lead(store)
    if case.startswith("live"):
        submit(store)
        key = "ns/w"
    elif case.startswith("a copy"):
        dispatched(remove=False)(store)
        key = "ns/copy"
        store.redis.hset(store.keys.workload(key), mapping={"state": "Finished",
                                                            "finished_at": 3.0})
    else:
        submit(store)
        store.workloads.cancel("ns/w", now=50.0)
        key = "ns/w"
    store.redis.zadd(store.keys.finished, {key: 1.0})
    assert store.indexes.finished_before(10.0, 100) == [key]
    assert store.workloads.purge_finished(holder, [key], before=10.0) == {key: want_status}
    assert store.redis.zscore(store.keys.finished, key) == want_score
    assert store.indexes.finished_before(10.0, 100) == []


# -- any sequence of the store's writes keeps the indexes right ----------------------------

KEYS = ("ns/a", "ns/b")
#: "next" moves a workload one step on its way (submitted, admitted, placed, started,
#: exited 0), so that sequences reach every state; the others break in.
OPS = ("next",) * 5 + ("exit 1", "cancel", "stopped", "reject", "purge", "submit")


def apply(store: Store, holder: str, op: str, key: str, step: int) -> None:
    """One write, whatever state the workload is in: the store refuses what the state
    does not allow (a status or a StoreError), which is part of what is tested."""
    record = store.workloads.find(key)
    if op == "next":
        op = "submit" if record is None or record.state is State.FINISHED else \
            "admit" if record.state is State.PENDING else \
            "place" if record.state is State.ADMITTED and not record.placement else \
            "start or exit 0"
    pod = PodRef(key, record.attempt, 0) if record is not None else None
    with suppress(StoreError):
        if op == "submit":
            submit(store, key, backoff_limit=step % 2, submission=f"s{step}", now=float(step))
        elif record is None or pod is None:
            return
        elif op == "admit":
            admit(store, holder, key, attempt=record.attempt, decision=f"d{step}")
        elif op == "place":
            place(store, holder, key, record.attempt, [("n0", store.nodes.get("n0").epoch)])
        elif op == "start or exit 0" and store.pods.start(
                pod, node="n0", epoch=store.nodes.get("n0").epoch, devices="",
                now=float(step)) != "ok":
            store.pods.exit_many([PodExit(pod, "n0", 1, 0, False, "", 1)], float(step))
        elif op == "exit 1":
            store.pods.exit_many([PodExit(pod, "n0", 1, 1, False, "", 1)], float(step))
        elif op == "cancel":
            store.workloads.cancel(key, now=float(step))
        elif op == "stopped":
            store.workloads.stopped_many(holder, [record], now=float(step))
        elif op == "reject":
            store.workloads.reject(holder, key, message="unreadable", now=float(step))
        elif op == "purge":
            store.workloads.purge_finished(holder, [key], before=float(step))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.sampled_from(KEYS)), max_size=25))
def test_any_sequence_of_writes_keeps_the_indexes_right(ops: list[tuple[str, str]]) -> None:
    store = new_store()
    holder = lead(store)
    node(store, "n0", cpu=8)
    for step, (op, key) in enumerate(ops, start=1):
        apply(store, holder, op, key, step)
        assert index(store) == unfinished(store), (step, op, key)
        assert finished_index(store) == finished(store), (step, op, key)
    for record in store.workloads.all():
        event(f"ends {record.state.value}")
