"""Script calls sent now and answered later (``Scripts.send``): Redis runs them while the
caller works. They must answer exactly as calls run at once do, and a connection must
never go back to the pool with answers still on it (the next command would read them)."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from redis.exceptions import ResponseError
from store_builders import admit, lead, new_store, submit

from queueing.store import PodRef, Store
from queueing.store.workloads import PlaceRequest, PodPlacement
from tests.unit.store.store_builders import node


def _calls(store: Store, keys: list[str]) -> list[tuple[list[str], list[object]]]:
    """One ``read_many`` call per workload: its state and attempt."""
    return [([store.keys.workload(k)], [0, "state", "attempt"]) for k in keys]


def _store_with(states: dict[str, bool]) -> tuple[Store, str]:
    """Pending workloads, those marked True admitted; and the scheduler lease's holder."""
    store = new_store()
    holder = lead(store)
    for i, (key, admitted) in enumerate(states.items()):
        submit(store, key)
        if admitted:
            assert admit(store, holder, key, decision=f"d{i}") == "ok:1"
    return store, holder


def test_the_answers_are_those_of_calls_run_at_once_in_order() -> None:
    store, _ = _store_with({"ns/a": True, "ns/b": False, "ns/c": True})
    calls = _calls(store, ["ns/a", "ns/b", "ns/gone", "ns/c"])
    scripts = store.workloads._scripts
    want = [scripts.read("read_many", keys, args) for keys, args in calls]
    with scripts.send("read_many", calls) as sent:
        got = sent.answers()
    assert got == want == [[["Admitted", "1"]], [["Pending", "0"]], [None], [["Admitted", "1"]]]
    assert scripts.answers("read_many", calls) == want  # (sent and read at once)


def test_a_script_redis_forgot_is_loaded_and_its_calls_run_once() -> None:
    store, holder = _store_with({"ns/a": False})
    store.redis.script_flush()  # a restarted Redis knows no script
    calls = [([store.keys.lease, store.keys.events, store.keys.workload("ns/a"),
               store.keys.history("ns/a")],
              [holder, 2.0, 0, '{"clusterQueue":"cq","podSets":[]}', "cq", 1, "d-again", True])]
    with store.workloads._scripts.send("admit", calls) as sent:
        assert sent.statuses() == ["ok:1"]
    assert store.redis.hget(store.keys.workload("ns/a"), "decision") == "d-again"
    assert store.redis.hget(store.keys.workload("ns/a"), "attempt") == "1"  # not admitted twice


def test_a_batch_run_after_redis_forgot_its_script_runs_every_call_once_in_order() -> None:
    store, holder = _store_with({"ns/a": False, "ns/b": False, "ns/c": False})
    store.redis.script_flush()
    scripts = store.workloads._scripts
    calls = [([store.keys.workload(k)], [0, "state"]) for k in ("ns/a", "ns/gone", "ns/c")]
    assert scripts.answers("read_many", calls) == [[["Pending"]], [None], [["Pending"]]]
    store.redis.script_flush()
    admissions = [([store.keys.lease, store.keys.events, store.keys.workload(k),
                    store.keys.history(k)],
                   [holder, 2.0, 0, '{"clusterQueue":"cq","podSets":[]}', "cq", 1, f"d-{k}", True])
                  for k in ("ns/a", "ns/b", "ns/c")]
    assert scripts.batch_lists("admit", admissions) == ["ok:1", "ok:1", "ok:1"]
    for key in ("ns/a", "ns/b", "ns/c"):
        assert store.redis.hget(store.keys.workload(key), "attempt") == "1"
        assert store.redis.hget(store.keys.workload(key), "decision") == f"d-{key}"


def test_an_error_answer_is_raised_after_every_answer_is_read() -> None:
    store, _ = _store_with({"ns/a": False})
    scripts = store.workloads._scripts
    calls = [*_calls(store, ["ns/a"]), ([store.keys.workload("ns/a")], ["not a number"]),
             *_calls(store, ["ns/a"])]
    with pytest.raises(ResponseError), scripts.send("read_many", calls) as sent:
        sent.answers()
    # The connection went back with nothing left on it: the next call reads its own answer.
    assert scripts.answers("read_many", _calls(store, ["ns/a"])) == [[["Pending", "0"]]]


@pytest.mark.parametrize("raise_in_block", [False, True], ids=["left unread", "block raised"])
def test_unread_answers_never_reach_a_later_command(raise_in_block: bool) -> None:
    store, _ = _store_with({"ns/a": True})
    scripts = store.workloads._scripts
    with (pytest.raises(KeyError) if raise_in_block else nullcontext(),
          scripts.send("read_many", _calls(store, ["ns/a", "ns/a", "ns/a"]))):
        if raise_in_block:
            raise KeyError("the caller failed")
    for _ in range(3):  # whichever pooled connection comes next
        assert store.redis.hget(store.keys.workload("ns/a"), "state") == "Admitted"
        assert scripts.answers("read_many", _calls(store, ["ns/a"])) == [[["Admitted", "1"]]]


def test_sent_placements_are_stored_as_placements_run_at_once_are() -> None:
    (at_once, holder), (sent_store, sent_holder) = (_store_with({"ns/a": True}),
                                                    _store_with({"ns/a": True}))
    statuses = []
    for store in (at_once, sent_store):
        epoch = node(store, "n0")
        request = PlaceRequest("ns/a", 1, (PodPlacement(PodRef("ns/a", 1, 0), "n0", "main",
                                                        {"cpu": 1000}, epoch),))
        if store is at_once:
            statuses.append(store.workloads.place_many(holder, [request], now=3.0))
        else:
            with store.workloads.send_place_many(sent_holder, [request], now=3.0) as sent:
                statuses.append(sent.statuses())
    assert statuses == [["ok"], ["ok"]]
    assert at_once.workloads.get("ns/a").placement == sent_store.workloads.get(
        "ns/a").placement == ("n0",)



def test_sent_calls_are_packed_as_redis_py_packs_them() -> None:
    """``Sent`` packs its calls with hiredis in one go: the bytes redis-py's packer writes
    for the same arguments, booleans as "1"/"0", anything else refused."""
    from redis.connection import Connection

    from queueing.store import scripts

    calls = [(["k1", "k2"], ["é", 3, 1764329876.5, True, False, 0.1, 10**12]), ([], [])]
    want = b"".join(Connection().pack_commands([
        ("EVALSHA", "sha", len(keys), *keys, *(scripts._arg(a) for a in args))
        for keys, args in calls]))
    assert scripts.packed("sha", scripts.checked(calls)) == want
    assert b"$1\r\n1\r\n$1\r\n0\r\n" in want
    with pytest.raises(TypeError, match="must be str, int, float or bool"):
        scripts.checked([(["k"], [None])])
