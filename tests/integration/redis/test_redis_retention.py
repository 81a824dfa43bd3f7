"""Finished workloads are forgotten after ``--retain-finished``; live ones never are."""

from __future__ import annotations

import dataclasses

from harness import CQ, TIMING, local_cluster, node, queues, wait_for


def test_finished_workloads_are_forgotten_after_the_retention(
        redis_server_url: str, redis_prefix: str) -> None:
    timing = dataclasses.replace(TIMING, retain_finished=0.5, resync_every=0.3)
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")],
                       timing=timing) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))

        def stored() -> list[str]:
            return client.store.workloads.keys()

        done = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1}, name="done")
        assert done.wait(20).state == "Finished"
        running = client.submit(["sleep", "30"], queue="default/lq-cq", requests={"cpu": 1},
                                name="running")
        wait_for("the finished workload to be forgotten",
                 lambda: done.key not in stored(), timeout=15)
        assert client.store.redis.exists(client.store.keys.history(done.key)) == 0
        assert running.key in stored()
        assert running.status().state in ("Admitted", "QuotaReserved", "Pending")
        running.cancel()
