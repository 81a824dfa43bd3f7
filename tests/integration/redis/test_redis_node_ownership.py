"""Workers own their node (issue 12, scope 4).

Issue 12: a second worker started with a live node's name took it over silently; the
old one killed its pods, logged "stopping" every 5 s without exiting, kept taking jobs
for the node and re-ran the job it had just killed. Now the second start is refused
unless ``--replace``, and a replaced worker stops at once and runs nothing more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import CQ, Processes, queues, wait_for

from kuota.client import Client
from kuota.service.connection import connect

pytestmark = pytest.mark.redis


def test_a_second_worker_for_a_live_node_is_refused_unless_it_replaces_it(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 4})))
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    try:
        procs.scheduler("s1")
        first = procs.worker("pool", "box", "cpu=2", name="first")
        wait_for("the node to be Ready", lambda: any(
            n.name == "box" and n.ready for n in client.nodes()), timeout=30)
        epoch = client.store.nodes.get("box").epoch

        refused = procs.worker("pool", "box", "cpu=2", name="refused")
        assert refused.wait(30) == 1
        assert "error: node box is served by a live worker" in procs.log("refused")
        assert "--replace" in procs.log("refused")
        assert client.store.nodes.get("box").epoch == epoch, "the live node is untouched"
        assert first.poll() is None

        procs.worker("pool", "box", "cpu=2", "--replace", name="second")
        assert first.wait(30) == 1, "the replaced worker exits on its own"
        assert "registered by another worker" in procs.log("first")
        node = wait_for("the new incarnation", lambda: (n := client.store.nodes.get("box"))
                        .epoch > epoch and n.ready and n, timeout=30)
        run = client.submit(["echo", "after"], queue="default/lq-cq", requests={"cpu": 1})
        status = run.wait(30)
        assert status.succeeded
        assert [p.node for p in status.pods] == ["box"]
        assert client.store.pods.get_many(run.record().pod_refs())[0].epoch == node.epoch
    finally:
        for name in ("first", "refused"):
            proc = procs.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(5)
        procs.stop_all()
