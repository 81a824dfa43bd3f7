"""A Job's maximum execution time (Kueue's ``kueue.x-k8s.io/max-exec-time-seconds`` label):
its Workload carries ``maximumExecutionTimeSeconds`` and, once admitted that long, is
deactivated as Kueue deactivates it — ``spec.active: false``, ``Evicted`` with reason
``DeactivatedDueToMaximumExecutionTimeExceeded`` — and the Job is stopped."""

from __future__ import annotations

import pathlib

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"


@pytest.mark.parametrize("label", ["kueue.x-k8s.io/max-exec-time-seconds",
                                   "kuota.dev/max-exec-time-seconds"])
def test_a_job_admitted_for_its_maximum_is_deactivated(
        label: str, cluster: Emulator, certs: pathlib.Path) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                  h.local_queue("main", "team"))
    job = h.job("capped")
    job["metadata"]["labels"][label] = "1"
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, job)
        h.wait(cluster, lambda: h.running(cluster, "capped"), "the Job to start")
        assert h.workload_of(cluster, "capped")["spec"]["maximumExecutionTimeSeconds"] == 1
        h.wait(cluster, lambda: (h.workload_of(cluster, "capped") or {})
               .get("spec", {}).get("active") is False, "spec.active to become false")
        h.wait(cluster, lambda: not h.running(cluster, "capped"), "the Job to stop")
        wl = h.workload_of(cluster, "capped")
        evicted = h.condition(wl, "Evicted")
        assert (evicted["status"], evicted["reason"], evicted["message"]) == (
            "True", "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time")
        assert not h.is_true(wl, "Admitted") and "admission" not in wl["status"]
        assert "accumulatedPastExecutionTimeSeconds" not in wl["status"]


def test_an_invalid_label_sets_no_maximum(cluster: Emulator, certs: pathlib.Path) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                  h.local_queue("main", "team"))
    job = h.job("uncapped")
    job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] = "soon"
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, job)
        h.wait(cluster, lambda: h.running(cluster, "uncapped"), "the Job to start")
        assert "maximumExecutionTimeSeconds" not in h.workload_of(cluster, "uncapped")["spec"]
