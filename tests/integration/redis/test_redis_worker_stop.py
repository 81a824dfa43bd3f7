"""A worker stopped cleanly (SIGTERM, `kuota worker` shutting down) stops its pods and
takes its node out: the workloads it ran are requeued at once and run elsewhere."""

from __future__ import annotations

import dataclasses
import time

from harness import CQ, TIMING, local_cluster, node, queues, wait_for


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
