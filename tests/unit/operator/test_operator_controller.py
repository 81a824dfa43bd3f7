"""The controller: watched objects become engine calls; a rebuild counts held quota first."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator.controller import Controller
from kuota.operator.kinds import jobs
from kuota.operator.settings import Options
from quota.lifecycle import State
from quota.resources import FlavorResource
from quota.workload import Admission

API = "kuota.dev/v1alpha1"
SPOT_CPU = FlavorResource("spot", "cpu")


class FakeActions:
    """Records what the controller asks to be written."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.synced: list[str] = []
        self.problems: list[tuple[str, str]] = []
        self.adopted: dict[str, Admission] = {}
        self.ready: list[str] = []
        self.deleted: list[str] = []

    def create_workload(self, job_key: str) -> None:
        self.created.append(job_key)

    def sync_owner(self, job_key: str) -> None:
        self.synced.append(job_key)

    def workload_problem(self, key: str, message: str) -> None:
        self.problems.append((key, message))

    def pods_ready(self, key: str) -> None:
        self.ready.append(key)

    def adopt(self, key: str, admission: Admission) -> None:
        self.adopted[key] = admission

    def delete_workload(self, key: str) -> None:
        self.deleted.append(key)

    def create_group_workload(self, group_key: str) -> None:
        self.created.append(f"group:{group_key}")

    def sync_group(self, group_key: str) -> None: ...
    def ungate(self, owner: str) -> None: ...


_rv = iter(range(100, 100_000))


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resourceVersion": str(next(_rv)), **extra}
    if namespace:
        out["namespace"] = namespace
    return out


def queues(cpu: str = "4", *, borrowing: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    resource: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrowing is not None:
        resource["borrowingLimit"] = borrowing
    return [
        ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("ns")}),
        ("ResourceFlavor", {"apiVersion": API, "kind": "ResourceFlavor",
                            "metadata": meta("spot"), "spec": {}}),
        ("ClusterQueue", {"apiVersion": API, "kind": "ClusterQueue", "metadata": meta("team"),
                          "spec": {"namespaceSelector": {}, "resourceGroups": [
                              {"coveredResources": ["cpu"], "flavors": [
                                  {"name": "spot", "resources": [resource]}]}]}}),
        ("LocalQueue", {"apiVersion": API, "kind": "LocalQueue", "metadata": meta("main", "ns"),
                        "spec": {"clusterQueue": "team"}}),
    ]


def workload(name: str, cpus: int, *, admitted: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API, "kind": "Workload",
        "metadata": meta(name, "ns", creationTimestamp="2026-01-01T00:00:00Z"),
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": cpus, "template": {
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    if admitted:
        body["status"] = {
            "admission": {"clusterQueue": "team", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "spot"}, "count": cpus,
                 "resourceUsage": {"cpu": str(cpus)}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True"},
                           {"type": "Admitted", "status": "True"}]}
    return body


def leading(*objects: tuple[str, dict[str, Any]]) -> tuple[Controller, FakeActions]:
    controller = Controller(Options(), clock=lambda: 1000.0)
    for kind, body in objects:
        controller.observe(kind, body)
    actions = FakeActions()
    controller.rebuild(actions)
    return controller, actions


class TestRebuild:
    def test_held_quota_is_counted_before_any_cycle(self) -> None:
        # Listed in the "wrong" order: the waiting workload first.
        controller, actions = leading(*queues("4"), ("Workload", workload("new", 2)),
                                      ("Workload", workload("old", 3, admitted=True)))
        engine = controller.engine
        assert engine is not None
        assert engine.records["ns/old"].state is State.ADMITTED
        assert set(actions.adopted) == {"ns/old"}
        engine.run_until_idle(1000)
        assert engine.records["ns/new"].state is State.PENDING  # 3 + 2 > 4: never double-admit
        assert engine.drain_outbox() == []

    def test_finished_and_inactive_workloads_hold_nothing(self) -> None:
        done = workload("done", 4, admitted=True)
        done["status"]["conditions"].append({"type": "Finished", "status": "True"})
        off = dict(workload("off", 4), spec=dict(workload("off", 4)["spec"], active=False))
        controller, _ = leading(*queues("4"), ("Workload", done), ("Workload", off),
                                ("Workload", workload("next", 4)))
        assert controller.engine is not None
        controller.engine.run_until_idle(1000)
        assert controller.engine.records["ns/next"].state is State.ADMITTED
        assert "ns/done" not in controller.engine.records


    def test_in_slices_events_that_come_meanwhile_are_ingested_after(self) -> None:
        """A rebuild in slices lets other work run between them; what the watches say
        meanwhile waits, then counts as if it had come just after."""
        controller = Controller(Options(), clock=lambda: 1000.0)
        for kind, body in (*queues("4"), *(("Workload", workload(f"w{i}", 1))
                                           for i in range(5))):
            controller.observe(kind, body)
        steps = controller.rebuilding(FakeActions(), slice_size=2)
        # Four objects (namespace, flavor, queues) in two slices; then two Workloads read.
        for _ in range(3):
            next(steps)
        engine = controller.engine
        assert engine is not None and len(engine.records) == 2
        bigger = queues("8")[2][1]
        bigger["metadata"] = meta("team")
        controller.observe("ClusterQueue", bigger)
        controller.observe("Workload", workload("late", 1))
        assert engine.cache.cluster_queues["team"].quotas[SPOT_CPU].nominal == 4000
        assert list(steps) == [None]  # (one more pause: four read; then the last one)
        assert engine.cache.cluster_queues["team"].quotas[SPOT_CPU].nominal == 8000
        assert sorted(engine.records) == sorted(f"ns/{n}" for n in
                                                ("w0", "w1", "w2", "w3", "w4", "late"))
        engine.run_until_idle(1000)
        assert all(r.state is State.ADMITTED for r in engine.records.values())

    def test_queue_objects_are_read_in_slices_and_applied_once_at_their_end(self) -> None:
        # 1,000 ClusterQueues and LocalQueues took half a second to read and check: a pause
        # every slice, as for Workloads. The engine takes them in one batch, at the end.
        controller = Controller(Options(), clock=lambda: 1000.0)
        objects = queues("4")
        for kind, body in objects:
            controller.observe(kind, body)
        pauses = 0
        for _ in controller.rebuilding(FakeActions(), slice_size=1):
            pauses += 1
            engine = controller.engine
            assert engine is not None
            if pauses < len(objects):  # (the last pause comes after the LocalQueue)
                assert "team" not in engine.cache.tree.queues  # (not yet in the quota tree)
        assert pauses == len(objects)
        assert engine is not None
        assert "team" in engine.cache.tree.queues and "ns/main" in engine.cache.local_queues


class TestConfigs:
    def test_a_bad_cluster_queue_is_kept_out_with_its_problem(self) -> None:
        objects = queues("4", borrowing="2")  # borrowingLimit without a cohort
        controller, _ = leading(*objects, ("Workload", workload("w", 1)))
        assert controller.engine is not None
        assert "team" not in controller.engine.cache.cluster_queues
        assert "borrowingLimit" in controller.problems["ClusterQueue/team"]
        assert controller.engine.records["ns/w"].pending_reason == "ClusterQueueNotFound"

        fixed = queues("4")[2][1]
        controller.observe("ClusterQueue", fixed)
        assert "ClusterQueue/team" not in controller.problems
        controller.engine.run_until_idle(1000)
        assert controller.engine.records["ns/w"].state is State.ADMITTED

    def test_status_echoes_do_not_reconfigure(self) -> None:
        controller, _ = leading(*queues("4"))
        assert controller.engine is not None
        generation = controller.engine.cache.generation
        cq = dict(queues("4")[2][1], status={"pendingWorkloads": 3})
        controller.observe("ClusterQueue", cq)
        assert controller.engine.cache.generation == generation


class TestJobsAndWorkloads:
    def job(self, **status: Any) -> dict[str, Any]:
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": meta("train", "ns", uid="u-1",
                                 labels={"kuota.dev/queue-name": "main"}),
                "spec": {"parallelism": 1, "suspend": True, "template": {"spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}},
                "status": status}

    def test_a_job_asks_for_its_workload_then_follows_it(self) -> None:
        controller, actions = leading(*queues("4"))
        controller.observe("Job", self.job())
        assert actions.created == ["Job:ns/train"]
        body = jobs.workload_for(self.job(), queue="main", priority=0, priority_class=None)
        body["metadata"].update(resourceVersion=str(next(_rv)),
                                creationTimestamp="2026-01-01T00:00:00Z")
        controller.observe("Workload", body)
        assert controller.owners.workload_of_owner["Job:ns/train"] == "ns/job-train-u-1"
        assert controller.engine is not None
        controller.engine.run_until_idle(1000)
        finished = self.job(conditions=[{"type": "Complete", "status": "True"}])
        controller.observe("Job", finished)
        record = controller.engine.records["ns/job-train-u-1"]
        assert record.state is State.FINISHED
        assert controller.owners.finish_reasons["ns/job-train-u-1"] == "Succeeded"
        assert controller.engine.cache.holding("ns/job-train-u-1") is None

    def test_a_deleted_workload_releases_its_quota(self) -> None:
        controller, _ = leading(*queues("4"), ("Workload", workload("w", 4, admitted=True)))
        assert controller.engine is not None
        controller.observe("Workload", workload("w", 4, admitted=True), deleted=True)
        assert controller.engine.cache.holding("ns/w") is None
        assert "ns/w" not in controller.engine.records

    def test_an_invalid_workload_is_reported_not_queued(self) -> None:
        bad = workload("bad", 1)
        bad["spec"]["podSets"][0]["count"] = -1
        controller, actions = leading(*queues("4"), ("Workload", bad))
        assert controller.engine is not None and "ns/bad" not in controller.engine.records
        assert actions.problems and "podSets[0].count" in actions.problems[0][1]


def job(uid: str = "u-1", **meta_extra: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": meta("train", "ns", uid=uid, labels={"kuota.dev/queue-name": "main"},
                             **meta_extra),
            "spec": {"parallelism": 2, "suspend": False, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}


def job_workload(*, evicted: bool = False) -> dict[str, Any]:
    """The Workload kuota made for job(), admitted (and, with ``evicted``, being evicted)."""
    body = jobs.workload_for(job(), queue="main", priority=0, priority_class=None)
    body["metadata"].update(resourceVersion=str(next(_rv)),
                            creationTimestamp="2026-01-01T00:00:00Z")
    body["status"] = workload("x", 2, admitted=True)["status"]
    if evicted:
        body["status"]["conditions"].append(
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "room"})
    return body


WL = "ns/job-train-u-1"


class TestJobsGoing:
    @pytest.mark.parametrize(("how", "want_created"), [
        ("deleted", []),
        ("being deleted", []),  # foreground, or a finalizer: the Job is still there
        ("orphaned", []),  # deleted with the default propagation: the GC freed the Workload
        ("replaced", ["Job:ns/train"]),  # a new Job of the same name gets its own Workload
    ])
    def test_the_workload_of_a_job_going_away_is_deleted(self, how: str,
                                                         want_created: list[str]) -> None:
        controller, actions = leading(*queues("4"), ("Job", job()), ("Workload", job_workload()))
        assert controller.engine is not None
        assert controller.engine.records[WL].state is State.ADMITTED
        gone = job_workload()
        if how == "deleted":
            controller.observe("Job", job(), deleted=True)
        elif how == "being deleted":
            controller.observe("Job", job(deletionTimestamp="2026-01-01T00:00:00Z",
                                          finalizers=["foregroundDeletion"]))
        elif how == "replaced":
            controller.observe("Job", job(uid="u-2"))
        else:  # the garbage collector stripped its owner reference
            del gone["metadata"]["ownerReferences"]
            controller.observe("Workload", gone)
            assert controller.engine.records[WL].state is State.FINISHED  # released at once
        assert actions.deleted == [WL]
        controller.observe("Workload", gone, deleted=True)  # the deletion is seen
        assert WL not in controller.engine.records
        assert controller.engine.cache.holding(WL) is None
        assert actions.created == want_created

    def test_a_job_being_deleted_gets_no_workload(self) -> None:
        controller, actions = leading(*queues("4"))
        controller.observe("Job", job(deletionTimestamp="2026-01-01T00:00:00Z"))
        assert actions.created == []

    def test_a_restart_deletes_workloads_whose_job_is_gone(self) -> None:
        controller, actions = leading(*queues("4"), ("Workload", job_workload()))
        assert actions.deleted == [WL]
        assert controller.engine is not None and controller.engine.cache.holding(WL) is None


class TestEvictingAcrossRestarts:
    @pytest.mark.parametrize(("status", "want_state", "want_held"), [
        ({"active": 2}, State.EVICTING, True),  # its pods still run
        ({"active": 0, "terminating": 1}, State.EVICTING, True),
        ({}, State.PENDING, False),  # stopped while the operator was away
    ])
    def test_an_evicted_workload_is_restored_holding_until_its_pods_go(
            self, status: dict[str, int], want_state: State, want_held: bool) -> None:
        suspended = job()
        suspended["spec"]["suspend"] = True
        suspended["status"] = status
        controller, _ = leading(*queues("4"), ("Job", suspended),
                                ("Workload", job_workload(evicted=True)))
        engine = controller.engine
        assert engine is not None
        assert engine.records[WL].state is want_state
        assert (engine.cache.holding(WL) is not None) is want_held
        if want_held:
            gone = dict(suspended, metadata=dict(suspended["metadata"],
                                                 resourceVersion=str(next(_rv))), status={})
            controller.observe("Job", gone)
            assert engine.records[WL].state is State.PENDING
        assert [e.kind.value for e in engine.drain_outbox()] == ["Evicted"]


    def test_an_inactive_workload_still_holding_quota_is_counted_until_stopped(
            self) -> None:
        running = job()
        running["status"] = {"active": 2}
        off = job_workload(evicted=True)
        off["spec"]["active"] = False
        controller, _ = leading(*queues("4"), ("Job", running), ("Workload", off))
        engine = controller.engine
        assert engine is not None
        assert engine.records[WL].state is State.EVICTING and engine.cache.holding(WL)
        stopped = dict(running, metadata=dict(running["metadata"],
                                              resourceVersion=str(next(_rv))),
                       spec=dict(running["spec"], suspend=True), status={})
        controller.observe("Job", stopped)
        assert engine.records[WL].state is State.INACTIVE
        assert engine.cache.holding(WL) is None


def group_pod(name: str, *, terminating: bool = False) -> dict[str, Any]:
    extra: dict[str, Any] = {"labels": {"kuota.dev/pod-group-name": "g",
                                        "kuota.dev/queue-name": "main"},
                             "annotations": {"kuota.dev/pod-group-total-count": "2"}}
    if terminating:
        extra["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, "ns", **extra),
            "spec": {"containers": [{"name": "c"}]}}


class TestGroups:
    def test_terminating_pods_do_not_complete_a_group(self) -> None:
        controller, actions = leading(*queues("4"))
        controller.observe("Pod", group_pod("a", terminating=True))
        controller.observe("Pod", group_pod("b"))
        assert actions.created == []
        controller.observe("Pod", group_pod("c"))
        assert actions.created == ["group:ns/g"]

    @pytest.mark.parametrize("last", ["deleted", "terminating"])
    def test_a_group_without_live_pods_loses_its_workload(self, last: str) -> None:
        body = workload("group-g", 2)
        body["metadata"]["labels"] = {"kuota.dev/pod-group": "g"}
        controller, actions = leading(*queues("4"), ("Pod", group_pod("a")),
                                      ("Pod", group_pod("b")), ("Workload", body))
        controller.observe("Pod", group_pod("a"), deleted=True)
        assert actions.deleted == []
        if last == "deleted":
            controller.observe("Pod", group_pod("b"), deleted=True)
        else:
            controller.observe("Pod", group_pod("b", terminating=True))
        assert actions.deleted == ["ns/group-g"]
