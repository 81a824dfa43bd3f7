"""No bad record and no dead thread wedges a node in silence (issue 42, finding 2).

A malformed member of a node's pods set (``P:node:<name>:pods``) killed the worker's pod
thread at its next comparison with the store; its pods died with it (their parent-death
signal) while the node heartbeated on as Ready, its workloads Running and holding their
quota. Now the member is taken out of the set and named in the quarantine hash, and the
pods and the node go on.

And whatever else makes a worker thread die, the worker notices: it takes its node out
with the error as the node's reason (its workloads are requeued at once) and stops.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harness import CQ, alive, local_cluster, node, queues, wait_for

from kuota.service.supervisor import PodSupervisor
from kuota.service.worker import WorkerOptions
from queueing.store import NodeState
from queueing.store.nodes import NodeStore

pytestmark = pytest.mark.redis


def _fast(options: WorkerOptions) -> WorkerOptions:
    """Compare with the store every 0.2 s (the reconcile is where a bad member was met)."""
    return dataclasses.replace(options, supervisor=dataclasses.replace(
        options.supervisor, reconcile=0.2))


def _long_pod(client: Any, tmp_path: Path, name: str) -> tuple[Any, Path]:
    pid_file = tmp_path / f"{name}.pid"
    run = client.submit(["sh", "-c", f"echo $$ > {pid_file}; exec sleep 60"],
                        queue="default/lq-cq", requests={"cpu": 1}, name=name)
    wait_for(f"{name} to run", lambda: pid_file.exists() and pid_file.read_text().strip(),
             timeout=30)
    return run, pid_file


@pytest.mark.parametrize(("member", "want_reason"), [
    ("garbage", "node n1: 'garbage' is not a pod id"),
    ("default/x:one:0", "node n1: 'default/x:one:0' is not a pod id"),
    ("default/x:1:\u00b2", "node n1: 'default/x:1:\u00b2' is not a pod id"),
    ("no-namespace:1:0", "node n1: 'no-namespace:1:0' is not a pod id"),
])
def test_a_malformed_pods_set_member_is_quarantined_and_the_pods_run_on(
        redis_server_url: str, redis_prefix: str, tmp_path: Path, member: str,
        want_reason: str) -> None:
    with local_cluster(redis_server_url, redis_prefix,
                       [_fast(node("pool", "n1", "cpu=4"))]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 4})))
        store = client.store
        running, pid_file = _long_pod(client, tmp_path, "long")
        store.redis.sadd(store.keys.node_pods("n1"), member)
        named = f"{store.keys.node_pods('n1')} {member}"
        quarantined = wait_for("the member to be quarantined",
                               lambda: store.quarantine.all().get(named), timeout=10)
        after = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1},
                              name="after").wait(30)
        worker, _, _ = cluster.workers["n1"]
        pod_thread_alive = worker.supervisor.alive
        long_alive = alive(int(pid_file.read_text()))
        node_record = store.nodes.get("n1")
        members = store.redis.smembers(store.keys.node_pods("n1"))
        running.cancel()
    assert quarantined == f"{want_reason} (namespace/name:attempt:index): removed from the set"
    assert member not in members
    assert after.succeeded, "the other pods go on"
    assert (pod_thread_alive, long_alive) == (True, True), "no pod was killed"
    assert node_record.state is NodeState.READY


@dataclass(frozen=True)
class ThreadFault:
    name: str
    #: Makes one of the worker's threads raise, from the test's monkeypatch.
    break_it: Callable[[pytest.MonkeyPatch], None]
    want_reason: str


def _break_the_pod_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    check = PodSupervisor._check_stops

    def broken(self: PodSupervisor, now: float) -> None:
        if self._running:
            raise RuntimeError("boom in the pod thread")
        check(self, now)

    monkeypatch.setattr(PodSupervisor, "_check_stops", broken)


def _break_the_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    beat = NodeStore.heartbeat
    beats = [0]

    def broken(self: NodeStore, name: str, epoch: int) -> str:
        beats[0] += 1
        if beats[0] > 3:
            raise RuntimeError("boom in the heartbeat")
        return beat(self, name, epoch)

    monkeypatch.setattr(NodeStore, "heartbeat", broken)


FAULTS = [
    ThreadFault("pod thread", _break_the_pod_thread,
                "WorkerFault: the pod thread of node n1 died: RuntimeError: boom in the pod "
                "thread"),
    ThreadFault("heartbeat thread", _break_the_heartbeat,
                "WorkerFault: the heartbeat-n1 thread died: RuntimeError: boom in the "
                "heartbeat"),
]


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_a_worker_thread_that_dies_takes_its_node_out_with_the_reason(
        redis_server_url: str, redis_prefix: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, fault: ThreadFault) -> None:
    fault.break_it(monkeypatch)
    with local_cluster(redis_server_url, redis_prefix,
                       [node("pool", "n1", "cpu=4")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 4})))
        run = client.submit(["sleep", "60"], queue="default/lq-cq", requests={"cpu": 1},
                            name="victim")
        store = client.store
        lost = wait_for("the node to be taken out",
                        lambda: (n := store.nodes.get("n1")).state is NodeState.LOST and n,
                        timeout=30)
        worker, _, thread = cluster.workers["n1"]
        thread.join(15)
        requeued = wait_for("the workload to be requeued", lambda: any(
            h["event"] == "Evicted" for h in run.history()), timeout=15)
        started = time.monotonic()
    assert lost.reason == fault.want_reason
    assert worker.fault == fault.want_reason.removeprefix("WorkerFault: ")
    assert not thread.is_alive(), "the worker stopped"
    assert requeued and time.monotonic() - started < 30
