"""What real clusters do that a quick look misses: Jobs that ran, deletions, dying pods.

The emulator enforces the API server's rules (a Job's template changes only
while it is suspended without ``status.startTime``; Jobs orphan their
dependents unless told otherwise; pods bound to a node terminate gracefully)
but runs no controller: the tests play the Job controller (``startTime``,
``active``, ``terminating``) and the kubelet (a DELETE with grace period 0,
or removing a test finalizer that holds a pod).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
HOLD = "example.com/hold"  # a finalizer standing for a pod's containers still stopping
STARTED_AT = "2026-01-01T00:00:00Z"
Body = dict[str, Any]


def two_flavors(api: Emulator) -> None:
    """fast and slow, 2 CPUs each; preemption of lower priorities in the queue."""
    api.apply(h.flavor("fast", labels={"tier": "fast"}), h.flavor("slow", labels={"tier": "slow"}),
              h.cluster_queue("team", quotas={"fast": {"cpu": 2}, "slow": {"cpu": 2}},
                              preemption={"withinClusterQueue": "LowerPriority"}),
              h.local_queue("main", "team"), h.priority_class("low", 10),
              h.priority_class("high", 1000))


def play_job_controller(api: Emulator, name: str, **status: Any) -> None:
    api.patch("batch/v1", "Job", name, {"status": status}, namespace="default",
              subresource="status")


def events(api: Emulator, name: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event in api.list("v1", "Event", "default"):
        if event["involvedObject"]["name"] == name:
            out.setdefault(event["reason"], []).append(event["message"])
    return out


def selector(api: Emulator, job: str) -> dict[str, str]:
    return h.get_job(api, job)["spec"]["template"]["spec"].get("nodeSelector") or {}


class TestAJobThatRan:
    def test_it_is_restored_holds_its_quota_until_its_pods_go_and_restarts_elsewhere(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        two_flavors(cluster)
        with h.Running(cluster, certs) as running:
            call(cluster.url, "POST", JOBS, h.job("low", cpu="1", parallelism=2,
                                                  priority_class="low"))
            h.wait(cluster, lambda: h.running(cluster, "low"), "the low Job to start")
            assert selector(cluster, "low") == {"tier": "fast"}
            play_job_controller(cluster, "low", startTime=STARTED_AT, active=2)
            # Only the fast flavor suits it: it preempts low there.
            call(cluster.url, "POST", JOBS, h.job("high", cpu="1", parallelism=2,
                                                  priority_class="high",
                                                  node_selector={"tier": "fast"}))
            h.wait(cluster, lambda: h.get_job(cluster, "low")["spec"]["suspend"] is True,
                   "the low Job to be suspended")
            running.quiet()
            low = h.workload_of(cluster, "low")
            assert h.is_true(low, "Evicted") and h.is_true(low, "Preempted")
            assert h.is_true(low, "QuotaReserved")  # its pods still run: quota held
            assert not h.running(cluster, "high")
            assert selector(cluster, "low") == {"tier": "fast"}  # not restorable yet

            play_job_controller(cluster, "low", startTime=STARTED_AT, active=0, terminating=2)
            running.quiet()
            assert not h.running(cluster, "high")  # terminating pods still use the nodes
            play_job_controller(cluster, "low", startTime=STARTED_AT, active=0, terminating=0)

            h.wait(cluster, lambda: h.running(cluster, "high"), "the high Job to start")
            h.wait(cluster, lambda: h.running(cluster, "low")
                   and selector(cluster, "low") == {"tier": "slow"},
                   "the low Job to start again on the other flavor")
            low_job = h.get_job(cluster, "low")
            assert "startTime" not in (low_job.get("status") or {})  # cleared through status
            assert h.workload_of(cluster, "low")["status"]["admission"][
                "podSetAssignments"][0]["flavors"] == {"cpu": "slow"}
            assert "JobNotStopped" not in events(cluster, "low")

    def test_a_refused_write_is_reported_and_tried_again(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs):
            refusal = cluster.faults.fail(status=422, times=2, plural="jobs", verbs={"patch"},
                                          message="refused by a test policy")
            call(cluster.url, "POST", JOBS, h.job("j"))
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start after all",
                   timeout=20)
            assert refusal.hits == 2
            wl = h.workload_of(cluster, "j")
            for name in ("j", wl["metadata"]["name"]):
                found = h.wait(cluster, lambda n=name: events(cluster, n).get("JobNotStarted"),
                               f"a JobNotStarted Event on {name}")
                assert len(found) == 1 and "refused by a test policy" in found[0]


def blocking_pod(api: Emulator, job: str, name: str) -> None:
    """A pod of ``job`` bound to a node: a foreground deletion waits for it."""
    owner = h.get_job(api, job)
    api.create({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": job,
                     "uid": owner["metadata"]["uid"], "controller": True,
                     "blockOwnerDeletion": True}]},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})


class TestDeletingAJob:
    @pytest.mark.parametrize(("query", "want_job_lingers"), [
        ("", False),  # batch/v1's default: orphan (the Workload would be left behind)
        ("?propagationPolicy=Background", False),
        ("?propagationPolicy=Foreground", True),  # the Job waits for its terminating pod
    ])
    def test_its_workload_goes_and_is_not_made_again(
            self, cluster: Emulator, certs: pathlib.Path, query: str,
            want_job_lingers: bool) -> None:
        cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs) as running:
            call(cluster.url, "POST", JOBS, h.job("first", parallelism=2))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            blocking_pod(cluster, "first", "first-0")
            call(cluster.url, "POST", JOBS, h.job("second", parallelism=2))
            h.wait(cluster, lambda: h.workload_of(cluster, "second"), "the second Workload")

            assert call(cluster.url, "DELETE", f"{JOBS}/first{query}").status == 200
            h.wait(cluster, lambda: h.running(cluster, "second"), "the second Job to start")
            running.quiet()
            assert h.workload_of(cluster, "first") is None
            orphans = [w for w in cluster.list(h.API, "Workload", "default")
                       if not w["metadata"].get("ownerReferences")]
            assert orphans == []
            lingering = cluster.find("batch/v1", "Job", "first", "default")
            assert (lingering is not None) is want_job_lingers
            cluster.delete("v1", "Pod", "first-0", "default", grace_period=0)  # the kubelet
            running.quiet()
            assert cluster.find("batch/v1", "Job", "first", "default") is None
            assert h.workload_of(cluster, "first") is None


    def test_a_failed_workload_deletion_is_tried_again(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs):
            call(cluster.url, "POST", JOBS, h.job("first", parallelism=2))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the Job to start")
            fault = cluster.faults.fail(status=500, times=1, plural="workloads",
                                        verbs={"delete"})
            call(cluster.url, "DELETE", f"{JOBS}/first")  # orphans the Workload
            h.wait(cluster, lambda: h.workload_of(cluster, "first") is None and not [
                w for w in cluster.list(h.API, "Workload", "default")],
                "the Workload deleted after all")
            assert fault.hits == 1


def group_pod(name: str, *, group: str = "g", total: int = 2, cpu: str = "1",
              priority_class: str | None = None) -> Body:
    labels = {"kuota.dev/pod-group-name": group, "kuota.dev/queue-name": "main"}
    if priority_class:
        labels["kuota.dev/priority-class"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "finalizers": [HOLD],
                         "annotations": {"kuota.dev/pod-group-total-count": str(total)}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def release(api: Emulator, *pods: str) -> None:
    """Play the kubelet: the pods' containers stopped."""
    for name in pods:
        api.patch("v1", "Pod", name, {"metadata": {"finalizers": None}}, namespace="default")


def gated(api: Emulator, name: str) -> bool:
    return bool(api.get("v1", "Pod", name, "default")["spec"].get("schedulingGates"))


class TestDyingPods:
    def test_an_evicted_group_holds_its_quota_until_its_pods_are_gone(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"),
                      h.cluster_queue("team", quotas={"default": {"cpu": 2}},
                                      preemption={"withinClusterQueue": "LowerPriority"}),
                      h.local_queue("main", "team"), h.priority_class("low", 10),
                      h.priority_class("high", 1000))
        with h.Running(cluster, certs) as running:
            for name in ("low-a", "low-b"):
                call(cluster.url, "POST", PODS, group_pod(name, group="low",
                                                          priority_class="low"))
            h.wait(cluster, lambda: not gated(cluster, "low-a") and not gated(cluster, "low-b"),
                   "the low group to start")
            for name in ("high-a", "high-b"):
                call(cluster.url, "POST", PODS, group_pod(name, group="high",
                                                          priority_class="high"))
            h.wait(cluster, lambda: all(cluster.get("v1", "Pod", n, "default")["metadata"]
                                        .get("deletionTimestamp") for n in ("low-a", "low-b")),
                   "the low group's pods to be deleted")
            running.quiet()  # several syncs of both groups meanwhile
            assert gated(cluster, "high-a") and gated(cluster, "high-b")
            low = cluster.get(h.API, "Workload", "group-low", "default")
            assert h.is_true(low, "Evicted") and h.is_true(low, "QuotaReserved")
            deletes = [r for r in cluster.handler if r.method.value == "DELETE"
                       and "/pods/low-" in r.url.path]
            assert len(deletes) == 2  # once each: terminating pods are left to die
            assert [len(events(cluster, n).get("Stopped", [])) for n in ("low-a", "low-b")] \
                == [1, 1]

            release(cluster, "low-a")
            running.quiet()
            assert gated(cluster, "high-a")  # low-b still runs
            release(cluster, "low-b")
            h.wait(cluster, lambda: not gated(cluster, "high-a") and not gated(cluster, "high-b"),
                   "the high group to start once the low pods are gone")
            # Nothing of the low group is left: its Workload goes with it.
            h.wait(cluster, lambda: cluster.find(h.API, "Workload", "group-low", "default")
                   is None, "the low group's Workload to go")

    def test_terminating_pods_do_not_make_a_group_and_a_deleted_group_loses_its_workload(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 2}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs) as running:
            call(cluster.url, "POST", PODS, group_pod("a"))
            call(cluster.url, "DELETE", f"{PODS}/a")  # held by its finalizer: terminating
            call(cluster.url, "POST", PODS, group_pod("b"))
            running.quiet()
            assert cluster.find(h.API, "Workload", "group-g", "default") is None  # 1 of 2
            call(cluster.url, "POST", PODS, group_pod("c"))
            h.wait(cluster, lambda: not gated(cluster, "b") and not gated(cluster, "c"),
                   "the group of b and c to start")
            wl = cluster.get(h.API, "Workload", "group-g", "default")
            assert [p["count"] for p in wl["spec"]["podSets"]] == [2]

            for name in ("b", "c"):  # the user deletes the group; its pods take time to go
                call(cluster.url, "DELETE", f"{PODS}/{name}")
            h.wait(cluster, lambda: cluster.find(h.API, "Workload", "group-g", "default")
                   is None, "the group's Workload to be deleted")
            cq = h.wait(cluster, lambda: (s := cluster.get(h.API, "ClusterQueue", "team")
                                          .get("status") or {}).get("reservingWorkloads") == 0
                        and s, "the quota to be released")
            assert cq["flavorsReservation"][0]["resources"][0]["total"] == "0"
            release(cluster, "a", "b", "c")
