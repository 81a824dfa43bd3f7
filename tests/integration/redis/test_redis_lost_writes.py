"""A Redis that loses its last second of writes (``appendfsync everysec`` and a machine crash)
rolls the store back behind what workers really did (issue 12, scope 2). Each test rolls one
kind of write back by hand, as such a crash would, and checks the pool recovers on its own;
the chaos test (test_redis_chaos.py) meets them at random. A lost *exit* is
test_redis_reconcile.py's."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from harness import CQ, local_cluster, node, queues, wait_for

from kuota.client import Client, WorkloadHandle
from kuota.service.embedded import LocalCluster
from kuota.service.supervisor import SupervisorTiming
from queueing.store import NodeState

pytestmark = pytest.mark.redis


def marking_job(client: Client, marks: Path, seconds: float) -> WorkloadHandle:
    """A one-pod job that appends a line to ``marks`` each time a process of it starts."""
    return client.submit(["sh", "-c", f'echo "$KUOTA_ATTEMPT" >> {marks}; sleep {seconds}'],
                         queue="default/lq-cq", name="job", requests={"cpu": 1})


def lose_the_start(client: Client, run: WorkloadHandle) -> None:
    """Once the pod runs, put its record back as it was before its start was written."""
    wait_for("the pod to run", lambda: (p := run.status().pods) and p[0].phase == "Running")
    ref = run.record().pod_refs()[0]
    client.store.redis.hset(client.store.keys.pod(ref), "state", "Placed")
    client.store.redis.hdel(client.store.keys.pod(ref), "started_at")


def leader_index(cluster: LocalCluster) -> int:
    return wait_for("a leader", lambda: next(
        (str(i) for i, s in enumerate(cluster.schedulers) if s.leading), None), timeout=10)


def test_a_running_pod_whose_start_the_store_lost_runs_on_and_finishes(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    """Before, the worker's stop check killed the process (the store said Placed, not
    Running) and the workload stayed Admitted for good, holding its quota, with a Stopped
    pod nobody replaced. Now the worker records the start again and the pod runs on."""
    marks = tmp_path / "marks"
    with local_cluster(redis_server_url, redis_prefix, [node("p", "n1", "cpu=1")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        run = marking_job(client, marks, 1.5)
        lose_the_start(client, run)
        status = run.wait(timeout=30)
    assert status.succeeded, status
    assert marks.read_text().split() == ["1"], "ran once"


def test_a_start_sent_again_for_a_pod_that_runs_starts_no_second_process(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    """A new leader sends again the pods the store calls Placed. Before, the worker started
    a second process for a pod whose start the store had lost while the first still ran.
    (The stop check is slowed down here so the start job arrives first.)"""
    marks = tmp_path / "marks"
    slow_checks = dataclasses.replace(node("p", "n1", "cpu=1"),
                                      supervisor=SupervisorTiming(grace=1.0, stop_check=60))
    with local_cluster(redis_server_url, redis_prefix, [slow_checks], schedulers=2) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        run = marking_job(client, marks, 2.0)
        lose_the_start(client, run)
        cluster.stop_scheduler(int(leader_index(cluster)))  # the standby leads and re-sends
        status = run.wait(timeout=30)
    assert status.succeeded, status
    assert marks.read_text().split() == ["1"], "ran once"


def test_a_pod_whose_start_and_exit_the_store_lost_is_not_run_again(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    """The store goes back to before the pod started, after it ran to its end: a new leader
    sends it again. Before, the worker ran it a second time; now it records the start again
    and reports the exit it remembers."""
    marks = tmp_path / "marks"
    with local_cluster(redis_server_url, redis_prefix, [node("p", "n1", "cpu=1")],
                       schedulers=2) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        run = client.submit(["sh", "-c", f'echo "$KUOTA_ATTEMPT" >> {marks}; sleep 0.5; exit 3'],
                            queue="default/lq-cq", name="job", requests={"cpu": 1})
        wait_for("the pod to run", lambda: (p := run.status().pods) and p[0].phase == "Running")
        ref = run.record().pod_refs()[0]
        # The event stream goes back with them: the standby's copy, which has followed the
        # stream past the pod's end, sees that Redis lost writes and loads the store again.
        # So do the indexes the end moved the workload between, as a Redis that loses its
        # last second loses every write of it: a rebuild reads the unfinished index.
        keys = [client.store.keys.workload(run.key), client.store.keys.history(run.key),
                client.store.keys.node_pods("n1"), client.store.keys.pod(ref),
                client.store.keys.events, client.store.keys.unfinished,
                client.store.keys.finished]
        while_running = {key: client.store.redis.dump(key) for key in keys}
        assert run.wait(timeout=30).outcome == "Failed"
        leader = int(leader_index(cluster))
        with client.store.redis.pipeline(transaction=True) as lost:
            for key, value in while_running.items():
                if value is None:  # (not there yet while the pod ran)
                    lost.delete(key)
                else:
                    lost.restore(key, 0, value, replace=True)
            lost.hset(client.store.keys.pod(ref), "state", "Placed")
            lost.execute()
        cluster.stop_scheduler(leader)  # the standby rebuilds from this store and re-sends
        status = run.wait(timeout=30)
    assert (status.outcome, [p.exit_code for p in status.pods]) == ("Failed", [3]), status
    assert marks.read_text().split() == ["1"], "ran once"


def test_a_worker_whose_registration_the_store_lost_registers_again(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    """The node's record goes back to the previous incarnation's. Before, the worker's
    heartbeat took the older epoch for a replacement by another worker: it stopped taking
    jobs and exited for good. Now it registers again and runs what it is sent — the pods
    of the incarnation the store lost are stopped, never one it starts afterwards."""
    with local_cluster(redis_server_url, redis_prefix) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        cluster.add_node(node("p", "n1", "cpu=1"))
        first = client.store.nodes.get("n1").epoch
        before = client.store.redis.dump(client.store.keys.node("n1"))
        cluster.stop_node("n1")
        worker = cluster.add_node(node("p", "n1", "cpu=1"))
        assert worker.epoch > first
        client.store.redis.restore(client.store.keys.node("n1"), 0, before, replace=True)
        wait_for("n1 to register again", lambda: (
            (n := client.store.nodes.get("n1")).state is NodeState.READY
            and n.epoch == worker.epoch > first and n.heartbeat > time.time() - 1), timeout=10)
        status = marking_job(client, tmp_path / "marks", 0.1).wait(timeout=30)
        assert not worker.replaced and not worker.stopped.is_set()
    assert status.succeeded, status


def test_a_pod_whose_start_was_stored_but_its_answer_lost_runs_once(
        redis_server_url: str, redis_prefix: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection drops after Redis stored a pod's start and before its answer came
    (a Redis killed at that moment keeps the write under ``appendfsync always``). Before,
    the worker launched nothing while the store called the pod Running, and its next
    comparison with the store reported the pod's exit as lost: the workload Failed."""
    from queueing.store.pods import PodStore

    start = PodStore.start
    lost: list[str] = []

    def start_and_lose_the_answer(self: PodStore, ref: Any, **kwargs: Any) -> str:
        status = start(self, ref, **kwargs)
        if not lost:
            lost.append(status)
            raise redis.ConnectionError("connection dropped before the answer")
        return status

    monkeypatch.setattr(PodStore, "start", start_and_lose_the_answer)
    marks = tmp_path / "marks"
    fast = dataclasses.replace(node("p", "n1", "cpu=1"),
                               supervisor=SupervisorTiming(grace=1.0, stop_check=0.1,
                                                           reconcile=0.2))
    with local_cluster(redis_server_url, redis_prefix, [fast]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        run = marking_job(client, marks, 1.0)
        status = run.wait(timeout=30)
    assert lost == ["ok"]  # the start was stored, its answer lost
    assert status.succeeded, (status, run.history())
    assert marks.read_text().split() == ["1"], "ran once"
