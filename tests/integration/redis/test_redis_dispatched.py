"""Dispatched workloads on a real Redis: the pool member adapter against a LocalCluster.

The operator's :class:`kuota.federation.pool_member.PoolMember` hands copies
to a scheduler + worker (threads); the copies run their commands for real,
finish through the usual pod path, and show up in ``observe`` with a
Job-shaped status. No ClusterQueue exists: dispatched copies need none.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from kuota.federation.member import refusal_of
from kuota.federation.pool_member import PoolMember, pool_spec
from kuota.federation.remote_job import ORIGIN_LABEL, ORIGIN_WORKLOAD_ANNOTATION
from queueing.store import Conflict, PodPhase, Store
from quota.lifecycle import State
from tests.integration.redis.harness import local_cluster, node, wait_for

Body = dict[str, Any]


def job_copy(name: str, argv: list[str], *, parallelism: int = 1, cpu: str = "1",
             backoff_limit: int = 0, selector: dict[str, str] | None = None) -> Body:
    pod: Body = {"containers": [{"name": "main", "command": argv[:1], "args": argv[1:],
                                 "resources": {"requests": {"cpu": cpu}}}]}
    if selector:
        pod["nodeSelector"] = selector
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {ORIGIN_LABEL: "mgr"},
                         "annotations": {ORIGIN_WORKLOAD_ANNOTATION: f"default/job-{name}"}},
            "spec": {"parallelism": parallelism, "backoffLimit": backoff_limit,
                     "suspend": False, "template": {"spec": pod}}}


def test_dispatched_copies_run_fail_and_are_removed(redis_server_url: str,
                                                     redis_prefix: str) -> None:
    spec = pool_spec(pool="gpu", member="pool-a", origin="mgr", redis=redis_server_url,
                     prefix=redis_prefix)
    member = PoolMember(spec)
    nodes = [node("gpu", "g-1", "cpu=2", {"gpu-model": "a100"}),
             node("cpu", "c-1", "cpu=8")]
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        store: Store = cluster.connection.store
        wait_for("nodes", lambda: len([n for n in store.nodes.all() if n.ready]) == 2)
        seen = member.observe("mgr")
        assert [n.name for n in seen.nodes] == ["g-1"]  # only the pool's nodes
        assert member.create(job_copy("ok", [sys.executable, "-c", "print('hi')"],
                                      parallelism=2, selector={"gpu-model": "a100"})) \
            == "created"
        assert member.create(job_copy("ok", ["true"])) == "exists"  # create-if-absent
        done = wait_for("ok to finish", lambda: (r := store.workloads.find("default/ok"))
                        and r.state is State.FINISHED and r)
        assert done.outcome.value == "Succeeded" and done.cluster_queue == ""
        assert set(done.placement) == {"g-1"}
        copies = {c.name: c for c in member.observe("mgr").copies}
        assert copies["ok"].workload == "default/job-ok"
        status = copies["ok"].body["status"]
        # The interim condition first, as the Job controller writes it (status validation).
        assert status["succeeded"] == 2
        assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
        assert member.observe("someone-else").copies == ()

        # A failing command fails the copy (backoffLimit 0), Failed with the exit.
        member.create(job_copy("bad", [sys.executable, "-c", "raise SystemExit(3)"]))
        wait_for("bad to fail", lambda: (r := store.workloads.find("default/bad"))
                 and r.state is State.FINISHED)
        bad = {c.name: c for c in member.observe("mgr").copies}["bad"].body["status"]
        assert [c["type"] for c in bad["conditions"]] == ["FailureTarget", "Failed"]
        assert bad["failed"] == 1

        # A gang that does not fit the pool waits; removing it stops nothing running.
        member.create(job_copy("big", ["sleep", "30"], parallelism=3))
        wait_for("big to wait", lambda: (r := store.workloads.find("default/big"))
                 and r.reason == "WaitingForNodes")
        # A long one runs; delete stops its pod and removes the record.
        member.create(job_copy("long", ["sleep", "30"]))
        pod = wait_for("long to run", lambda: (r := store.workloads.find("default/long"))
                       and r.placement and store.pods.get_many(r.pod_refs())[0])
        wait_for("long running", lambda: store.pods.get_many([pod.ref])[0].state
                 is PodPhase.RUNNING)
        assert member.delete("default", "long") == "deleted"
        assert member.delete("default", "long") == "absent"
        assert store.workloads.find("default/long") is None
        wait_for("long's pod stopped", lambda: store.pods.get_many([pod.ref])[0].state
                 is PodPhase.STOPPED, timeout=10)
        assert member.delete("default", "big") == "deleted"
    # (No scheduler now.) A live workload of another origin is not ours to overwrite or delete.
    store.dispatched.create("default/mine", origin="other", spec={"x": 1},
                            admission=done.admission, pods=1, backoff_limit=0, now=1.0)
    # The member refuses the create (an answer, not an error rq would retry).
    why = refusal_of(member.create(job_copy("mine", ["true"])))
    assert why is not None and "not sent by mgr" in why
    with pytest.raises(Conflict, match="not dispatched by mgr"):
        member.delete("default", "mine")


@pytest.mark.parametrize("backoff_limit", [0, 1])
def test_a_failed_pod_ends_its_gang_once_the_mates_stopped(
        redis_server_url: str, redis_prefix: str, backoff_limit: int) -> None:
    """Pod 0 fails at once while pod 1 would sleep: the copy is Evicting until pod 1 has
    stopped, then retried (with a retry left) or Failed — never left Evicting."""
    spec = pool_spec(pool="gpu", member="pool-a", origin="mgr", redis=redis_server_url,
                     prefix=redis_prefix)
    member = PoolMember(spec)
    with local_cluster(redis_server_url, redis_prefix, [node("gpu", "g-1", "cpu=2")]) as cluster:
        store: Store = cluster.connection.store
        wait_for("the node", lambda: any(n.ready for n in store.nodes.all()))
        member.create(job_copy("gang", ["sh", "-c", 'test "$KUOTA_POD_INDEX" = 1 || exit 3; '
                                        "exec sleep 30"], parallelism=2,
                               backoff_limit=backoff_limit))
        done = wait_for("the gang to fail", lambda: (r := store.workloads.find("default/gang"))
                        and r.state is State.FINISHED and r, timeout=30)
    assert done.outcome.value == "Failed"
    assert done.attempt == backoff_limit + 1
    history = [h["event"] for h in store.workloads.history("default/gang")]
    assert history.count("Requeued") == backoff_limit


def test_node_loss_places_the_copy_again_in_the_same_pool(redis_server_url: str,
                                                          redis_prefix: str) -> None:
    member = PoolMember(pool_spec(pool="gpu", member="pool-a", origin="mgr",
                                  redis=redis_server_url, prefix=redis_prefix))
    nodes = [node("gpu", "g-1", "cpu=1"), node("gpu", "g-2", "cpu=1"),
             node("cpu", "c-1", "cpu=8")]
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        store: Store = cluster.connection.store
        wait_for("nodes", lambda: len([n for n in store.nodes.all() if n.ready]) == 3)
        member.create(job_copy("long", ["sleep", "60"]))
        first = wait_for("long placed", lambda: (r := store.workloads.find("default/long"))
                         and r.placement and r)
        lost = first.placement[0]
        cluster.stop_node(lost)
        again = wait_for("long placed again", lambda: (
            r := store.workloads.find("default/long")) and r.attempt > first.attempt
            and r.placement and r, timeout=15)
        assert again.placement[0] in {"g-1", "g-2"} - {lost}  # same pool, never c-1
        assert again.state is State.ADMITTED and again.cluster_queue == ""
        history = [h["event"] for h in store.workloads.history("default/long")]
        assert "Evicted" in history
        member.delete("default", "long")
