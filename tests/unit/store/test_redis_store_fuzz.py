"""Property: whatever is written into Redis, the scheduler keeps serving the valid workloads.

Random and malformed records go straight into the store — workload specs no client would
send, hashes with garbage fields, node records, event stream entries — between valid
submissions. After a few scheduling steps the valid workloads are admitted, nothing
malformed holds quota, usage stays within the quota, and no step failed for a reason the
scheduler could not pin on one workload (issue 12: one bad record stopped every scheduler).

The default run keeps the example count small; ``-m slow`` runs 10,000 examples.
"""

from __future__ import annotations

import json
from typing import Any

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


@settings(max_examples=60, **_SETTINGS)
@given(_writes())
def test_the_scheduler_serves_valid_workloads_whatever_else_is_stored(
        writes: list[tuple[str, Any]]) -> None:
    _serves_the_valid_ones(writes)


@pytest.mark.slow
@pytest.mark.timeout(7200)  # 10,000 schedulers built and stepped: about half an hour
@settings(max_examples=10_000, **_SETTINGS)
@given(_writes())
def test_the_scheduler_survives_ten_thousand_random_stores(
        writes: list[tuple[str, Any]]) -> None:
    _serves_the_valid_ones(writes)
