"""The store and the workers agree (issue 12, scope 2): each worker compares, every
``--reconcile`` seconds, the pods the store says it runs with the processes it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from harness import CQ, Processes, queues, wait_for

from kuota.client import Client
from kuota.service.connection import connect

pytestmark = pytest.mark.redis


def test_a_pod_exit_the_store_lost_is_reported_again_by_its_worker(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    """Redis with appendfsync everysec can lose its last second of writes. Here the pod's
    exit is "lost" by putting back the keys it changed as they were while the pod ran,
    and the scheduler restarts as it would after Redis did. Before, the workload stayed
    Running for good, holding the queue's only cpu; now the worker sees the store calls a
    pod Running that it does not run and reports the exit again, with its exit code."""
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 1})))
    raw = redis.Redis.from_url(redis_server_url)
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    try:
        procs.scheduler("s1")
        procs.worker("default", "n1", "cpu=1", "--reconcile", "0.5")
        first = client.submit(["sleep", "1"], queue="default/lq-cq", name="first",
                              requests={"cpu": 1})
        wait_for("the first pod to run",
                 lambda: (p := first.status().pods) and p[0].phase == "Running")
        record = first.record()
        # (the indexes the exit moved the workload between too: Redis loses every write of
        # its last second, and a rebuild reads the unfinished index)
        keys = [client.store.keys.workload(record.key), client.store.keys.history(record.key),
                client.store.keys.node_pods("n1"), client.store.keys.unfinished,
                client.store.keys.finished,
                *(client.store.keys.pod(ref) for ref in record.pod_refs())]
        while_running = {key: raw.dump(key) for key in keys}
        assert first.wait(timeout=20).succeeded
        procs.kill("s1")
        for key, value in while_running.items():
            if value is None:  # (not there yet while the pod ran)
                raw.delete(key)
            else:
                raw.restore(key, 0, value, replace=True)
        assert first.status().pods[0].phase == "Running"  # as if the exit was never written
        procs.scheduler("s2")
        second = client.submit(["true"], queue="default/lq-cq", name="second",
                               requests={"cpu": 1})
        assert second.wait(timeout=20).succeeded, procs.log("s2") + procs.log("n1")
        status = first.status()
        assert status.succeeded, status
        assert "reporting it again" in procs.log("n1")
    finally:
        procs.stop_all()
