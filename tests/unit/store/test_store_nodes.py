"""Nodes: epochs, heartbeats, and taking a node out (by its worker or by the scheduler)."""

from __future__ import annotations

import pytest
from store_builders import lead, new_store, node, running_gang

from queueing.store import NodeInUse, NodeState, PodPhase


def test_registering_again_bumps_the_epoch_and_loses_the_old_pods() -> None:
    store = new_store()
    _, refs = running_gang(store, pods=1)
    old = store.nodes.get("n0").epoch
    new = node(store, "n0", replace=True)
    assert new == old + 1
    pod = store.pods.get(refs[0])
    assert pod is not None and pod.state is PodPhase.LOST
    assert store.nodes.pod_ids(["n0"]) == {"n0": set()}
    assert store.nodes.get("n0").state is NodeState.READY


@pytest.mark.parametrize(("before", "replace", "want_refused"), [
    ("live", False, True),  # issue 12: a second worker silently took a live node's name
    ("live", True, False),
    ("silent", False, False),  # no heartbeat for 3 of its intervals: a crashed worker
    ("left", False, False),
    ("never", False, False),
])
def test_a_live_node_is_registered_again_only_to_replace_it(
        before: str, replace: bool, want_refused: bool) -> None:
    store = new_store()
    old = 0
    if before != "never":
        old = node(store, "a")
    if before == "silent":
        store.redis.hset(store.keys.node("a"), "heartbeat", store.nodes.time() - 16)
    elif before == "left":
        store.nodes.leave("a", old, reason="bye", now=2.0)
    if want_refused:
        with pytest.raises(NodeInUse, match=r"node a is served by a live worker .* --replace"):
            node(store, "a", replace=replace)
        assert store.nodes.get("a").epoch == old
        return
    assert node(store, "a", replace=replace) == old + 1
    if old:
        assert store.nodes.heartbeat("a", old) == "replaced", "the old worker is fenced"


def test_heartbeat_answers() -> None:
    store = new_store()
    node(store, "a")
    epoch = node(store, "a", replace=True)
    assert store.nodes.heartbeat("a", epoch) == "ok"
    assert store.nodes.heartbeat("a", epoch - 1) == "replaced"
    # A later epoch than the store's: Redis lost that registration (its last second rolled
    # back). Before, the worker took it for a replacement and stopped for good.
    assert store.nodes.heartbeat("a", epoch + 1) == "unregistered"
    assert store.nodes.heartbeat("b", 1) == "missing"
    store.nodes.leave("a", epoch, reason="bye", now=2.0)
    assert store.nodes.heartbeat("a", epoch) == "state:Lost"


def test_a_worker_leaving_marks_its_live_pods_lost() -> None:
    store = new_store()
    _, refs = running_gang(store, pods=1)
    epoch = store.nodes.get("n0").epoch
    assert store.nodes.leave("n0", epoch, reason="WorkerStopped", now=5.0) == "ok"
    pod = store.pods.get(refs[0])
    assert pod is not None and pod.state is PodPhase.LOST
    assert store.nodes.get("n0").reason == "WorkerStopped"


def test_the_scheduler_expires_only_silent_nodes_and_only_while_leading() -> None:
    store = new_store()
    holder = lead(store)
    node(store, "a")
    assert store.nodes.expire(holder, "a", timeout=60, now=1.0) == "alive"
    assert store.nodes.expire("someone|9", "a", timeout=0, now=1.0) == "fenced"
    assert store.nodes.expire(holder, "a", timeout=0, now=1.0) == "ok"
    lost = store.nodes.get("a")
    assert lost.state is NodeState.LOST and lost.reason.startswith("NodeFailures")
    assert store.nodes.expire(holder, "a", timeout=0, now=1.0) == "state:Lost"


def test_the_store_clock_is_redis_time_with_its_fraction_and_moves() -> None:
    store = new_store()
    first = store.nodes.time()
    seconds, micros = store.redis.time()
    # Redis's TIME, not this machine's (heartbeats from every machine are compared to it),
    # with the microseconds kept: node intervals are compared at sub-second precision.
    assert 0 <= int(seconds) + int(micros) / 1_000_000 - first < 1.0
    readings = {first}
    for _ in range(1000):  # (no sleep: polled until the clock has moved)
        readings.add(store.nodes.time())
        if len(readings) > 2:
            break
    assert len(readings) > 2 and min(readings) == first
    assert any(r != int(r) for r in readings)
