"""Nodes: epochs, heartbeats, and taking a node out (by its worker or by the scheduler)."""

from __future__ import annotations

from store_builders import lead, new_store, node, running_gang

from queueing.store import NodeState, PodPhase


def test_registering_again_bumps_the_epoch_and_loses_the_old_pods() -> None:
    store = new_store()
    _, refs = running_gang(store, pods=1)
    old = store.nodes.get("n0").epoch
    new = node(store, "n0")
    assert new == old + 1
    pod = store.pods.get(refs[0])
    assert pod is not None and pod.state is PodPhase.LOST
    assert store.nodes.pod_ids(["n0"]) == {"n0": set()}
    assert store.nodes.get("n0").state is NodeState.READY


def test_heartbeat_answers() -> None:
    store = new_store()
    epoch = node(store, "a")
    assert store.nodes.heartbeat("a", epoch) == "ok"
    assert store.nodes.heartbeat("a", epoch + 1) == "replaced"
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


def test_redis_time_moves() -> None:
    store = new_store()
    assert store.nodes.time() > 1_600_000_000
