"""Redis mode under failure: killed schedulers and workers, a restarted Redis, bad input.

Schedulers and workers run as real ``kuota`` processes here so they can be
killed with SIGKILL. Every pod appends a line to a file named after its
workload, so "ran exactly once" is checked on what really ran.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis
from harness import (
    CQ,
    Processes,
    alive,
    events,
    local_cluster,
    node,
    queues,
    wait_for,
)

from kuota.client import Client
from kuota.service.connection import connect
from kuota.service.worker import PoolWorker
from queueing.store import Outcome
from quota import api

pytestmark = pytest.mark.redis


def counting_command(runs: Path, seconds: float = 0.05) -> list[str]:
    """Append one line per run to runs/<workload name>, then sleep a little."""
    return ["sh", "-c", 'echo "$KUOTA_ATTEMPT" >> "$1/${KUOTA_WORKLOAD#default/}"; sleep "$2"',
            "sh", str(runs), str(seconds)]


def finished(client: Client, keys: list[str]) -> int:
    records = client.store.workloads.get_many(keys)
    return sum(1 for r in records.values() if r.state == "Finished")


def leader_identity(client: Client) -> str | None:
    value = client.store.redis.get(client.store.keys.lease)
    return value.rpartition("|")[0] if value else None


def assert_each_ran_once(client: Client, keys: list[str], runs: Path) -> None:
    records = client.store.workloads.get_many(keys)
    # (what each other workload went through, should one not succeed: its reason, message,
    # history and pods' logs)
    others: dict[str, object] = {key: (r.outcome, r.reason, r.message, events(client, key),
                                       [client.store.pods.logs(ref) for ref in r.pod_refs()])
                                 for key, r in records.items() if r.outcome != "Succeeded"}
    if others:  # and the last lines of the schedulers' and workers' logs
        others["logs"] = {log.name: log.read_text().splitlines()[-40:]
                          for log in sorted(runs.parent.glob("*.log"))}
    assert {r.outcome for r in records.values()} == {"Succeeded"}, others
    for key in keys:
        history = events(client, key)
        assert history.count("Finished") == 1, (key, history)
        lines = (runs / key.split("/")[1]).read_text().split()
        assert len(lines) == 1, f"{key} ran {len(lines)} times: {history}"


def test_a_standby_takes_over_when_the_active_scheduler_is_killed(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 12})))
    runs = tmp_path / "runs"
    runs.mkdir()
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    try:
        procs.scheduler("s1")
        procs.scheduler("s2")
        procs.worker("pool", "w1", "cpu=6")
        procs.worker("pool", "w2", "cpu=6")
        first = wait_for("a leader", lambda: leader_identity(client), timeout=30)
        keys = [client.submit(counting_command(runs), queue="default/lq-cq",
                              requests={"cpu": 1}, name=f"job-{i:03d}").key
                for i in range(200)]
        wait_for("some workloads to finish", lambda: finished(client, keys) >= 40, timeout=60)
        procs.kill(first)
        second = wait_for("the standby to lead",
                          lambda: (who := leader_identity(client)) not in (None, first) and who,
                          timeout=15)
        wait_for("every workload to finish", lambda: finished(client, keys) == 200, timeout=90)
    finally:
        procs.stop_all()
    assert {first, second} == {"s1", "s2"}
    assert_each_ran_once(client, keys, runs)
    for key in keys:
        assert events(client, key).count("Admitted") == 1, key


def test_a_workload_on_a_killed_worker_is_requeued_and_finishes_elsewhere(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 4})))
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    try:
        procs.scheduler("s1")
        procs.worker("pool", "wa", "cpu=4")
        # Long enough on wa to be killed there, whatever the machine's load.
        run = client.submit(["sh", "-c", f'echo $$ > {tmp_path}/pid.$KUOTA_NODE; '
                             '[ $KUOTA_NODE = wa ] && exec sleep 60; echo done on $KUOTA_NODE'],
                            queue="default/lq-cq", requests={"cpu": 1}, name="survivor")
        pid_file = tmp_path / "pid.wa"
        wait_for("the pod to run on wa", lambda: pid_file.exists() and pid_file.read_text(),
                 timeout=30)
        procs.worker("pool", "wb", "cpu=4")
        wait_for("wb to register", lambda: "wb" in client.store.nodes.names(), timeout=30)
        procs.kill("wa")
        status = run.wait(40)
    finally:
        procs.stop_all()
    assert status.succeeded
    assert [p.node for p in status.pods] == ["wb"]
    assert run.logs().strip() == "done on wb"
    evictions = [h for h in run.history() if h["event"] == "Evicted"]
    assert [e["reason"] for e in evictions] == ["NodeFailures"]
    assert not alive(int(pid_file.read_text())), "the pod died with its worker"
    assert client.store.nodes.get("wa").state == "Lost"


# The server restarts on the same port; tests/integration/redis/server.py keeps that
# port out of the kernel's ephemeral range and checks the restarted server is ours.
def test_restarting_redis_with_aof_mid_run_loses_nothing(redis_factory, tmp_path: Path) -> None:
    server = redis_factory(appendonly=True).start()
    prefix = "aof"
    client = Client(connection=connect(server.url, prefix=prefix))
    client.apply(queues(CQ("cq", {"cpu": 4})))
    runs = tmp_path / "runs"
    runs.mkdir()
    procs = Processes(server.url, prefix, tmp_path)
    try:
        procs.scheduler("s1")
        procs.worker("pool", "w1", "cpu=4")
        wait_for("a leader", lambda: leader_identity(client), timeout=30)
        keys = [client.submit(counting_command(runs, 0.2), queue="default/lq-cq",
                              requests={"cpu": 1}, name=f"job-{i:02d}").key for i in range(40)]
        wait_for("some workloads to finish", lambda: finished(client, keys) >= 8, timeout=60)
        server.restart(kill=True)
        wait_for("every workload to finish", lambda: _finished_or_none(client, keys) == 40,
                 timeout=90, every=0.2, explain=lambda: _unfinished(client, keys))
    finally:
        procs.stop_all()
    assert_each_ran_once(client, keys, runs)


def _unfinished(client: Client, keys: list[str]) -> str:
    """What the workloads that did not finish were doing (for the failure message)."""
    records = client.store.workloads.get_many(keys)
    return "\n".join(f"{key}: {record.state} {record.reason or ''} {events(client, key)}"
                     for key, record in records.items() if record.state != "Finished")


def _finished_or_none(client: Client, keys: list[str]) -> int:
    try:
        return finished(client, keys)
    except Exception:  # Redis is restarting; ask again
        return 0


@pytest.mark.parametrize(("argv", "want_message"), [
    (["--requests", "cpu=lots", "--", "true"], "--requests: 'lots' is not a quantity"),
    (["--", ], "a command to run is required"),
    (["--name", "Bad_Name", "--", "true"], "metadata.name: 'Bad_Name' is not a DNS-1123"),
    (["--priority-class", "gold", "--", "true"], "WorkloadPriorityClass gold does not exist"),
    (["--count", "-1", "--", "true"], "spec.podSets[0].count"),
    (["--backoff-limit", "-2", "--", "true"], "is not a whole number >= 0"),
])
def test_malformed_submissions_are_refused_with_a_clear_error(
        redis_server_url: str, redis_prefix: str, argv: list[str], want_message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    from kuota.cli import main

    status = main(["submit", "--redis", redis_server_url, "--prefix", redis_prefix,
                   "--queue", "default/lq", *argv])
    assert status == 2
    assert want_message in capsys.readouterr().err
    assert Client(connection=connect(redis_server_url, prefix=redis_prefix)).workloads() == []


def test_a_bad_spec_written_around_the_client_is_quarantined_before_any_worker(
        redis_server_url: str, redis_prefix: str) -> None:
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=4")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 4})))
        bad = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
               "metadata": {"name": "sneaky", "namespace": "default"},
               "spec": {"queueName": "lq-cq", "podSets": [
                   {"name": "main", "count": 1, "template": {"spec": {"containers": [
                       {"name": "main", "resources": {"requests": {"cpu": "nope"}}}]}}}]}}
        client.store.workloads.submit("default/sneaky", spec=bad, queue="default/lq-cq",
                                      priority=0, backoff_limit=0, submission="x", now=time.time())
        record = wait_for("the scheduler to quarantine it",
                          lambda: (r := client.store.workloads.get("default/sneaky")).state
                          == "Invalid" and r)
        queue_key = f"rq:queue:{client.store.keys.node_queue('n1')}"
        assert client.store.redis.llen(queue_key) == 0
    assert (record.outcome, record.reason) == ("", "Invalid")
    assert "'nope' is not a quantity" in record.message
    assert record.attempt == 0, "never admitted"


def test_the_python_api_reports_every_problem_at_once(redis_server_url: str,
                                                      redis_prefix: str) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    manifest = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
                "metadata": {"name": "two-problems", "namespace": "default"},
                "spec": {"queueName": "lq", "podSets": [
                    {"name": "a", "template": {"spec": {"containers": [{"name": "c"}]}}},
                    {"name": "b", "template": {"spec": {"containers": []}}}]}}
    with pytest.raises(api.ObjectError) as caught:
        client.submit(workload=manifest)
    fields = [p.field for p in caught.value.problems]
    assert fields == ["spec.podSets[a]",
                      "spec.podSets[0].template.spec.containers[0].resources.requests",
                      "spec.podSets[b]"]
    assert client.workloads() == []


def test_a_lost_start_job_is_sent_again(redis_server_url: str, redis_prefix: str) -> None:
    """A start job that vanished (say, with a worker that died holding it) is re-sent."""
    import threading

    from kuota.service.jobs import decode, node_queue

    with local_cluster(redis_server_url, redis_prefix) as cluster:  # a scheduler, no worker
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 1})))
        store = client.store
        epoch = store.nodes.register("n1", pool="pool", capacity={"cpu": 1000}, labels={},
                                     devices=[], now=time.time())
        alive = threading.Event()

        def beat() -> None:  # keep the hand-made node alive
            while not alive.wait(0.2):
                store.nodes.heartbeat("n1", epoch)

        threading.Thread(target=beat, daemon=True).start()
        try:
            run = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1},
                                name="orphan")
            wait_for("placement", lambda: run.record().placement == ("n1",))
            queue = node_queue(cluster.connection.raw, store.keys, "n1")
            first = wait_for("the start job", lambda: queue.job_ids)
            queue.empty()  # the job is lost
            sent_at = time.monotonic()
            again = wait_for("the start job to be sent again", lambda: queue.job_ids, timeout=15)
            waited = time.monotonic() - sent_at
        finally:
            alive.set()
        job = queue.fetch_job(again[0])
    assert again == first, "the same pods make the same job"
    assert [p.pod_id for p in decode(*job.args)] == ["default/orphan:1:0"]
    assert waited >= 0.5, "not re-sent before the pod had a chance to start"


def test_a_worker_starts_rq_again_after_redis_comes_back(
        redis_server_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """rq gives up when Redis goes away mid-job (a failover, a restart) and the worker
    starts it again; building rq's worker talks to Redis too, so while Redis is still
    away that fails as well, and must be tried again, not end the worker."""
    made = []
    make = PoolWorker._new_rq_worker

    def new_rq_worker(worker: PoolWorker) -> Any:
        made.append(len(made))
        if len(made) == 2:  # Redis still away
            raise redis.ConnectionError("Error 111 connecting to Redis. Connection refused.")
        rq = make(worker)
        if len(made) == 1:  # the first gives up at once, as when Redis goes away mid-job
            monkeypatch.setattr(rq, "work", _gone)
        return rq

    monkeypatch.setattr(PoolWorker, "_new_rq_worker", new_rq_worker)
    with local_cluster(redis_server_url, redis_prefix, [node("p", "n1", "cpu=2")]) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))
        run = client.submit(["true"], queue="default/lq-cq", name="after", requests={"cpu": 1})
        assert run.wait(timeout=30).outcome == Outcome.SUCCEEDED
        _, _, thread = cluster.workers["n1"]
        assert thread.is_alive()
    assert len(made) >= 3


def _gone(**_: Any) -> bool:
    raise redis.ConnectionError("Error while reading from Redis: Connection reset by peer")
