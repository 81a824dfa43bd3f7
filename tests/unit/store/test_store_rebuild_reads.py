"""A scheduler's rebuild reads the records of unfinished workloads only (issue 12: with
tens of thousands of finished workloads retained, every rebuild outlasted the lease)."""

from __future__ import annotations

import pytest
from store_builders import new_store, submit

from kuota.service import rebuild


def test_the_rebuild_reads_no_finished_or_invalid_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_store()
    for i in range(30):
        submit(store, f"ns/done-{i}")
        store.redis.hset(store.keys.workload(f"ns/done-{i}"), "state", "Finished")
    submit(store, "ns/bad")
    store.redis.hset(store.keys.workload("ns/bad"), "state", "Invalid")
    submit(store, "ns/waiting")
    read: list[str] = []
    get_many = store.workloads.get_many

    def recording(keys, **kw):  # type: ignore[no-untyped-def]
        keys = list(keys)
        read.extend(keys)
        return get_many(keys, **kw)

    monkeypatch.setattr(store.workloads, "get_many", recording)
    loaded = rebuild.load(store)
    assert read == ["ns/waiting"]
    assert list(loaded.workloads) == ["ns/waiting"]


def test_keys_not_in_keeps_submission_order_across_chunks() -> None:
    store = new_store()
    for i in range(7):
        submit(store, f"ns/w{i}", now=float(i))
    store.redis.hset(store.keys.workload("ns/w3"), "state", "Finished")
    assert store.workloads.keys_not_in({"Finished"}, chunk=2) == [
        "ns/w0", "ns/w1", "ns/w2", "ns/w4", "ns/w5", "ns/w6"]
