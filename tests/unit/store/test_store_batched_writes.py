"""The scheduler's batched writes: many admissions or placements in one script call, each
request answered as it would be on its own (queueing.store.workloads, admit_many and
place_many)."""

from __future__ import annotations

from typing import Any

import pytest
from store_builders import admission, admit, lead, new_store, node, submit

from queueing.store import PodRef, Store
from queueing.store import workloads as workloads_module
from queueing.store.events import Event, named
from queueing.store.workloads import AdmitRequest, PlaceRequest, PodPlacement
from quota.lifecycle import State


def admit_request(key: str, *, attempt: int = 0, decision: str, pods: int = 1,
                  reserve_only: bool = False) -> AdmitRequest:
    return AdmitRequest(key, attempt, admission(count=pods), pods, decision,
                        admit=not reserve_only)


def gang(key: str, attempt: int, nodes: list[tuple[str, int]]) -> PlaceRequest:
    return PlaceRequest(key, attempt, tuple(
        PodPlacement(PodRef(key, attempt, i), name, "main", {"cpu": 1000}, epoch)
        for i, (name, epoch) in enumerate(nodes)))


def decisions(store: Store) -> list[str]:
    """The workloads named by the stream's ``decision`` entries, in order."""
    return [key for e in decision_entries(store) for key in e.key.split("\n")]


def decision_entries(store: Store) -> list[Event]:
    return [e for e in store.events.read("0-0", block_ms=None) if e.kind == "decision"]


def history(store: Store, key: str) -> list[str]:
    return [h["event"] for h in store.workloads.history(key)]


class CountingCalls:
    """Wraps a store's script runner: the keys of every call sent."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.keys: list[list[str]] = []
        scripts = store.workloads._scripts
        original = scripts.answers

        def answers(name: str, calls: Any) -> list[Any]:
            self.keys += [list(keys) for keys, _ in calls]
            return original(name, calls)

        monkeypatch.setattr(scripts, "answers", answers)


class TestAdmitMany:
    def test_each_request_of_a_mixed_batch_gets_its_own_status(self) -> None:
        store = new_store()
        holder = lead(store)
        for key in ("ns/stale", "ns/again", "ns/fresh"):
            submit(store, key, submission=key)
        assert admit(store, holder, "ns/stale", decision="earlier") == "ok:1"
        assert admit(store, holder, "ns/again", decision="d-again") == "ok:1"
        before = decisions(store)
        statuses = store.workloads.admit_many(holder, [
            admit_request("ns/stale", decision="d-stale"),     # read before its admission
            admit_request("ns/again", decision="d-again"),     # this very decision, retried
            admit_request("ns/fresh", decision="d-fresh", pods=2),
            admit_request("ns/missing", decision="d-missing"),
        ], now=5.0)
        assert statuses == ["stale:1", "ok:1", "ok:1", "missing"]
        fresh = store.workloads.get("ns/fresh")
        assert (fresh.state, fresh.attempt, fresh.pods, fresh.cluster_queue) == \
            (State.ADMITTED, 1, 2, "cq")
        # Only the fresh admission changed anything: one history note, one stream entry.
        assert history(store, "ns/fresh") == ["Submitted", "Admitted"]
        assert history(store, "ns/stale") == ["Submitted", "Admitted"]
        assert history(store, "ns/again") == ["Submitted", "Admitted"]
        assert decisions(store) == [*before, "ns/fresh"]
        assert store.workloads.find("ns/missing") is None

    def test_a_refused_state_and_a_reservation_admitted_later(self) -> None:
        store = new_store()
        holder = lead(store)
        for key in ("ns/reserved", "ns/cancelled"):
            submit(store, key, submission=key)
        [reserved] = store.workloads.admit_many(
            holder, [admit_request("ns/reserved", decision="r1", reserve_only=True)], now=2.0)
        assert reserved == "ok:1"
        store.workloads.cancel("ns/cancelled", now=3.0)
        statuses = store.workloads.admit_many(holder, [
            admit_request("ns/cancelled", decision="c1"),
            admit_request("ns/reserved", attempt=1, decision="r2"),  # its checks passed
        ], now=4.0)
        assert statuses == ["state:Finished", "ok:1"]
        record = store.workloads.get("ns/reserved")
        assert (record.state, record.attempt) == (State.ADMITTED, 1)
        assert history(store, "ns/reserved") == ["Submitted", "QuotaReserved", "Admitted"]

    def test_a_deposed_leader_is_refused_every_request(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store, "ns/a", submission="a")
        submit(store, "ns/b", submission="b")
        store.redis.delete(store.keys.lease)
        assert lead(store, "s2") != holder
        statuses = store.workloads.admit_many(holder, [
            admit_request("ns/a", decision="1"), admit_request("ns/b", decision="2")], now=2.0)
        assert statuses == ["fenced", "fenced"]
        assert {store.workloads.get(k).state for k in ("ns/a", "ns/b")} == {State.PENDING}
        assert decisions(store) == []

    def test_a_large_batch_is_sent_in_bounded_calls_answered_in_order(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(workloads_module, "CHUNK", 3)
        store = new_store()
        holder = lead(store)
        keys = [f"ns/w{i}" for i in range(7)]
        for key in keys:
            submit(store, key, submission=key)
        assert admit(store, holder, "ns/w4", decision="early") == "ok:1"
        calls = CountingCalls(store, monkeypatch)
        statuses = store.workloads.admit_many(
            holder, [admit_request(k, decision=f"d{i}") for i, k in enumerate(keys)], now=3.0)
        assert statuses == ["ok:1"] * 4 + ["stale:1"] + ["ok:1"] * 2
        # lease and events, then a workload and its history per request
        assert [len(k) for k in calls.keys] == [2 + 2 * 3, 2 + 2 * 3, 2 + 2 * 1]
        assert decisions(store) == ["ns/w4", *(k for k in keys if k != "ns/w4")]
        # One entry per call names every workload it decided for (the stale one: none).
        assert [e.key.split("\n") for e in decision_entries(store)] == [
            ["ns/w4"], ["ns/w0", "ns/w1", "ns/w2"], ["ns/w3", "ns/w5"], ["ns/w6"]]
        assert named(store.events.read("0-0", block_ms=None)) == set(keys)


class TestPlaceMany:
    def test_only_the_gang_naming_a_lost_node_is_refused(self) -> None:
        store = new_store()
        holder = lead(store)
        for key in ("ns/first", "ns/lost", "ns/last"):
            submit(store, key, submission=key)
            assert admit(store, holder, key, pods=2, decision=key) == "ok:1"
        a, b, c = node(store, "a"), node(store, "b"), node(store, "c")
        assert store.nodes.leave("c", c, reason="test", now=2.5) == "ok"
        statuses = store.workloads.place_many(holder, [
            gang("ns/first", 1, [("a", a), ("b", b)]),
            gang("ns/lost", 1, [("a", a), ("c", c)]),
            gang("ns/last", 1, [("b", b), ("b", b)]),
        ], now=3.0)
        assert statuses == ["ok", "node:c", "ok"]
        # The refused gang wrote nothing, not even the pod on the node that is still there.
        assert store.pods.get(PodRef("ns/lost", 1, 0)) is None
        assert store.workloads.get("ns/lost").placement == ()
        assert history(store, "ns/lost") == ["Submitted", "Admitted"]
        assert store.nodes.pod_ids(["a", "b"]) == {
            "a": {"ns/first:1:0"}, "b": {"ns/first:1:1", "ns/last:1:0", "ns/last:1:1"}}
        assert store.workloads.get("ns/last").placement == ("b", "b")
        assert history(store, "ns/first") == ["Submitted", "Admitted", "Placed"]
        assert decisions(store)[-2:] == ["ns/first", "ns/last"]

    def test_each_gang_is_checked_on_its_own(self) -> None:
        store = new_store()
        holder = lead(store)
        for key in ("ns/placed", "ns/other", "ns/pending", "ns/new"):
            submit(store, key, submission=key)
        for key in ("ns/placed", "ns/other", "ns/new"):
            assert admit(store, holder, key, decision=key) == "ok:1"
        a, b = node(store, "a"), node(store, "b")
        assert store.workloads.place_many(
            holder, [gang("ns/placed", 1, [("a", a)]), gang("ns/other", 1, [("a", a)])],
            now=3.0) == ["ok", "ok"]
        statuses = store.workloads.place_many(holder, [
            gang("ns/placed", 1, [("a", a)]),      # the same placement again
            gang("ns/other", 1, [("b", b)]),       # placed elsewhere already
            gang("ns/pending", 0, [("a", a)]),     # not admitted
            gang("ns/new", 2, [("a", a)]),         # an attempt it does not have
            gang("ns/missing", 1, [("a", a)]),
        ], now=4.0)
        assert statuses == ["ok:again", "placed", "state:Pending", "stale:1", "missing"]
        assert store.nodes.pod_ids(["a", "b"]) == {"a": {"ns/placed:1:0", "ns/other:1:0"},
                                                   "b": set()}
        assert store.pods.get(PodRef("ns/new", 2, 0)) is None

    def test_a_deposed_leader_places_nothing(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        assert admit(store, holder) == "ok:1"
        a = node(store, "a")
        store.redis.delete(store.keys.lease)
        lead(store, "s2")
        assert store.workloads.place_many(
            holder, [gang("ns/w", 1, [("a", a)]), gang("ns/x", 1, [("a", a), ("a", a)])],
            now=3.0) == ["fenced", "fenced"]
        assert store.nodes.pod_ids(["a"]) == {"a": set()}

    def test_calls_are_bounded_by_gangs_and_pods_and_never_split_a_gang(
            self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(workloads_module, "CHUNK", 3)
        monkeypatch.setattr(workloads_module, "CHUNK_PODS", 4)
        store = new_store()
        holder = lead(store)
        a = node(store, "a", cpu=100)
        sizes = [1, 2, 6, 1, 1, 1, 1]
        requests = []
        for i, size in enumerate(sizes):
            key = f"ns/g{i}"
            submit(store, key, submission=key)
            assert admit(store, holder, key, pods=size, decision=key) == "ok:1"
            requests.append(gang(key, 1, [("a", a)] * size))
        calls = CountingCalls(store, monkeypatch)
        assert store.workloads.place_many(holder, requests, now=3.0) == ["ok"] * len(sizes)
        # gangs [1, 2] (the 6 would pass 4 pods), [6] (alone: never split), [1, 1, 1]
        # (3 gangs), [1]; each call: lease, events, then 2 keys a gang and 3 a pod
        assert [len(k) for k in calls.keys] == [2 + 2 * 2 + 3 * 3, 2 + 2 + 3 * 6,
                                                2 + 2 * 3 + 3 * 3, 2 + 2 + 3]
        assert len(store.nodes.pod_ids(["a"])["a"]) == sum(sizes)
