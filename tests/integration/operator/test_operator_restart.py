"""Restart safety and leader election: a new leader never double-admits.

An operator is stopped in the middle of admitting 50 Jobs and another one
(a different replica identity, taking over the Lease) finishes the work.
Every Workload must be admitted exactly once — one status write carrying
an admission — and the ClusterQueue's usage must equal the sum of the
admitted workloads at the end.
"""

from __future__ import annotations

import pathlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kmock

from kuota.operator.kinds import jobs
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"
WORKLOADS = kmock.resource("kuota.dev", "v1alpha1", "workloads")


def admissions_written(api: Emulator) -> dict[str, int]:
    """Workload name -> successful status writes that stored an admission."""
    counts: dict[str, int] = {}
    for request in api.handler["patch", WORKLOADS]:
        if not str(request.url).split("?")[0].endswith("/status"):
            continue
        data: Any = request.data
        if api.status_of(request) == 200 and isinstance(data, dict) \
                and (data.get("status") or {}).get("admission"):
            name = str(request.url).split("?")[0].split("/")[-2]
            counts[name] = counts.get(name, 0) + 1
    return counts


def admitted_jobs(api: Emulator) -> set[str]:
    return {j["metadata"]["name"] for j in api.list("batch/v1", "Job", "default")
            if j["spec"].get("suspend") is False}


class TestRestart:
    def test_a_new_leader_mid_way_through_50_jobs_admits_each_exactly_once(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"),
                      h.cluster_queue("team", quotas={"default": {"cpu": 40}}),
                      h.local_queue("main", "team"))
        names = [f"j{i:02d}" for i in range(50)]
        with h.Running(cluster, certs, lease="kuota-operator", identity="first"):
            with ThreadPoolExecutor(8) as pool:
                replies = list(pool.map(lambda n: call(cluster.url, "POST", JOBS, h.job(n)),
                                        names))
            assert {r.status for r in replies} == {201}
            h.wait(cluster, lambda: len(admitted_jobs(cluster)) >= 5, "some admissions")
        first_round = admitted_jobs(cluster)
        assert len(first_round) < 50, "the first operator was meant to stop mid-way"

        with h.Running(cluster, certs, lease="kuota-operator", identity="second") as running:
            h.wait(cluster, lambda: len(admitted_jobs(cluster)) == 40, "the quota to fill")
            running.quiet()
            assert len(admitted_jobs(cluster)) == 40  # never past the quota
            done = sorted(admitted_jobs(cluster))[:10]
            for name in done:
                h.complete(cluster, name)
            h.wait(cluster, lambda: len(admitted_jobs(cluster)) == 50, "every Job to start",
                   timeout=20)

            def cq_status() -> dict:
                return cluster.get(h.API, "ClusterQueue", "team").get("status") or {}

            h.wait(cluster, lambda: cq_status().get("reservingWorkloads") == 40, "CQ counts")
        lease = cluster.get("coordination.k8s.io/v1", "Lease", "kuota-operator", "kuota-system")
        assert lease["spec"]["leaseTransitions"] >= 1

        written = admissions_written(cluster)
        assert len(written) == 50 and set(written.values()) == {1}, written
        holding = [wl for wl in cluster.list(h.API, "Workload", "default")
                   if (wl.get("status") or {}).get("admission") and not h.is_true(wl, "Finished")]
        used = sum(int(wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"])
                   for wl in holding)
        assert used == 40
        assert cq_status()["flavorsReservation"] == [
            {"name": "default", "resources": [{"name": "cpu", "total": "40", "borrowed": "0"}]}]


class TestLeaderElection:
    def test_one_replica_leads_and_a_standby_takes_over(self, cluster: Emulator,
                                                        certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"),
                      h.cluster_queue("team", quotas={"default": {"cpu": 4}}),
                      h.local_queue("main", "team"))
        first = h.Running(cluster, certs, lease="kuota-operator", identity="first")
        with first:
            second = h.Running(cluster, certs, lease="kuota-operator", identity="second")
            second.runner.__enter__()
            try:
                h.settle(1.0)
                assert first.operator.ready.is_set() and not second.operator.ready.is_set()
                call(cluster.url, "POST", JOBS, h.job("one"))
                h.wait(cluster, lambda: h.running(cluster, "one"), "the leader to admit")
                first.runner.__exit__(None, None, None)
                h.wait(cluster, second.operator.ready.is_set, "the standby to lead")
                call(cluster.url, "POST", JOBS, h.job("two"))
                h.wait(cluster, lambda: h.running(cluster, "two"), "the new leader to admit")
            finally:
                second.runner.__exit__(None, None, None)


class TestLateWrites:
    def test_an_admission_stored_meanwhile_is_adopted_not_overwritten(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """A previous leader's write lands between our read and our write: 409, re-read,
        and the stored admission wins — counted by the engine, the Job started under it."""
        cluster.apply(h.flavor("a", labels={"tier": "a"}), h.flavor("b", labels={"tier": "b"}),
                      h.cluster_queue("team", quotas={"a": {"cpu": 4}, "b": {"cpu": 4}}),
                      h.local_queue("main", "team"))
        foreign = {"clusterQueue": "team", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "b"}, "count": 1, "resourceUsage": {"cpu": "1"}}]}
        done: list[bool] = []

        def late_write(request: kmock.Request) -> None:
            path = str(request.url).split("?")[0]
            if done or not path.endswith("/status"):
                return
            done.append(True)
            name = path.split("/")[-2]
            cluster.patch(h.API, "Workload", name, {"status": {
                "admission": foreign,
                "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "x",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                               {"type": "Admitted", "status": "True", "reason": "x",
                                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
                namespace="default", subresource="status")

        cluster.handler["patch", WORKLOADS] >> late_write
        with h.Running(cluster, certs) as running:
            call(cluster.url, "POST", JOBS, h.job("j"))
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
            job = h.get_job(cluster, "j")
            assert job["spec"]["template"]["spec"]["nodeSelector"] == {"tier": "b"}
            assert h.workload_of(cluster, "j")["status"]["admission"] == foreign
            engine = running.operator.controller.engine
            assert engine is not None
            name = h.workload_of(cluster, "j")["metadata"]["name"]
            held = engine.cache.holding(f"default/{name}")
            assert held is not None and held.admission.pod_sets[0].flavors == {"cpu": "b"}
            assert running.operator.metrics.forgotten._value.get() == 1


class TestUnfinishedStarts:
    def test_a_job_admitted_by_a_dead_leader_is_started_without_a_new_decision(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """The previous leader stored the admission and died before unsuspending the Job."""
        cluster.apply(h.flavor("a", labels={"tier": "a"}),
                      h.cluster_queue("team", quotas={"a": {"cpu": 1}}),
                      h.local_queue("main", "team"))
        job = cluster.create(dict(h.job("orphan"), spec=dict(h.job("orphan")["spec"],
                                                             suspend=True)))
        manifest = jobs.workload_for(job, queue="main", priority=0, priority_class=None)
        manifest["status"] = {
            "admission": {"clusterQueue": "team", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "a"}, "count": 1,
                 "resourceUsage": {"cpu": "1"}}]},
            "conditions": [{"type": t, "status": "True", "reason": t, "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for t in ("QuotaReserved", "Admitted")]}
        cluster.create(manifest)
        cluster.create(dict(h.job("waiting"), spec=dict(h.job("waiting")["spec"], suspend=True)))
        with h.Running(cluster, certs) as running:
            h.wait(cluster, lambda: h.running(cluster, "orphan"), "the orphan Job to start")
            assert h.get_job(cluster, "orphan")["spec"]["template"]["spec"]["nodeSelector"] == \
                {"tier": "a"}
            h.wait(cluster, lambda: h.workload_of(cluster, "waiting"), "the other Workload")
            running.quiet()
            assert not h.running(cluster, "waiting")  # the quota is the orphan's
        assert admissions_written(cluster) == {}  # nothing decided again
