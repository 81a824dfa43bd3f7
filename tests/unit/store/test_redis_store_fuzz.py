"""Property: whatever is written into Redis, the scheduler keeps serving the valid workloads.

Random and malformed records go straight into the store — workload specs no client would
send, hashes with garbage fields, node records, event stream entries — between valid
submissions. After a few scheduling steps the valid workloads are admitted, nothing
malformed holds quota, usage stays within the quota, and no step failed for a reason the
scheduler could not pin on one workload (issue 12: one bad record stopped every scheduler).

The second property writes raw records to every key the store owns while a scheduler, a
worker and the dashboard run (issue 42): the jobs finish, no thread dies, and every bad
record is named (below).

The default runs keep the example counts small; ``-m slow`` runs 10,000 examples of each.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_builders import SteppedPool, workload_spec

from kuota.service import rebuild
from quota.lifecycle import HOLDS_QUOTA, State

_TEXT = st.text(max_size=12)
_NUMBERS = st.one_of(st.integers(-5, 20), st.integers(), st.floats(allow_nan=True,
                                                                   allow_infinity=True))
_QUANTITIES = st.one_of(
    _NUMBERS, _TEXT,
    st.sampled_from(["1", "500m", "1e5000", "1e999999999", "Infinity", "NaN", "-1", "1Ei",
                     "9223372036854776", "0x10", ""]))
_JSON = st.recursive(st.none() | st.booleans() | _NUMBERS | _TEXT,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=8)
_ENV = st.lists(st.fixed_dictionaries({"name": st.one_of(_TEXT, st.sampled_from(
    ["A=B", "", "OK", "\0"])), "value": st.one_of(_TEXT, st.none())}), max_size=2)
_COMMANDS = st.one_of(st.lists(_TEXT, max_size=3), _JSON)


@st.composite
def _near_valid_spec(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A Workload that is mostly right, with a few fields drawn from anything."""
    spec = workload_spec(name, count=draw(st.one_of(st.integers(-2, 3), _NUMBERS, _JSON)),
                         cpu=draw(_QUANTITIES), command=draw(_COMMANDS),
                         env=draw(st.one_of(st.none(), _ENV)))
    if draw(st.booleans()):
        spec["spec"][draw(st.sampled_from(["podSets", "queueName", "priority"]))] = draw(_JSON)
    return spec


_FIELDS = ["state", "attempt", "admission", "placement", "queued_at", "priority", "pods",
           "spec", "outcome", "backoff_limit", "cq"]


@st.composite
def _writes(draw: st.DrawFn) -> list[tuple[str, Any]]:
    kinds = st.sampled_from(["spec", "any-spec", "field", "node", "event"])
    return [(kind, _payload(draw, kind, i))
            for i, kind in enumerate(draw(st.lists(kinds, min_size=1, max_size=4)))]


def _payload(draw: st.DrawFn, kind: str, i: int) -> Any:
    name = f"raw-{i}"
    if kind == "spec":
        return draw(_near_valid_spec(name))
    if kind == "any-spec":
        return draw(st.dictionaries(_TEXT, _JSON, max_size=4))
    if kind == "field":
        return draw(_near_valid_spec(name)), draw(st.sampled_from(_FIELDS)), draw(
            st.one_of(_TEXT, _JSON.map(json.dumps)))
    if kind == "node":
        return {field: draw(st.one_of(_TEXT, _JSON.map(json.dumps), st.just("Ready")))
                for field in ("state", "pool", "capacity", "labels", "epoch", "heartbeat",
                              "devices")}
    return {"kind": draw(st.sampled_from(["workload", "pod", "node", "junk"])),
            "key": draw(st.one_of(_TEXT, st.just(f"default/raw-{i}"))), "pod": draw(_TEXT),
            "node": draw(_TEXT)}


def _write(pool: SteppedPool, i: int, kind: str, payload: Any) -> None:
    r, keys = pool.store.redis, pool.store.keys
    if kind in ("spec", "any-spec"):
        pool.write_raw(f"raw-{i}", payload)
    elif kind == "field":
        spec, field, value = payload
        key = pool.write_raw(f"raw-{i}", spec)
        r.hset(keys.workload(key), field, value)
    elif kind == "node":
        r.sadd(keys.nodes, f"node-{i}")
        r.hset(keys.node(f"node-{i}"), mapping=payload)
    else:
        r.xadd(keys.events, payload)


def _serves_the_valid_ones(writes: list[tuple[str, Any]]) -> None:
    pool = SteppedPool()
    first = pool.submit("valid-first")
    for i, (kind, payload) in enumerate(writes):
        _write(pool, i, kind, payload)
    last = pool.submit("valid-last")
    pool.run(6)
    assert pool.scheduler.failures == 0, "a step failed without naming a workload"
    assert pool.scheduler.leading
    _within_quota_and_only_valid(pool)
    # Raw workloads that happen to be valid compete for the quota like any other (stored
    # with an early queue time, they are even first in line): once they are gone, the
    # valid submissions get in.
    for record in pool.store.workloads.all():
        if record.key.startswith("default/raw-") and record.state is not State.INVALID:
            pool.client.cancel(record.key)
    pool.run(4, advance=1.0)
    assert (pool.state(first), pool.state(last)) == ("Admitted", "Admitted")
    assert pool.scheduler.failures == 0


def _within_quota_and_only_valid(pool: SteppedPool) -> None:
    used = 0
    for record in pool.store.workloads.all():
        if record.state in HOLDS_QUOTA:
            checked = rebuild.checked_info(record)
            assert not isinstance(checked, str), f"malformed {record.key} holds quota: {checked}"
            assert record.admission is not None
            used += sum(ps.usage.get("cpu", 0) for ps in record.admission.pod_sets)
        elif record.key.startswith("default/raw-"):
            assert record.state in (State.PENDING, State.INVALID), record
    assert used <= 4000, "usage within the ClusterQueue's quota"


_SETTINGS: dict[str, Any] = {"deadline": None, "derandomize": False,
                             "suppress_health_check": [HealthCheck.too_slow,
                                                       HealthCheck.data_too_large]}

#: Examples of the slow-marked runs: 10,000 as the issue asks (half an hour and an hour and
#: a half); CI runs fewer of each (KUOTA_FUZZ_EXAMPLES, `make test-slow`) to stay in its time.
SLOW_EXAMPLES: Final = int(os.environ.get("KUOTA_FUZZ_EXAMPLES") or 10_000)



@settings(max_examples=60, **_SETTINGS)
@given(_writes())
def test_the_scheduler_serves_valid_workloads_whatever_else_is_stored(
        writes: list[tuple[str, Any]]) -> None:
    _serves_the_valid_ones(writes)


@pytest.mark.slow
@pytest.mark.timeout(7200)  # 10,000 schedulers built and stepped: about half an hour
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(_writes())
def test_the_scheduler_survives_ten_thousand_random_stores(
        writes: list[tuple[str, Any]]) -> None:
    _serves_the_valid_ones(writes)


# -- raw records at every key the store owns, while a scheduler, a worker and the dashboard
# run (issue 42, scope 3) ---------------------------------------------------------------------
#
# Each example writes raw records into the store of a running pool (one scheduler and one
# worker as threads, on the embedded store) and then runs jobs through it, reading the
# dashboard and `kuota status` meanwhile. A key the store owns is replaced by any Redis
# type holding garbage; the keys the pool runs on (its ClusterQueue, LocalQueue and flavor,
# the node set, the workload indexes) get garbage beside what they hold, of their own type:
# replaced, what they held would be gone. Required: the jobs finish, nothing is left
# unfinished, no thread died, the dashboard answers, and every bad record is named — in the
# quarantine hash or by `kuota status`.

#: Keys (after the prefix) replaced by any type, and the type the store keeps there.
_REPLACED: Final = {
    "objects:Cohort": "hash", "objects:Topology": "hash", "objects:AdmissionCheck": "hash",
    "objects:WorkloadPriorityClass": "hash", "objects:MultiClusterConfig": "hash",
    "objects:MemberCluster": "hash", "namespaces": "hash", "config:generation": "string",
    "workloads-finished": "zset", "events": "stream", "scheduler:lease": "string",
    "scheduler:fence": "string", "schedulers": "hash", "quarantine": "hash",
    "node:n1": "hash", "node:n1:pods": "set", "requests:default": "stream",
    "answers:default": "zset", "purged:default": "zset", "workloads:default": "zset"}
#: Keys given a garbage field or member beside what they hold.
_BESIDE: Final = ("objects:ClusterQueue", "objects:LocalQueue", "objects:ResourceFlavor",
                  "namespaces", "node:n1:pods")
#: Of those, the ones whose garbage must be named (the others' readers tolerate garbage:
#: presence records, events, answers).
_PARSED: Final = ("objects:", "namespaces", "node:n1:pods", "config:generation",
                  "scheduler:fence", "scheduler:lease")
_TYPES = st.sampled_from(["string", "hash", "list", "set", "zset", "stream"])
#: Garbage: never a JSON object, a pod id, a node name or a whole number.
_GARBAGE = st.text(min_size=0, max_size=8).map(lambda text: "~" + text)


@st.composite
def _raw_records(draw: st.DrawFn) -> list[tuple[str, str, list[str]]]:
    """(key after the prefix, Redis type, values) to write, in order."""
    writes = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            key = draw(st.sampled_from(sorted(_REPLACED)))
            kind = draw(st.one_of(_TYPES, st.just(_REPLACED[key])))
        else:
            key = draw(st.sampled_from(_BESIDE))
            kind = "set" if key == "node:n1:pods" else "hash"
        writes.append((key, kind, draw(st.lists(_GARBAGE, min_size=2, max_size=4))))
    return writes


def _write_raw(r: Any, key: str, kind: str, values: list[str], *, replace: bool) -> None:
    if replace or r.type(key) not in ("none", kind):
        r.delete(key)
    pairs = dict(zip(values[::2], values[1::2], strict=False)) or {values[0]: values[0]}
    if kind == "string":
        r.set(key, values[0])
    elif kind == "hash":
        r.hset(key, mapping=pairs)
    elif kind == "list":
        r.rpush(key, *values)
    elif kind == "set":
        r.sadd(key, *values)
    elif kind == "zset":
        r.zadd(key, {v: i for i, v in enumerate(values)})
    else:
        r.xadd(key, pairs)


def _named(key: str, names: Mapping[str, str]) -> bool:
    return any(name == key or name.startswith(f"{key} ") for name in names)


def _runs_on_whatever_is_stored(writes: list[tuple[str, str, list[str]]]) -> None:
    from kuota.commands import status
    from kuota.dashboard.redis_source import RedisSource
    from tests.integration.redis.harness import CQ, local_cluster, node, queues

    worker_options = node("pool", "n1", "cpu=4")
    worker_options = dataclasses.replace(worker_options, supervisor=dataclasses.replace(
        worker_options.supervisor, reconcile=0.2))
    prefix = f"f{uuid.uuid4().hex[:8]}"  # (the embedded server is the process's)
    with local_cluster("embedded", prefix, [worker_options]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 4})))
        first = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1})
        assert first.wait(30).succeeded
        r, prefix = client.store.redis, f"{prefix}:"
        for key, kind, values in writes:
            _write_raw(r, prefix + key, kind, values, replace=key in _REPLACED
                       and not (key in _BESIDE and kind == _REPLACED[key]))
        runs = [_submit_through_faults(client) for _ in range(2)]
        outcomes = [run.wait(45).outcome for run in runs]
        pages = _dashboard_pages(RedisSource(cluster.connection), runs[0].key)
        worker, _, worker_thread = cluster.workers["n1"]
        threads = (worker_thread.is_alive(), worker.supervisor.alive, worker.fault,
                   [t.is_alive() for t in cluster._threads])
        report = status.collect(client.store)
        stuck = client.store.workloads.unfinished(spec=False)
    assert outcomes == ["Succeeded", "Succeeded"], (writes, report["quarantined"])
    assert not stuck, stuck
    assert threads == (True, True, "", [True]), "no thread died"
    assert pages == [200, 200], "the dashboard answers"
    for key, kind in {key: kind for key, kind, _ in writes}.items():  # (the last of each)
        must = key.startswith(_PARSED) or (key in _REPLACED and kind != _REPLACED[key])
        if must and not _named(prefix + key, report["quarantined"]):
            pytest.fail(f"{prefix}{key} ({kind}) is not named: {report['quarantined']}")


def _dashboard_pages(source: Any, key: str) -> list[int]:
    """The dashboard's answers to its overview and to the workload's page."""
    import asyncio

    from aiohttp.test_utils import TestClient, TestServer

    from kuota.dashboard.server import Dashboard, application

    async def read() -> list[int]:
        dashboard = Dashboard(source, interval=0.05)
        async with TestClient(TestServer(application(dashboard))) as http:
            await dashboard.refresh()
            return [(await http.get(path)).status for path in ("/", f"/workloads/{key}")]

    return asyncio.run(read())


def _submit_through_faults(client: Any) -> Any:
    """Submit once the scheduler has set aside what a submission writes to (the events
    stream, the namespace's index): until then Redis refuses it (WRONGTYPE)."""
    import redis

    deadline = time.monotonic() + 20
    while True:
        try:
            return client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1})
        except redis.ResponseError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@settings(max_examples=4, **_SETTINGS)
@given(_raw_records())
def test_a_running_pool_serves_its_jobs_whatever_is_stored_and_names_it(
        writes: list[tuple[str, str, list[str]]]) -> None:
    _runs_on_whatever_is_stored(writes)


@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)  # 10,000 pools started and run: about an hour and a half
@settings(max_examples=SLOW_EXAMPLES, **_SETTINGS)
@given(_raw_records())
def test_a_running_pool_survives_ten_thousand_random_stores(
        writes: list[tuple[str, str, list[str]]]) -> None:
    _runs_on_whatever_is_stored(writes)
