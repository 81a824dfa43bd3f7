"""A scheduler's rebuild reads the records of unfinished workloads only (issue 12: with
tens of thousands of finished workloads retained, every rebuild outlasted the lease)."""

from __future__ import annotations

import pytest
from store_builders import new_store, submit

from kuota.service import rebuild
from queueing.store import WorkloadRecord


def test_the_rebuild_reads_no_finished_or_invalid_record(
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = new_store()
    for i in range(30):
        submit(store, f"ns/done-{i}")
        store.redis.hset(store.keys.workload(f"ns/done-{i}"), "state", "Finished")
    submit(store, "ns/bad")
    store.redis.hset(store.keys.workload("ns/bad"), "state", "Invalid")
    submit(store, "ns/waiting")
    parsed: list[str] = []
    from_hash = WorkloadRecord.from_hash

    def recording(key, h):  # type: ignore[no-untyped-def]
        parsed.append(key)
        return from_hash(key, h)

    monkeypatch.setattr(WorkloadRecord, "from_hash", recording)
    loaded = rebuild.load(store)
    assert parsed == ["ns/waiting"], "finished and invalid records never leave Redis"
    assert list(loaded.workloads) == ["ns/waiting"]


def test_records_not_in_keep_submission_order_across_chunks() -> None:
    store = new_store()
    for i in range(7):
        submit(store, f"ns/w{i}", now=float(i))
    store.redis.hset(store.keys.workload("ns/w3"), "state", "Finished")
    store.redis.delete(store.keys.workload("ns/w5"))  # purged between the reads
    found = store.workloads.records_not_in({"Finished"}, chunk=2)
    assert list(found) == ["ns/w0", "ns/w1", "ns/w2", "ns/w4", "ns/w6"]
    assert found["ns/w4"] == store.workloads.get("ns/w4"), "the whole record, spec included"


def test_a_hash_without_a_state_is_read_as_corrupt_and_a_missing_one_not_at_all() -> None:
    store = new_store()
    for name in ("ns/fine", "ns/stateless", "ns/gone"):
        submit(store, name)
    store.redis.hdel(store.keys.workload("ns/stateless"), "state")
    store.redis.delete(store.keys.workload("ns/gone"))
    found = store.workloads.records_not_in({"Finished"}, ["ns/fine", "ns/stateless", "ns/gone"])
    assert list(found) == ["ns/fine", "ns/stateless"]
    assert not found["ns/fine"].corrupt
    assert "KeyError: 'state'" in found["ns/stateless"].corrupt, "what get_many reads too"
    assert found["ns/stateless"].corrupt == store.workloads.get("ns/stateless").corrupt
