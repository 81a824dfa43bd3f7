"""The pool member adapter (kuota.federation.pool_member) against a real pool.

A ``kuota scheduler`` + ``kuota worker`` (threads) on a real redis-server run
the copies the adapter creates; the adapter is called directly, as the
operator's tasks call it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kuota.federation import pool_member
from kuota.federation.member import refusal_of
from kuota.federation.remote_job import ORIGIN_WORKLOAD_ANNOTATION
from placement.model import POD_SLOT, PODS
from queueing.store import PodPhase, Store
from tests.integration.redis.harness import local_cluster, node, wait_for

Body = dict[str, Any]


def copy_job(name: str, *, cpu: str = "1", parallelism: int = 1,
             command: list[str] | None = None) -> Body:
    container: Body = {"name": "main", "resources": {"requests": {"cpu": cpu}}}
    if command is not None:
        container["command"] = command
    return {"metadata": {"name": name, "namespace": "ml",
                         "annotations": {ORIGIN_WORKLOAD_ANNOTATION: f"ml/job-{name}"}},
            "spec": {"parallelism": parallelism, "backoffLimit": 0,
                     "template": {"spec": {"containers": [container]}}}}


def adapter(url: str, prefix: str, origin: str) -> pool_member.PoolMember:
    return pool_member.PoolMember(pool_member.pool_spec(
        pool="gpu-pool", member="p", origin=origin, redis=url, prefix=prefix))


@pytest.fixture
def pool(redis_server_url: str, redis_prefix: str) -> Iterator[Store]:
    with local_cluster(redis_server_url, redis_prefix,
                       [node("gpu-pool", "pool-1", "cpu=8")]) as cluster:
        yield cluster.connection.store


def running(store: Store, key: str, pods: int) -> None:
    def check() -> bool:
        record = store.workloads.find(key)
        if record is None or not record.placement:
            return False
        found = store.pods.get_many(record.pod_refs())
        return len(found) == pods and all(
            p is not None and p.state is PodPhase.RUNNING for p in found)

    wait_for(f"{key}'s pods running", check)


def test_observe_counts_our_copies_per_copy_and_others_on_the_node(
        pool: Store, redis_server_url: str, redis_prefix: str) -> None:
    ours = adapter(redis_server_url, redis_prefix, "manager-1")
    theirs = adapter(redis_server_url, redis_prefix, "manager-2")
    sleep = ["sleep", "30"]
    assert ours.create(copy_job("mine", cpu="1", parallelism=2, command=sleep)) == "created"
    assert theirs.create(copy_job("other", cpu="3", command=sleep)) == "created"
    running(pool, "ml/mine", 2)
    running(pool, "ml/other", 1)

    seen = ours.observe("manager-1")

    (pool_node,) = seen.nodes
    # Only the other manager's pod is in the node's usage: ours are counted per copy.
    assert pool_node.requested == {"cpu": 3000, PODS: POD_SLOT}
    (copy,) = seen.copies
    assert copy.key == "ml/mine" and copy.workload == "ml/job-mine"
    # What a restarted operator adopts (it did not place these pods itself).
    assert copy.usage == {"pool-1": {"cpu": 2000, PODS: 2 * POD_SLOT}}
    assert seen.problems == ()


def test_create_refuses_what_retrying_cannot_change(
        pool: Store, redis_server_url: str, redis_prefix: str) -> None:
    ours = adapter(redis_server_url, redis_prefix, "manager-1")
    theirs = adapter(redis_server_url, redis_prefix, "manager-2")

    # No command: not a pool copy, now or later.
    why = refusal_of(ours.create(copy_job("no-command")))
    assert why is not None and "ml/no-command" in why

    # The name is taken by a live workload another manager sent.
    assert theirs.create(copy_job("taken", command=["sleep", "30"])) == "created"
    why = refusal_of(ours.create(copy_job("taken", command=["sleep", "30"])))
    assert why is not None and "ml/taken" in why

    # Our own retried create is no refusal.
    assert ours.create(copy_job("mine", command=["true"])) == "created"
    assert refusal_of(ours.create(copy_job("mine", command=["true"]))) is None
