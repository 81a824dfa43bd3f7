"""A queue-labelled Job end to end: suspended, a Workload, admitted, started, finished.

The operator runs in-process against the emulator; Jobs are created over
HTTP, so the emulator calls the operator's webhook over HTTPS first.
"""

from __future__ import annotations

import pathlib

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"
GPU_TAINT = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def setup_queues(api: Emulator, *, cpu: int = 4) -> None:
    api.apply(h.flavor("spot", labels={"instance-type": "spot"}, tolerations=[GPU_TAINT]),
              h.cluster_queue("team", quotas={"spot": {"cpu": cpu}}),
              h.local_queue("main", "team"))


class TestLifecycle:
    def test_a_job_is_suspended_admitted_started_and_releases_quota(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        with h.Running(cluster, certs):
            created = call(cluster.url, "POST", JOBS, h.job("train", cpu="1", parallelism=2,
                                                            node_selector={"disk": "ssd"}))
            assert created.status == 201, created.data
            assert created.data["spec"]["suspend"] is True  # the webhook held it

            h.wait(cluster, lambda: h.running(cluster, "train"), "the Job to start")
            job = h.get_job(cluster, "train")
            pod = job["spec"]["template"]["spec"]
            assert pod["nodeSelector"] == {"disk": "ssd", "instance-type": "spot"}
            assert pod["tolerations"] == [GPU_TAINT]
            wl = h.workload_of(cluster, "train")
            assert wl is not None
            assert wl["spec"]["podSets"][0]["count"] == 2
            assert h.is_true(wl, "QuotaReserved") and h.is_true(wl, "Admitted")
            assert wl["status"]["admission"] == {
                "clusterQueue": "team",
                "podSetAssignments": [{"name": "main", "flavors": {"cpu": "spot"}, "count": 2,
                                       "resourceUsage": {"cpu": "2"}}]}

            def cq_status() -> dict:
                return cluster.get(h.API, "ClusterQueue", "team").get("status") or {}

            h.wait(cluster, lambda: cq_status().get("admittedWorkloads") == 1, "CQ counts")
            assert cq_status()["flavorsUsage"] == [
                {"name": "spot", "resources": [{"name": "cpu", "total": "2", "borrowed": "0"}]}]

            h.complete(cluster, "train")
            h.wait(cluster, lambda: h.is_true(h.workload_of(cluster, "train"), "Finished"),
                   "the Workload to finish")
            h.wait(cluster, lambda: cq_status().get("admittedWorkloads") == 0, "quota released")
            assert cq_status()["flavorsUsage"][0]["resources"][0]["total"] == "0"
