"""A pool on a Redis behind Sentinel (``redis+sentinel://``) goes on across a promotion.

A real master, its replica and a sentinel; the scheduler and the worker run as threads
(harness.py). The replica is promoted while the pool runs: the scheduler meets another
server, rebuilds from it after its restart pause, and the worker's reports and rq jobs
follow the sentinel to the new master.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from harness import CQ, TIMING, Processes, local_cluster, node, queues, wait_for
from sentinel import SentinelSet

from kuota import cli
from kuota.client import Client
from kuota.service.connection import connect
from queueing.store import Outcome

pytestmark = pytest.mark.redis


@pytest.fixture
def sentinels() -> Iterator[SentinelSet]:
    servers = SentinelSet()
    try:
        yield servers.start()
    finally:
        servers.cleanup()


def test_a_pool_goes_on_after_the_sentinel_promotes_the_replica(
        sentinels: SentinelSet) -> None:
    timing = dataclasses.replace(TIMING, restart_pause=0.5)
    with local_cluster(sentinels.url(), "sentinel", [node("p", "n1", "cpu=2")],
                       timing=timing) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))
        first = client.submit(["true"], queue="default/lq-cq", name="first",
                              requests={"cpu": 1})
        assert first.wait(timeout=30).outcome == Outcome.SUCCEEDED
        [scheduler] = cluster.schedulers
        terms = scheduler.terms

        sentinels.fail_over()
        second = client.submit(["sh", "-c", "exit 4"], queue="default/lq-cq", name="second",
                               requests={"cpu": 1})
        status = second.wait(timeout=30)
        assert (status.outcome, [p.exit_code for p in status.pods]) == (Outcome.FAILED, [4])
        assert first.status().outcome == Outcome.SUCCEEDED, "kept by the promoted replica"
        wait_for("the scheduler to lead the new master", lambda: scheduler.leading)
        assert scheduler.terms > terms, "it rebuilt from the new master"
        promoted = redis.Redis(port=sentinels.replica.port).info("server")["run_id"]
        assert client.store.server_id() == promoted


def test_scheduler_and_worker_processes_follow_the_promotion(
        sentinels: SentinelSet, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As deployed: `kuota scheduler` and `kuota worker` given the URL in REDIS_URL."""
    client = Client(connection=connect(sentinels.url(), prefix="procs"))
    client.apply(queues(CQ("cq", {"cpu": 1})))
    procs = Processes(sentinels.url(), "procs", tmp_path)
    try:
        procs.scheduler("s1")
        procs.worker("p", "n1", "cpu=1")
        first = client.submit(["true"], queue="default/lq-cq", name="first",
                              requests={"cpu": 1})
        assert first.wait(timeout=30).outcome == Outcome.SUCCEEDED, procs.log("s1")
        sentinels.fail_over()
        second = client.submit(["true"], queue="default/lq-cq", name="second",
                               requests={"cpu": 1})
        status = second.wait(timeout=40)
        assert status.outcome == Outcome.SUCCEEDED, procs.log("s1") + procs.log("n1")
        assert "Redis restarted" in procs.log("s1")
        assert cli.main(["status", "--redis", sentinels.url(), "--prefix", "procs", "-o",
                         "json"]) == 0
        store = json.loads(capsys.readouterr().out)["store"]
        assert store["master"] == f"127.0.0.1:{sentinels.replica.port}"
        assert "Sentinel promotion" in store["mayLoseWrites"]
    finally:
        procs.stop_all()
