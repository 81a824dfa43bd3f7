"""waitForPodsReady: a Job whose pods are not ready in time is stopped and requeued.

The emulator runs no Job controller, so the test plays it: it sets the
Job's ``status.ready`` when the pods would be running.
"""

from __future__ import annotations

import pathlib

from quota.config import EngineConfig, PodsReadyConfig, RequeuingStrategy
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def test_unready_pods_evict_and_requeue_ready_pods_keep_running(
        cluster: Emulator, certs: pathlib.Path) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                  h.local_queue("main", "team"))
    ready = PodsReadyConfig(timeout=1.0, requeuing=RequeuingStrategy(
        backoff_base_seconds=0.2, backoff_max_seconds=0.5))
    with h.Running(cluster, certs, engine=EngineConfig(wait_for_pods_ready=ready)):
        call(cluster.url, "POST", JOBS, h.job("slow", parallelism=2))
        h.wait(cluster, lambda: h.running(cluster, "slow"), "the Job to start")

        def evicted() -> bool:
            wl = h.workload_of(cluster, "slow")
            found = h.condition(wl, "Evicted")
            return bool(found and found["reason"] == "PodsReadyTimeout"
                        and found["status"] == "True")

        h.wait(cluster, evicted, "the pods-ready timeout to evict it")
        # The eviction completes (quota released, requeued with backoff) once the Job is
        # suspended with no pod left; this Job's pods never existed.
        h.wait(cluster, lambda: (h.workload_of(cluster, "slow")["status"].get("requeueState")
                                 or {}).get("count") == 1, "the requeue after the eviction")
        h.wait(cluster, lambda: h.running(cluster, "slow"), "the Job to be started again")

        cluster.patch("batch/v1", "Job", "slow", {"status": {"active": 2, "ready": 2}},
                      namespace="default", subresource="status")
        h.wait(cluster, lambda: h.is_true(h.workload_of(cluster, "slow"), "PodsReady"),
               "the Workload's PodsReady condition")
        h.settle(1.5)
        assert h.running(cluster, "slow")  # ready in time: no more evictions
        wl = h.workload_of(cluster, "slow")
        assert h.is_true(wl, "Admitted")


def test_past_the_requeue_limit_the_workload_is_deactivated_for_good(
        cluster: Emulator, certs: pathlib.Path) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                  h.local_queue("main", "team"))
    ready = PodsReadyConfig(timeout=0.5, requeuing=RequeuingStrategy(
        backoff_limit_count=0, backoff_base_seconds=0.1, backoff_max_seconds=0.2))
    with h.Running(cluster, certs, engine=EngineConfig(wait_for_pods_ready=ready)):
        call(cluster.url, "POST", JOBS, h.job("never-ready"))
        h.wait(cluster, lambda: h.running(cluster, "never-ready"), "the Job to start")
        h.wait(cluster, lambda: (h.workload_of(cluster, "never-ready") or {})
               .get("spec", {}).get("active") is False, "spec.active to become false")
        h.wait(cluster, lambda: not h.running(cluster, "never-ready"), "the Job to stop")
        wl = h.workload_of(cluster, "never-ready")
        assert h.condition(wl, "Evicted")["reason"] == "Deactivated"
        assert "backoffLimitCount" in h.condition(wl, "Evicted")["message"]
