"""A queue-labelled Job end to end: suspended, a Workload, admitted, started, finished.

The operator runs in-process against the emulator; Jobs are created over
HTTP, so the emulator calls the operator's webhook over HTTPS first.
"""

from __future__ import annotations

import pathlib

from kuota.operator.retries import RetryPolicy
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
        with h.Running(cluster, certs) as running:
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
            # As Kueue: the Job names its Workload in an Event.
            created_events = h.wait(cluster, lambda: [
                e for e in cluster.list("v1", "Event", "default")
                if e["reason"] == "CreatedWorkload" and e["involvedObject"]["name"] == "train"],
                "the CreatedWorkload Event on the Job")
            assert [(e["type"], e["message"]) for e in created_events] == [
                ("Normal", f"Created Workload: default/{wl['metadata']['name']}")]
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
            # Its Finished condition stored, the operator keeps no record of it (as after a
            # restart), and the Job, still there, gets no second Workload.
            engine = running.operator.controller.engine
            key = f"default/{wl['metadata']['name']}"
            h.wait(cluster, lambda: engine is not None and key not in engine.records,
                   "the finished Workload forgotten")
            cluster.patch("batch/v1", "Job", "train", {"metadata": {"labels": {"seen": "1"}}},
                          namespace="default")
            running.quiet()
            owned = [w for w in cluster.list(h.API, "Workload", "default")
                     if any(r.get("name") == "train"
                            for r in w["metadata"].get("ownerReferences") or [])]
            assert [w["metadata"]["name"] for w in owned] == [wl["metadata"]["name"]]


class TestWaiting:
    def test_a_second_job_waits_whole_and_starts_when_quota_frees(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster, cpu=4)
        with h.Running(cluster, certs) as running:
            call(cluster.url, "POST", JOBS, h.job("first", parallelism=3))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            call(cluster.url, "POST", JOBS, h.job("second", parallelism=2))

            def why() -> str | None:
                found = h.condition(h.workload_of(cluster, "second"), "QuotaReserved")
                return (found or {}).get("message") if (found or {}).get("status") == "False" \
                    and found.get("reason") != "Pending" else None

            message = h.wait(cluster, why, "the second Workload to say why it waits")
            assert "insufficient" in message.lower() or "quota" in message.lower(), message
            running.quiet()
            assert not h.running(cluster, "second")  # no part of the gang started

            h.complete(cluster, "first")
            h.wait(cluster, lambda: h.running(cluster, "second"), "the second Job to start")
            wl = h.workload_of(cluster, "second")
            assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 2

    def test_reasons_are_written_a_few_per_status_sync_oldest_first(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster, cpu=1)
        with h.Running(cluster, certs, status_interval=1.0, reason_writes=2):
            call(cluster.url, "POST", JOBS, h.job("first"))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            waiting = [f"wait-{i}" for i in range(6)]
            for name in waiting:
                call(cluster.url, "POST", JOBS, h.job(name))

            def told() -> list[str]:
                out = []
                for name in waiting:
                    found = h.condition(h.workload_of(cluster, name), "QuotaReserved") or {}
                    if found.get("status") == "False" and found.get("reason") != "Pending":
                        out.append(name)
                return out

            first = h.wait(cluster, told, "a waiting Workload to say why it waits")
            assert len(first) <= 2, first  # one sync's share; the next is a second away
            assert set(first) <= {"wait-0", "wait-1", "wait-2"}, first
            h.wait(cluster, lambda: len(told()) == len(waiting),
                   "every waiting Workload to say why, a few per sync")

    def test_deleting_a_running_job_frees_its_quota(self, cluster: Emulator,
                                                    certs: pathlib.Path) -> None:
        setup_queues(cluster, cpu=2)
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("first", parallelism=2))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            call(cluster.url, "POST", JOBS, h.job("second", parallelism=2))
            h.wait(cluster, lambda: h.workload_of(cluster, "second"), "the second Workload")
            cluster.delete("batch/v1", "Job", "first", "default")  # its Workload goes too
            h.wait(cluster, lambda: h.running(cluster, "second"), "the second Job to start")

    def test_a_job_unsuspended_by_someone_else_is_suspended_again(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster, cpu=1)
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("big", parallelism=2))
            h.wait(cluster, lambda: h.workload_of(cluster, "big"), "the Workload")
            cluster.patch("batch/v1", "Job", "big", {"spec": {"suspend": False}},
                          namespace="default")
            h.wait(cluster, lambda: h.get_job(cluster, "big")["spec"]["suspend"] is True,
                   "the Job to be suspended again")

    def test_a_bad_queue_label_is_rejected_and_unlabelled_jobs_are_left_alone(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        with h.Running(cluster, certs):
            bad = call(cluster.url, "POST", JOBS, h.job("bad", queue="Not_A_Name"))
            plain = call(cluster.url, "POST", JOBS, h.job("plain", queue=None))
            kueue = call(cluster.url, "POST", JOBS, h.job("kueue", kueue_label=True))
            h.wait(cluster, lambda: h.running(cluster, "kueue"), "the Kueue-labelled Job")
        assert bad.status == 422 and "kuota.dev/queue-name" in bad.data["message"]
        assert plain.status == 201 and plain.data["spec"]["suspend"] is False
        assert h.workload_of(cluster, "plain") is None
        assert kueue.data["spec"]["suspend"] is True


class TestDefaultQueue:
    def test_unlabelled_jobs_use_the_default_local_queue_when_opted_in(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        h.namespace(cluster, "elsewhere")
        cluster.apply(h.local_queue("default", "team"))
        with h.Running(cluster, certs, default_queue=True):
            mine = call(cluster.url, "POST", JOBS, h.job("unlabelled", queue=None))
            other = call(cluster.url, "POST", "/apis/batch/v1/namespaces/elsewhere/jobs",
                         h.job("other", queue=None, namespace="elsewhere"))
            assert mine.data["spec"]["suspend"] is True
            h.wait(cluster, lambda: h.running(cluster, "unlabelled"), "the Job to start")
            assert h.workload_of(cluster, "unlabelled")["spec"]["queueName"] == "default"
        assert other.data["spec"]["suspend"] is False  # no LocalQueue "default" there
        assert h.workload_of(cluster, "other", "elsewhere") is None

    def test_unlabelled_deployments_are_labelled_for_the_default_local_queue(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        h.namespace(cluster, "elsewhere")
        cluster.apply(h.local_queue("default", "team"))

        def deployment(namespace: str) -> dict:
            return {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": namespace},
                    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                                 "containers": [{"name": "c", "image": "x"}]}}}}

        with h.Running(cluster, certs, default_queue=True):
            mine = call(cluster.url, "POST", "/apis/apps/v1/namespaces/default/deployments",
                        deployment("default"))
            other = call(cluster.url, "POST",
                         "/apis/apps/v1/namespaces/elsewhere/deployments",
                         deployment("elsewhere"))
        assert mine.status == 201, mine.data
        assert mine.data["metadata"]["labels"] == {"kuota.dev/queue-name": "default"}
        assert mine.data["spec"]["template"]["metadata"]["labels"] == {
            "app": "web", "kuota.dev/queue-name": "default"}  # its pods are queued
        assert "labels" not in other.data["metadata"]  # no LocalQueue "default" there


class TestPartialAdmission:
    def test_a_job_with_min_parallelism_starts_smaller_and_is_restored(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster, cpu=2)
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job(
                "elastic", parallelism=4, annotations={"kuota.dev/job-min-parallelism": "2"}))
            h.wait(cluster, lambda: h.running(cluster, "elastic"), "the Job to start")
            job = h.get_job(cluster, "elastic")
            assert job["spec"]["parallelism"] == 2
            wl = h.workload_of(cluster, "elastic")
            assert wl["spec"]["podSets"][0]["minCount"] == 2
            assert wl["status"]["admission"]["podSetAssignments"][0]["count"] == 2


class TestCohorts:
    def test_a_job_borrows_idle_quota_of_its_cohort(self, cluster: Emulator,
                                                    certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"),
                      h.cluster_queue("team-a", quotas={"default": {"cpu": 2}}, cohort="org"),
                      h.cluster_queue("team-b", quotas={"default": {"cpu": 4}}, cohort="org"),
                      h.local_queue("a", "team-a"))
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("wide", queue="a", parallelism=5))
            h.wait(cluster, lambda: h.running(cluster, "wide"), "the borrowing Job to start")

            def reservation() -> list | None:
                status = cluster.get(h.API, "ClusterQueue", "team-a").get("status") or {}
                return status.get("flavorsReservation") if status.get("reservingWorkloads") \
                    else None

            got = h.wait(cluster, reservation, "team-a's reservation")
            assert got == [{"name": "default", "resources": [
                {"name": "cpu", "total": "5", "borrowed": "3"}]}]


class TestEviction:
    def test_preemption_suspends_the_job_and_restores_its_template(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("fast", labels={"tier": "fast"}),
                      h.cluster_queue("team", quotas={"fast": {"cpu": 2}},
                                      preemption={"withinClusterQueue": "LowerPriority"}),
                      h.local_queue("main", "team"),
                      h.priority_class("low", 10), h.priority_class("high", 1000))
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("low", parallelism=2, priority_class="low",
                                                  node_selector={"disk": "ssd"}))
            h.wait(cluster, lambda: h.running(cluster, "low"), "the low-priority Job to start")
            call(cluster.url, "POST", JOBS, h.job("high", parallelism=2, priority_class="high"))
            h.wait(cluster, lambda: h.running(cluster, "high"), "the high-priority Job to start")

            h.wait(cluster, lambda: h.get_job(cluster, "low")["spec"]["template"]["spec"]
                   ["nodeSelector"] == {"disk": "ssd"}, "the template to be restored")
            low = h.get_job(cluster, "low")
            assert low["spec"]["suspend"] is True
            assert "kuota.dev/original-pod-template" not in \
                (low["metadata"].get("annotations") or {})
            wl = h.workload_of(cluster, "low")
            assert h.is_true(wl, "Evicted") and h.is_true(wl, "Preempted")
            assert h.condition(wl, "Preempted")["reason"] == "InClusterQueue"
            assert not h.is_true(wl, "QuotaReserved") and "admission" not in wl["status"]
            assert h.workload_of(cluster, "high")["spec"]["priority"] == 1000
            def reasons() -> set[str]:
                return {e["reason"] for e in cluster.list("v1", "Event", "default")
                        if e["involvedObject"]["name"] == "low"}

            h.wait(cluster, lambda: {"Preempted", "Suspended"} <= reasons(),
                   "Events on the preempted Job")


class TestFailures:
    def test_a_conflict_on_the_status_write_is_retried(self, cluster: Emulator,
                                                       certs: pathlib.Path) -> None:
        setup_queues(cluster)
        with h.Running(cluster, certs) as running:
            fault = cluster.faults.fail(status=409, times=1, plural="workloads",
                                        subresource="status")
            call(cluster.url, "POST", JOBS, h.job("j"))
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
            assert fault.hits == 1
            assert running.operator.metrics.conflicts._value.get() >= 1
            assert running.operator.metrics.forgotten._value.get() == 0

    def test_a_failed_status_write_gives_the_quota_back_and_is_tried_again(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        # The client does not repeat the request here, so the write fails for the writer.
        with h.Running(cluster, certs, api_retry=RetryPolicy(attempts=1)) as running:
            fault = cluster.faults.fail(status=500, times=1, plural="workloads",
                                        subresource="status")
            call(cluster.url, "POST", JOBS, h.job("j"))
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
            assert fault.hits == 1
            assert running.operator.metrics.forgotten._value.get() == 1

    def test_malformed_jobs_and_workloads_do_not_stop_the_others(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("garbled", cpu="lots"))
            cluster.create({"apiVersion": h.API, "kind": "Workload",
                            "metadata": {"name": "hand-made", "namespace": "default"},
                            "spec": {"queueName": "main", "podSets": [
                                {"name": "main", "count": 1, "minCount": 5, "template": {
                                    "spec": {"containers": [{"name": "c"}]}}}]}})
            call(cluster.url, "POST", JOBS, h.job("fine"))
            h.wait(cluster, lambda: h.running(cluster, "fine"), "the good Job to start")

            def warnings() -> dict[str, str]:
                return {e["involvedObject"]["name"]: e["reason"]
                        for e in cluster.list("v1", "Event", "default") if e["type"] == "Warning"}

            got = h.wait(cluster, lambda: len(warnings()) == 2 and warnings(),
                         "a warning about each")
            assert got == {"garbled": "WorkloadNotCreated", "hand-made": "InvalidWorkload"}
            assert not h.running(cluster, "garbled")

    def test_a_bad_cluster_queue_is_inactive_while_the_others_work(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queues(cluster)
        broken = h.cluster_queue("broken", quotas={"spot": {"cpu": (2, 1)}})  # no cohort
        cluster.apply(broken, h.local_queue("to-broken", "broken"))
        with h.Running(cluster, certs) as running:
            def active(name: str) -> dict | None:
                return h.condition(cluster.get(h.API, "ClusterQueue", name), "Active")

            got = h.wait(cluster, lambda: active("broken"), "broken's Active condition")
            assert got["status"] == "False" and got["reason"] == "InvalidSpec"
            assert "borrowingLimit" in got["message"], got["message"]
            call(cluster.url, "POST", JOBS, h.job("fine"))
            call(cluster.url, "POST", JOBS, h.job("stuck", queue="to-broken"))
            h.wait(cluster, lambda: h.running(cluster, "fine"), "a Job in the good queue")
            assert active("team")["status"] == "True"
            running.quiet()
            assert not h.running(cluster, "stuck")


class TestUnrepresentableRequests:
    def test_a_request_overflowing_int64_milli_units_is_told_and_stops_nobody(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """As Kueue: a Job whose request saturates int64 milli-units gets a Workload that
        says it exceeds the maximum quota; the other Jobs run."""
        setup_queues(cluster)
        with h.Running(cluster, certs):
            assert call(cluster.url, "POST", JOBS,
                        h.job("huge", cpu="9223372036854776")).status == 201
            call(cluster.url, "POST", JOBS, h.job("fine", cpu="1"))
            h.wait(cluster, lambda: h.running(cluster, "fine"), "the other Job to run")
            reserved = h.wait(cluster, lambda: (c := h.condition(
                h.workload_of(cluster, "huge"), "QuotaReserved")) and c.get("reason") != "Pending"
                and c, "the huge Job's Workload to say why")
            assert (reserved["status"], reserved["reason"]) == ("False", "ExceedsMaxQuota")
            assert "too large to count" in reserved["message"]
            assert not h.running(cluster, "huge")
            # Issue 41: the Job says so too, as a Warning: waiting will not help.
            warned = h.wait(cluster, lambda: [
                e for e in cluster.list("v1", "Event", "default")
                if e["involvedObject"]["kind"] == "Job" and e["involvedObject"]["name"] == "huge"
                and e["type"] == "Warning" and e["reason"] == "ExceedsMaxQuota"],
                "the never-fits Warning on the Job")
            assert "can never be admitted as the queues are configured" \
                in warned[0]["message"]
