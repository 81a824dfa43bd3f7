"""Finished workloads are forgotten after ``--retain-finished``; live ones never are. The
leader's resync reads the live workloads every time and the retained ones a window at a
time (``Timing.resync_window``)."""

from __future__ import annotations

import dataclasses
import time

import pytest
from harness import CQ, TIMING, local_cluster, node, queues, wait_for

from kuota.federation.pool_member import PoolMember, pool_spec
from quota.lifecycle import State
from tests.integration.redis.test_redis_dispatched import job_copy


@pytest.mark.parametrize("window", [20_000, 1], ids=["one-window", "a-window-of-one"])
def test_finished_workloads_are_forgotten_after_the_retention(
        redis_server_url: str, redis_prefix: str, window: int) -> None:
    timing = dataclasses.replace(TIMING, retain_finished=0.5, resync_every=0.3,
                                 resync_window=window)
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")],
                       timing=timing) as cluster:
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))

        def stored() -> list[str]:
            return client.store.workloads.keys()

        done = [client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1},
                              name=f"done-{i}") for i in range(4)]
        for handle in done:
            assert handle.wait(20).state == "Finished"
        running = client.submit(["sleep", "30"], queue="default/lq-cq", requests={"cpu": 1},
                                name="running")
        wait_for("the finished workloads to be forgotten",
                 lambda: not {h.key for h in done} & set(stored()), timeout=15)
        for handle in done:
            assert client.store.redis.exists(client.store.keys.history(handle.key)) == 0
        assert running.key in stored()
        assert running.status().state in ("Admitted", "QuotaReserved", "Pending")
        running.cancel()


def test_a_live_workload_is_resynced_outside_the_window(redis_server_url: str,
                                                        redis_prefix: str) -> None:
    """A change no event told of — here a record marked finished behind the scheduler's
    back — is found by the next resync when the workload is live, window or not: its
    quota goes to the workload waiting for it."""
    timing = dataclasses.replace(TIMING, resync_every=0.3, resync_window=0)
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")],
                       timing=timing) as cluster:
        client = cluster.client()
        store = client.store
        client.apply(queues(CQ("cq", {"cpu": 1})))
        first = client.submit(["sleep", "30"], queue="default/lq-cq", requests={"cpu": 1},
                              name="first")
        wait_for("the first to run", lambda: first.status().state == "Admitted")
        second = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1},
                               name="second")
        store.redis.hset(store.keys.workload(first.key), mapping={
            "state": "Finished", "outcome": "Succeeded", "finished_at": time.time()})
        assert second.wait(20).state == "Finished"
def test_a_finished_dispatched_copy_waits_for_its_manager(redis_server_url: str,
                                                         redis_prefix: str) -> None:
    """Forgetting a copy before its manager saw the end would make the manager send it
    again: copies are left to their manager's delete, whatever the retention."""
    timing = dataclasses.replace(TIMING, retain_finished=0.0, resync_every=0.2)
    member = PoolMember(pool_spec(pool="pool", member="p", origin="mgr",
                                  redis=redis_server_url, prefix=redis_prefix))
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=2")],
                       timing=timing) as cluster:
        store = cluster.connection.store
        client = cluster.client()
        client.apply(queues(CQ("cq", {"cpu": 2})))
        wait_for("the node", lambda: any(n.ready for n in store.nodes.all()))
        assert member.create(job_copy("copy", ["true"])) == "created"
        local = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1},
                              name="local")
        wait_for("the copy to finish", lambda: (r := store.workloads.find("default/copy"))
                 and r.state is State.FINISHED)
        wait_for("the local workload to be forgotten",
                 lambda: store.workloads.find(local.key) is None, timeout=15)
        assert store.workloads.find("default/copy") is not None
        assert [c.name for c in member.observe("mgr").copies] == ["copy"]
