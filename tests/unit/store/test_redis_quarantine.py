"""Nothing stored can crash the scheduler (issue 12, scope 1).

A workload written into Redis around the client — or one that makes a scheduling step
raise for a reason no check foresaw — is set aside as ``Invalid`` with the error as its
message, holds no quota, and every other workload is scheduled as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from store_builders import SteppedPool, workload_spec

from admission import cycle
from kuota.service.leader import Timing
from kuota.service.scheduler import SchedulerOptions, SchedulerService
from quota.lifecycle import State


@dataclass(frozen=True)
class RawCase:
    name: str
    #: Writes the bad workload into the pool's Redis; returns its key.
    write: Callable[[SteppedPool], str]
    want_message: str


def _spec(**kw: Any) -> Callable[[SteppedPool], str]:
    return lambda pool: pool.write_raw("bad", workload_spec("bad", **kw))


def _field(field: str, value: str) -> Callable[[SteppedPool], str]:
    def write(pool: SteppedPool) -> str:
        key = pool.write_raw("bad", workload_spec("bad"))
        pool.store.redis.hset(pool.store.keys.workload(key), field, value)
        return key
    return write


def _nested_spec(pool: SteppedPool) -> str:
    key = pool.write_raw("bad", workload_spec("bad"))
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    pool.store.redis.hset(pool.store.keys.workload(key), "spec", deep)
    return key


RAW_CASES = [
    # The reproductions of issue 12: each killed every scheduler until cancelled.
    RawCase("count 0", _spec(count=0), "spec.podSets[0].count: must be at least 1"),
    RawCase("cpu 1e5000", _spec(cpu="1e5000"), "'1e5000' is too large"),
    RawCase("cpu Infinity", _spec(cpu="Infinity"), "not a finite quantity"),
    RawCase("NUL in command", _spec(command=["tr\0ue"]), "NUL byte"),
    # Found by the property test: admitted, holding quota, with nothing to run.
    RawCase("no command", _spec(command=[]), "command is required in Redis mode"),
    RawCase("= in env name", _spec(env=[{"name": "A=B", "value": "1"}]), "contains '='"),
    RawCase("NUL in env value", _spec(env=[{"name": "A", "value": "\0"}]), "NUL byte"),
    RawCase("spec not JSON", _field("spec", "{not json"), "Expecting property name"),
    RawCase("spec nested 100,000 deep", _nested_spec, "nested too deeply"),
    RawCase("attempt not a number", _field("attempt", "many"), "unreadable workload record"),
    RawCase("unknown state", _field("state", "Bogus"), "unreadable workload record"),
    # Found by the 10,000-example property run: admitted, refused by every script, and
    # impossible to cancel.
    RawCase("empty state", _field("state", ""), "unreadable workload record: ValueError"),
    RawCase("empty attempt", _field("attempt", ""), "unreadable workload record: ValueError"),
    RawCase("attempt 01", _field("attempt", "01"), "is not written as kuota writes it"),
    RawCase("admission not JSON", _field("admission", "[["), "unreadable workload record"),
]


@pytest.mark.parametrize("case", RAW_CASES, ids=[c.name for c in RAW_CASES])
def test_a_bad_raw_record_is_quarantined_and_the_rest_is_served(case: RawCase) -> None:
    pool = SteppedPool()
    before = pool.submit("before")
    bad = case.write(pool)
    after = pool.submit("after")
    pool.run()
    record = pool.store.workloads.get(bad)
    assert (record.state, record.reason) == (State.INVALID, "Invalid")
    assert case.want_message in record.message
    assert record.admission is None, "quota untouched"
    assert [pool.state(before), pool.state(after)] == ["Admitted", "Admitted"]
    assert pool.scheduler.leading


def test_a_workload_that_makes_a_cycle_raise_is_quarantined(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nominate = cycle._nominate

    def poisoned(head: Any, *args: Any) -> Any:
        if head.info.name == "poison":
            raise KeyError("")  # issue 12's `--count 0` crash, whatever its cause next time
        return nominate(head, *args)

    monkeypatch.setattr(cycle, "_nominate", poisoned)
    pool = SteppedPool()
    poison = pool.submit("poison", cpu=1)
    fine = pool.submit("fine", cpu=4)
    pool.run()
    record = pool.store.workloads.get(poison)
    assert record.state is State.INVALID
    assert record.message == "kuota cannot schedule this workload: KeyError: ''"
    assert pool.state(fine) == "Admitted", "the whole quota is left to the others"
    assert pool.scheduler.leading


def test_a_restarted_scheduler_does_not_meet_a_quarantined_workload_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    nominate = cycle._nominate

    def poisoned(head: Any, *args: Any) -> Any:
        calls.append(head.info.name)
        if head.info.name == "poison":
            raise ValueError("boom")
        return nominate(head, *args)

    monkeypatch.setattr(cycle, "_nominate", poisoned)
    pool = SteppedPool()
    pool.submit("poison")
    pool.run()
    assert calls.count("poison") == 1
    pool.scheduler.lease.release()
    pool.scheduler = SchedulerService(pool.connection, SchedulerOptions(  # a new process
        identity="s2", timing=Timing(lease_ttl=30, poll=0.01, batch=0.0)))
    later = pool.submit("later")
    pool.run()
    assert calls.count("poison") == 1
    assert pool.state(later) == "Admitted"


def test_cancelling_an_invalid_workload_finishes_it_and_frees_its_name() -> None:
    pool = SteppedPool()
    bad = pool.write_raw("w", workload_spec("w", count=0))
    pool.run()
    assert pool.state(bad) == "Invalid"
    with pytest.raises(Exception, match="exists"):
        pool.submit("w")
    pool.client.cancel(bad)
    assert pool.state(bad) == "Finished"
    assert pool.submit("w") == bad
    pool.run()
    assert pool.state(bad) == "Admitted"


@pytest.mark.parametrize(("fields", "want_reason"), [
    ({"state": "Ready", "capacity": "[1, 2]", "labels": "nope", "heartbeat": "x"},
     "unreadable node record"),
    # Found by the property test: the node-loss script failed on it in every step.
    ({"state": "Ready", "pool": "", "capacity": "", "labels": "", "epoch": "",
      "heartbeat": "", "devices": ""}, "NodeFailures: no heartbeat"),
    # Found by the property test: placement refused the node in every step.
    ({"state": "Ready", "capacity": '{"": -1}', "heartbeat": "9e99"},
     "unreadable node record"),
    ({"state": "Ready", "capacity": '{"cpu": -1000}', "heartbeat": "9e99"},
     "unreadable node record"),
    # A worker's grace is what a scheduler waits after a Redis restart: never endless.
    ({"state": "Ready", "capacity": '{"cpu": 1000}', "heartbeat": "9e99",
      "stops_within": "inf"}, "unreadable node record"),
    ({"state": "Ready", "capacity": '{"cpu": 1000}', "heartbeat": "9e99",
      "stops_within": "-1"}, "unreadable node record"),
])
def test_an_unreadable_node_record_is_a_lost_node_not_a_crash(
        fields: dict[str, str], want_reason: str) -> None:
    pool = SteppedPool()
    pool.store.redis.sadd(pool.store.keys.nodes, "n1")
    pool.store.redis.hset(pool.store.keys.node("n1"), mapping=fields)
    key = pool.submit("w")
    pool.run()
    [node] = pool.store.nodes.all()
    assert (node.name, node.ready) == ("n1", False)
    assert want_reason in node.reason
    assert pool.state(key) == "Admitted"
    assert (pool.scheduler.leading, pool.scheduler.failures) == (True, 0)


def test_a_live_workload_whose_state_is_deleted_is_quarantined_not_forgotten() -> None:
    """The leader does not re-read a known workload Redis holds Finished (it follows it
    as gone); a hash that lost its state is no such workload and is still read."""
    pool = SteppedPool()
    key = pool.submit("w")
    pool.run()
    assert pool.state(key) == "Admitted"
    pool.store.redis.hdel(pool.store.keys.workload(key), "state")
    pool.store.redis.xadd(pool.store.keys.events, {"kind": "touch", "key": key})
    pool.run()
    record = pool.store.workloads.get(key)
    assert (record.state, record.reason) == (State.INVALID, "Invalid")
    assert "unreadable workload record: KeyError: 'state'" in record.message
    assert pool.scheduler.leading


def test_a_workload_whose_state_is_deleted_is_quarantined_by_a_new_leader_too() -> None:
    """A leader that starts from Redis after the state was lost meets the hash as the
    running leader above does: as a workload that cannot be read, not as none at all."""
    pool = SteppedPool()
    key, other = pool.submit("w"), pool.submit("other")
    pool.run()
    pool.store.redis.hdel(pool.store.keys.workload(key), "state")
    pool.restart_scheduler()
    pool.run()
    record = pool.store.workloads.get(key)
    assert (record.state, record.reason) == (State.INVALID, "Invalid")
    assert "unreadable workload record: KeyError: 'state'" in record.message
    assert pool.state(other) == "Admitted"
    assert pool.scheduler.leading
