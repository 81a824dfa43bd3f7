"""A worker stopped cleanly (SIGTERM, `kuota worker` shutting down) stops its pods and
takes its node out: the workloads it ran are requeued at once and run elsewhere."""

from __future__ import annotations

import dataclasses
import threading
import time

from harness import CQ, TIMING, local_cluster, node, queues, wait_for

from kuota.service.connection import connect
from kuota.service.worker import PoolWorker
from queueing.store import NodeState


def test_a_cleanly_stopped_worker_requeues_its_workloads_at_once(
        redis_server_url: str, redis_prefix: str) -> None:
    # A node timeout far longer than the test: only the worker's own leave can requeue.
    timing = dataclasses.replace(TIMING, node_timeout=60.0)
    with local_cluster(redis_server_url, redis_prefix,
                       [node("pool", "n1", "cpu=2"), node("pool", "n2", "cpu=2")],
                       timing=timing) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 4})))
        handle = client.submit(["sleep", "30"], queue="default/lq-cq", requests={"cpu": 2},
                               name="long")
        first = wait_for("the pod to run", lambda: (s := handle.status()).pods
                         and s.pods[0].phase == "Running" and s.pods[0].node)
        stopped_at = time.monotonic()
        cluster.stop_node(first)
        other = "n2" if first == "n1" else "n1"
        wait_for("the workload to run on the other node", lambda: (s := handle.status()).pods
                 and s.pods[0].node == other and s.pods[0].phase == "Running", timeout=20)
        # At once: long before the node timeout would have noticed a silent node.
        assert time.monotonic() - stopped_at < 20
        history = client.store.workloads.history(handle.key)
        assert any(h.get("event") == "Evicted" for h in history), history
        handle.cancel()


def test_a_worker_shutting_down_never_registers_its_node_again(
        redis_server_url: str, redis_prefix: str) -> None:
    """A heartbeat landing between the worker's clean leave and the end of its heartbeats
    found the node Lost and registered it again: a Ready node no worker served, sent pods
    until the node timeout. (Found by a test stopping and restarting a worker.)"""
    conn = connect(redis_server_url, prefix=redis_prefix)
    worker = PoolWorker(conn, node("pool", "n1", "cpu=1"))
    epoch = worker.register()
    conn.store.nodes.leave("n1", epoch, reason="WorkerStopped", now=time.time())
    stopping, heartbeats_done = threading.Event(), threading.Event()
    stopping.set()  # as in run()'s shutdown, before the node is taken out
    beats = threading.Thread(target=worker._heartbeats, args=(heartbeats_done, stopping),
                             daemon=True)
    beats.start()
    beats.join(5)  # the first heartbeat finds the node out and ends them
    alive = beats.is_alive()
    heartbeats_done.set()
    assert not alive, "heartbeats went on"
    record = conn.store.nodes.get("n1")
    assert (record.state, record.epoch) == (NodeState.LOST, epoch)
