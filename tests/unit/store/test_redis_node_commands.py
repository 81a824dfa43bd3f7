"""``kuota node cordon|uncordon|drain|remove`` (issue 12, scope 4): an operator decides
what a node takes; a Lost node can be forgotten."""

from __future__ import annotations

import pytest
from store_builders import SteppedPool, node

from queueing.store import Conflict


def _placed_on(pool: SteppedPool, key: str) -> tuple[str, ...]:
    return pool.store.workloads.get(key).placement


@pytest.mark.parametrize(("cordoned", "want_node"), [(False, "a"), (True, "b")])
def test_a_cordoned_node_gets_no_new_pods(cordoned: bool, want_node: str) -> None:
    pool = SteppedPool()
    node(pool.store, "a", cpu=4)
    node(pool.store, "b", cpu=2)  # binpacking would prefer b: a is the one left alone
    pool.store.nodes.set_scheduling("b", cordoned=not cordoned)
    pool.store.nodes.set_scheduling("a", cordoned=cordoned)
    key = pool.submit("w", cpu=2)
    pool.run()
    assert _placed_on(pool, key) == (want_node,)


def _stop_pods(pool: SteppedPool, key: str) -> None:
    """What the node's worker does when asked to stop the pods of ``key``."""
    record = pool.store.workloads.get(key)
    for ref in record.pod_refs():
        pool.store.pods.exit(ref, node="a", pod_count=record.pods, exit_code=143, stopped=True,
                             message="stopped", pid=0, now=pool.now)


def test_draining_requeues_what_runs_there_and_uncordon_takes_it_back() -> None:
    pool = SteppedPool()
    node(pool.store, "a", cpu=4)
    key = pool.submit("w", cpu=2)
    pool.run()
    assert _placed_on(pool, key) == ("a",)
    pool.store.nodes.set_scheduling("a", cordoned=True, draining=True)
    pool.run(3, advance=6.0)  # the scheduler checks nodes every few seconds
    record = pool.store.workloads.get(key)
    assert record.state == "Evicting" and record.placement == ("a",), \
        "its quota held while its pod still runs on the drained node"
    _stop_pods(pool, key)
    pool.run(3)
    record = pool.store.workloads.get(key)
    assert record.state in ("Pending", "Admitted") and record.placement == (), \
        "requeued, and not placed on the cordoned node again"
    history = pool.store.workloads.history(key)
    assert any(h["event"] == "Evicted" and h["reason"] == "NodeDrained" for h in history)
    [a] = pool.store.nodes.all()
    assert (a.cordoned, a.draining) == (True, True)
    pool.store.nodes.set_scheduling("a", cordoned=False)
    pool.run(3, advance=6.0)
    assert _placed_on(pool, key) == ("a",)


def test_only_a_node_no_worker_serves_can_be_removed() -> None:
    pool = SteppedPool()
    epoch = node(pool.store, "a")
    with pytest.raises(Conflict, match=r"node a is Ready .*`kuota node drain a`"):
        pool.store.nodes.remove("a")
    pool.store.nodes.leave("a", epoch, reason="bye", now=1.0)
    pool.store.nodes.remove("a")
    assert pool.store.nodes.all() == []


@pytest.mark.parametrize(("lost_for", "want_status", "want_kept"), [
    (None, "state:Ready", True),   # its worker still serves it
    (5.0, "young", True),          # lost, but not long enough
    (20.0, "ok", False),           # lost longer than the scheduler keeps it
])
def test_a_node_lost_long_enough_ago_is_forgotten_by_the_scheduler(
        lost_for: float | None, want_status: str, want_kept: bool) -> None:
    """A pool whose workers come and go under new names (containers, spot machines) would
    list every name it ever had: the scheduler forgets a Lost node after
    ``--forget-lost-nodes``."""
    pool = SteppedPool(forget_lost_nodes=10.0)
    epoch = node(pool.store, "a")
    if lost_for is not None:
        pool.store.nodes.leave("a", epoch, reason="bye", now=pool.now)
    pool.run(1)
    assert pool.store.nodes.forget("nobody", "a", before=pool.now) == "fenced"
    pool.run(3, advance=(lost_for or 20.0) / 3)  # the scheduler checks nodes every few seconds
    assert ("a" in pool.store.nodes.names()) is want_kept
    holder = str(pool.store.redis.get(pool.store.keys.lease))
    if want_kept:
        assert pool.store.nodes.forget(holder, "a", before=pool.now - 10.0) == want_status
    else:
        assert pool.store.redis.exists(pool.store.keys.node("a"), pool.store.keys.node_pods("a")) \
            == 0
        assert node(pool.store, "a") == 1, "a worker coming back registers it anew"
