"""A Redis worker pool as a member of the Kubernetes operator, end to end.

Three emulated API servers (the manager, members ``a`` and ``b``) as in
fleet.py, plus member ``p``: MemberCluster ``spec.pool: gpu-pool``, the pool
of a ``kuota scheduler`` + ``kuota worker`` (threads, LocalCluster) on a real
redis-server — the same Redis the operator gets with ``--redis``. Flavor
``pool-node`` selects nodes labelled ``kuota.dev/node-kind=pool-worker``,
which only the pool has, so Jobs of queue ``pool`` can only go to ``p``.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kuota.federation.pool_copy import POOL_LABEL
from queueing.store import PodPhase, Store
from quota.lifecycle import State
from tests.emulator import emulators
from tests.integration.multicluster.fleet import Fleet
from tests.integration.operator import harness as h
from tests.integration.redis.harness import local_cluster, node, wait_for

Body = dict[str, Any]
POOL_LABELS = {"kuota.dev/node-kind": "pool-worker"}


def pool_objects() -> list[Body]:
    check = {"apiVersion": h.API, "kind": "AdmissionCheck", "metadata": {"name": "to-pool"},
             "spec": {"controllerName": "kuota.dev/multicluster",
                      "parameters": {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                     "name": "with-pool"}}}
    config = {"apiVersion": h.API, "kind": "MultiClusterConfig",
              "metadata": {"name": "with-pool"},
              "spec": {"clusters": ["a", "b", "p"], "staleAfter": "2s",
                       "workerLostTimeout": "5s"}}
    member = {"apiVersion": h.API, "kind": "MemberCluster", "metadata": {"name": "p"},
              "spec": {"pool": "gpu-pool"}}
    strategy = {"admissionChecksStrategy": {"admissionChecks": [{"name": "to-pool"}]}}
    return [h.flavor("pool-node", labels=POOL_LABELS), check, config, member,
            h.cluster_queue("pool-team", quotas={"pool-node": {"cpu": 16}}, **strategy),
            h.local_queue("pool", "pool-team")]


def pool_job(name: str, argv: list[str] | None, *, backoff_limit: int = 0) -> Body:
    body = h.job(name, queue="pool", cpu="1")
    body["spec"]["backoffLimit"] = backoff_limit
    if argv is not None:
        body["spec"]["template"]["spec"]["containers"][0]["command"] = argv
    return body


@contextlib.contextmanager
def pool_fleet(certs: pathlib.Path, workdir: pathlib.Path, url: str,
               prefix: str) -> Iterator[tuple[Fleet, Store]]:
    nodes = [node("gpu-pool", "pool-1", "cpu=4", POOL_LABELS)]
    with emulators(3) as (manager, a, b), local_cluster(url, prefix, nodes) as cluster:
        fleet = Fleet(manager, a, b, workdir)
        fleet.setup()
        manager.apply(*pool_objects())
        with h.Running(manager, certs, member_interval=0.2, federation_tick=0.05,
                       manager_id="manager-1", redis_url=url, pool_prefix=prefix):
            # Every member observed first: a decision made before would refuse the Kubernetes
            # members for Health, not for what this test is about.
            for name in ("p", "a", "b"):
                h.wait(manager, lambda name=name: h.is_true(
                    {"status": fleet.member_status(name)}, "Active"), f"member {name} Active")
            yield fleet, cluster.connection.store


@pytest.fixture
def pool(mc_certs: pathlib.Path, tmp_path: pathlib.Path, redis_server_url: str,
         redis_prefix: str) -> Iterator[tuple[Fleet, Store]]:
    with pool_fleet(mc_certs, tmp_path, redis_server_url, redis_prefix) as running:
        yield running


def finished(fleet: Fleet, name: str) -> Body:
    return h.wait(fleet.manager, lambda: (w := h.workload_of(fleet.manager, name)) and
                  h.is_true(w, "Finished") and w, f"{name}'s Workload finished")


def test_jobs_run_on_the_pool_and_come_home(pool: tuple[Fleet, Store]) -> None:
    fleet, store = pool
    status = fleet.member_status("p")
    assert status["nodeCount"] == 1
    assert any(c["name"] == "pool-node" for c in status["capacity"])

    # Success: the command really runs on the pool's worker; Complete comes home.
    fleet.submit(pool_job("ok", [sys.executable, "-c", "print('ran on the pool')"]))
    wl = finished(fleet, "ok")
    assert h.condition(wl, "Finished")["reason"] == "Succeeded"
    assert wl["status"]["clusterName"] == "p"
    scores = {c["name"]: c for c in wl["status"]["dispatch"]["clusters"]}
    assert scores["a"]["filteredBy"] == "Hardware"
    job = h.get_job(fleet.manager, "ok")
    assert h.is_true(job, "Complete") and job["status"]["succeeded"] == 1
    assert fleet.copies("ok") == {}  # nothing went to the Kubernetes members
    # The finished copy is removed from the pool once the local Workload finished.
    wait_for("ok's copy removed", lambda: store.workloads.find("default/ok") is None)

    # Failure: exit 3 with backoffLimit 0 fails the copy, and the local Job.
    fleet.submit(pool_job("broken", [sys.executable, "-c", "raise SystemExit(3)"]))
    wl = finished(fleet, "broken")
    assert h.condition(wl, "Finished")["reason"] == "Failed"
    assert h.is_true(h.get_job(fleet.manager, "broken"), "Failed")

    # Deleting the local Job deletes the copy (its running pod is stopped).
    fleet.submit(pool_job("long", ["sleep", "60"]))
    record = wait_for("long to run on the pool", lambda: (
        r := store.workloads.find("default/long")) and r.placement and r)
    assert record.dispatched and record.origin == "manager-1" and record.cluster_queue == ""
    assert record.state is State.ADMITTED
    ref = record.pod_refs()[0]
    wait_for("long's pod running",
             lambda: store.pods.get_many([ref])[0].state is PodPhase.RUNNING)
    fleet.manager.delete("batch/v1", "Job", "long", "default")
    wait_for("long's copy removed", lambda: store.workloads.find("default/long") is None)
    wait_for("long's pod stopped",
             lambda: store.pods.get_many([ref])[0].state is PodPhase.STOPPED)


def test_a_job_without_command_is_kept_off_the_pool(pool: tuple[Fleet, Store]) -> None:
    fleet, store = pool
    fleet.submit(pool_job("no-command", None))
    wl = h.wait(fleet.manager, lambda: (w := h.workload_of(fleet.manager, "no-command"))
                and w.get("status", {}).get("dispatch") and w, "the dispatch decision")
    scores = {c["name"]: c for c in wl["status"]["dispatch"]["clusters"]}
    assert scores["p"]["filteredBy"] == "ClusterAffinity"
    assert POOL_LABEL in str(scores["p"])
    assert not h.is_true(wl, "Admitted")
    assert store.workloads.find("default/no-command") is None
