"""Reading many workloads at once (``get_many``, ``specs``): one ``read_many`` script per
chunk of keys — or, for a Redis user that may not run scripts, a pipeline of plain
reads — giving the records a read of each hash on its own would."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import pytest
from redis.exceptions import NoPermissionError
from store_builders import new_store, running_gang, submit

from queueing.store import Store
from queueing.store import workloads as workloads_module


@dataclass(frozen=True)
class Mode:
    name: str
    options: dict[str, bool]
    #: What a read in this mode leaves out of a record (attribute: its empty value).
    left_out: dict[str, Any]


MODES = [
    Mode("whole", {}, {}),
    Mode("without spec", {"spec": False}, {"spec_json": "", "dispatch_json": ""}),
    Mode("changes only", {"spec": False, "admission": False},
         {"spec_json": "", "dispatch_json": "", "admission": None, "created": 0.0,
          "shape": "", "spec_sum": ""}),
]


#: How the store reads: by script (a user with every right), or with plain commands.
WAYS = ["script", "plain"]


def new_reader(way: str) -> Store:
    store = new_store()
    store.workloads._scripted_reads = way == "script"
    return store


def stored(store: Store) -> list[str]:
    """A pending workload, and a running gang whose dispatch decision was recorded."""
    submit(store, "ns/pending", now=5.0)
    holder, _ = running_gang(store, "ns/running")
    assert store.workloads.set_dispatch(holder, [("ns/running", 1, '{"cluster":"m"}')]) == ["ok"]
    return ["ns/pending", "ns/running"]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
def test_each_record_is_the_one_read_alone_less_what_the_mode_leaves_out(mode: Mode,
                                                                         way: str) -> None:
    store = new_reader(way)
    keys = stored(store)
    alone = {key: store.workloads.get(key) for key in keys}
    assert alone["ns/running"].dispatch_json and alone["ns/running"].admission
    found = store.workloads.get_many(["ns/gone", *keys], **mode.options)
    assert found == {key: replace(alone[key], **mode.left_out) for key in keys}


@pytest.mark.parametrize("way", WAYS)
def test_reads_sent_ahead_give_what_reads_at_once_give(way: str) -> None:
    store = new_reader(way)
    keys = stored(store)
    store.redis.hset(store.keys.workload("ns/alien"), mapping={"unknown": "1"})
    known, new = ["ns/running", "ns/alien", "ns/gone"], ["ns/pending", "ns/alien", "ns/gone"]
    want = {**store.workloads.get_many(known, spec=False, admission=False),
            **store.workloads.get_many(new)}
    assert set(want) == {*keys, "ns/alien"}
    with store.workloads.send_reads(known, new) as reading:
        assert reading.records() == want
    with store.workloads.send_reads([], []) as reading:
        assert reading.records() == {}


@pytest.mark.parametrize("way", WAYS)
def test_known_workloads_in_a_state_to_skip_are_read_as_gone(way: str) -> None:
    """The leader reads no known workload that Redis holds Finished; a hash without a
    state is still read, and found corrupt (a skip by state does not hide it)."""
    store = new_reader(way)
    keys = stored(store)
    submit(store, "ns/done", now=6.0)
    store.redis.hset(store.keys.workload("ns/done"), "state", "Finished")
    store.redis.hset(store.keys.workload("ns/stateless"), mapping={"queue": "ns/lq"})
    known = [*keys, "ns/done", "ns/stateless", "ns/gone"]
    want = store.workloads.get_many(known, spec=False, admission=False)
    assert want["ns/done"].state.value == "Finished"
    with store.workloads.send_reads(known, ["ns/pending"], skip=("Finished",)) as reading:
        got = reading.records()
    assert got == {**{k: want[k] for k in (*keys, "ns/stateless")},
                   "ns/pending": store.workloads.get("ns/pending")}  # (read whole as new)
    assert got["ns/stateless"].corrupt == "unreadable workload record: KeyError: 'state'"
    with store.workloads.send_reads(known, []) as reading:  # (nothing to skip)
        assert reading.records()["ns/done"] == want["ns/done"]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
def test_hashes_written_around_kuota(mode: Mode, way: str) -> None:
    store = new_reader(way)
    store.redis.hset(store.keys.workload("ns/stateless"), mapping={"queue": "ns/lq"})
    store.redis.hset(store.keys.workload("ns/alien"), mapping={"unknown": "1"})
    found = store.workloads.get_many(["ns/stateless", "ns/alien"], **mode.options)
    assert found["ns/stateless"].corrupt == "unreadable workload record: KeyError: 'state'"
    # A hash holding none of the fields read: found by a whole read (as HGETALL found it),
    # not by a partial one (as HMGET did not).
    if mode.options.get("spec", True):
        assert found["ns/alien"].corrupt == "unreadable workload record: KeyError: 'state'"
    else:
        assert "ns/alien" not in found


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("mode", MODES, ids=[m.name for m in MODES])
def test_a_read_of_several_chunks_answers_as_one(mode: Mode, way: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_reader(way)
    keys = [f"ns/w{i}" for i in range(7)]
    for i, key in enumerate(keys):
        submit(store, key, now=float(i))
    store.redis.delete(store.keys.workload("ns/w4"))
    whole = store.workloads.get_many(keys, **mode.options)
    monkeypatch.setattr(workloads_module, "READ_CHUNK", 3)
    chunked = store.workloads.get_many(keys, **mode.options)
    assert chunked == whole
    assert list(chunked) == [k for k in keys if k != "ns/w4"]


def test_nothing_asked_nothing_read() -> None:
    store = new_store()
    assert store.workloads.get_many([]) == {}
    assert store.workloads.get_many(iter(()), spec=False, admission=False) == {}


@pytest.mark.parametrize("way", WAYS)
def test_specs_of_the_workloads_that_exist(way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_reader(way)
    for key in ("ns/a", "ns/b", "ns/c"):
        submit(store, key)
    store.redis.delete(store.keys.workload("ns/b"))
    store.redis.hset(store.keys.workload("ns/bare"), "state", "Pending")  # no spec
    monkeypatch.setattr(workloads_module, "READ_CHUNK", 2)
    specs = store.workloads.specs(["ns/a", "ns/b", "ns/bare", "ns/c"])
    assert specs == {key: store.workloads.get(key).spec_json for key in ("ns/a", "ns/c")}
    assert json.loads(specs["ns/a"])["metadata"] == {"name": "a", "namespace": "ns"}


def test_a_user_refused_scripts_reads_with_plain_commands_from_then_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_store()
    keys = stored(store)
    want = store.workloads.get_many(keys)
    calls: list[str] = []

    def refused(name: str, *args: object) -> object:
        calls.append(name)
        raise NoPermissionError("this user has no permissions to run the 'evalsha' command")

    monkeypatch.setattr(store.scripts, "read", refused)
    assert store.workloads.get_many(keys) == want
    assert store.workloads.get_many(keys, spec=False) == {
        key: replace(record, spec_json="", dispatch_json="") for key, record in want.items()}
    assert calls == ["read_many"], "asked once, then never again"
