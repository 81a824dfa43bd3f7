"""The workload-kind contract: JobSets as Kueue builds them, started and stopped by the
generic templated kind, and the merge patch every kind writes."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.operator import kinds, webhooks
from kuota.operator.kinds import contract
from kuota.operator.kinds.jobsets import JOBSET
from quota import api
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission
from tests.emulator.patches import merge_patch

Body = dict[str, Any]
FLAVORS = {"a100": FlavorConfig("a100", {"gpu": "a100"},
                                tolerations=({"key": "gpu", "operator": "Exists",
                                              "effect": "NoSchedule"},)),
           "cpu": FlavorConfig("cpu", {"pool": "cpu"})}


def replicated(name: str, *, replicas: int = 1, parallelism: int | None = None,
               completions: int | None = None, selector: dict[str, str] | None = None,
               cpu: str = "1") -> Body:
    job_spec: Body = {"template": {"metadata": {"labels": {"role": name}},
                                   "spec": {"restartPolicy": "Never",
                                            "containers": [{"name": "c", "image": "x",
                                                            "resources": {"requests":
                                                                          {"cpu": cpu}}}]}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    if selector:
        job_spec["template"]["spec"]["nodeSelector"] = dict(selector)
    return {"name": name, "replicas": replicas, "template": {"spec": job_spec}}


def jobset(*roles: Body, suspend: bool | None = True, status: Body | None = None) -> Body:
    body: Body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                  "metadata": {"name": "train", "namespace": "ns", "uid": "abcdef-1",
                               "labels": {"kueue.x-k8s.io/queue-name": "main"},
                               "resourceVersion": "7"},
                  "spec": {"replicatedJobs": list(roles)}}
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    if status is not None:
        body["status"] = status
    return body


def admission(*pod_sets: tuple[str, int, str]) -> Admission:
    return Admission("cq", tuple(PodSetAdmission(name, count, {"cpu": flavor}, {"cpu": 1000})
                                 for name, count, flavor in pod_sets))


def applied(body: Body, write: contract.Write | None) -> Body:
    """``body`` after a write, as the API server applies its merge patch."""
    assert write is not None
    result: Body = merge_patch(body, write.patch)
    return result


def template_spec(body: Body, index: int) -> Body:
    return body["spec"]["replicatedJobs"][index]["template"]["spec"]["template"]["spec"]


class TestJobSetPodSets:
    @pytest.mark.parametrize(("roles", "want_sets"), [
        ([replicated("driver"), replicated("workers", replicas=3, parallelism=2)],
         [("driver", 1), ("workers", 6)]),
        ([replicated("w", replicas=2, parallelism=4, completions=3)], [("w", 6)]),
        ([replicated("w", replicas=0)], [("w", 0)]),
    ])
    def test_one_pod_set_per_replicated_job(self, roles: list[Body],
                                            want_sets: list[tuple[str, int]]) -> None:
        body = contract.workload_for(JOBSET, jobset(*roles), queue="main", priority=0,
                                     priority_class=None)
        assert [(ps["name"], ps["count"]) for ps in body["spec"]["podSets"]] == want_sets
        assert body["metadata"]["name"] == "jobset-train-abcde"
        assert body["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
        assert isinstance(api.parse_object(body), api.Workload)

    def test_the_workload_is_owned_by_its_jobset(self) -> None:
        body = contract.workload_for(JOBSET, jobset(replicated("w")), queue="main", priority=0,
                                     priority_class=None)
        assert kinds.owner_of(body["metadata"]) == "JobSet:ns/train"


class TestJobSetStartAndStop:
    def test_started_with_each_roles_flavor_then_restored(self) -> None:
        before = jobset(replicated("driver", selector={"zone": "a"}),
                        replicated("workers", replicas=2))
        given = admission(("driver", 1, "cpu"), ("workers", 2, "a100"))
        write = JOBSET.start_write(before, given, FLAVORS)
        assert write is not None and write.step == "start"
        running = applied(before, write)
        assert running["spec"]["suspend"] is False
        assert template_spec(running, 0)["nodeSelector"] == {"zone": "a", "pool": "cpu"}
        assert template_spec(running, 1)["nodeSelector"] == {"gpu": "a100"}
        assert template_spec(running, 1)["tolerations"] == [
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
        # The Workload still asks for what the user wrote, not what kuota added.
        assert JOBSET.pod_sets(running) == JOBSET.pod_sets(before)
        assert JOBSET.start_write(running, given, FLAVORS) is None  # idempotent

        stop = JOBSET.stop_write(running)
        assert stop is not None and stop.step == "suspend"
        suspended = applied(running, stop)
        suspended["status"] = {"replicatedJobsStatus": [{"name": "workers", "active": 2}]}
        assert JOBSET.stop_write(suspended) is None  # its Jobs still stop
        assert not JOBSET.stopped(suspended)
        suspended["status"]["replicatedJobsStatus"][0]["active"] = 0
        assert JOBSET.stopped(suspended)
        restore = JOBSET.stop_write(suspended)
        assert restore is not None and restore.step == "restore"
        restored = applied(suspended, restore)
        assert template_spec(restored, 0) == template_spec(before, 0)
        assert template_spec(restored, 1) == template_spec(before, 1)
        assert "annotations" not in restored["metadata"] \
            or not restored["metadata"]["annotations"]
        assert JOBSET.stop_write(restored) is None

    def test_one_running_under_another_admission_is_suspended_first(self) -> None:
        running = applied(jobset(replicated("w")),
                          JOBSET.start_write(jobset(replicated("w")),
                                             admission(("w", 1, "cpu")), FLAVORS))
        write = JOBSET.start_write(running, admission(("w", 1, "a100")), FLAVORS)
        assert write == contract.Write("suspend", {"spec": {"suspend": True}})

    def test_a_jobset_never_started_by_kuota_needs_no_restore(self) -> None:
        assert JOBSET.stop_write(jobset(replicated("w"))) is None


class TestJobSetStatus:
    @pytest.mark.parametrize(("conditions", "want"), [
        ([{"type": "Completed", "status": "True"}], "Succeeded"),
        ([{"type": "Failed", "status": "True", "reason": "FailurePolicy"}], "Failed"),
        ([{"type": "Completed", "status": "False"}], None),
        ([], None),
    ])
    def test_finished(self, conditions: list[Body], want: str | None) -> None:
        got = JOBSET.finished(jobset(replicated("w"), status={"conditions": conditions}))
        assert (got[0] if got else None) == want

    @pytest.mark.parametrize(("suspend", "statuses", "want"), [
        (False, [{"name": "a", "ready": 1}, {"name": "b", "ready": 1, "succeeded": 1}], True),
        (False, [{"name": "a", "ready": 1}, {"name": "b", "ready": 1}], False),
        (True, [{"name": "a", "ready": 1}, {"name": "b", "ready": 2}], False),
    ])
    def test_pods_ready_counts_replicas(self, suspend: bool, statuses: list[Body],
                                        want: bool) -> None:
        body = jobset(replicated("a"), replicated("b", replicas=2), suspend=suspend,
                      status={"replicatedJobsStatus": statuses})
        assert JOBSET.pods_ready(body) is want


class TestWebhook:
    @pytest.mark.parametrize(("owner_refs", "want"), [
        ([], True),
        # A JobSet's own Jobs run as their JobSet says.
        ([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "train",
           "uid": "u", "controller": True}], False),
        ([{"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u"}], True),
    ])
    def test_only_top_level_objects_are_suspended(self, owner_refs: list[Body],
                                                  want: bool) -> None:
        job = {"metadata": {"name": "j", "namespace": "ns", "ownerReferences": owner_refs,
                            "labels": {"kuota.dev/queue-name": "main"}}, "spec": {}}
        assert webhooks.needs_suspend(job, default_queue=False,
                                      queue_exists=lambda ns, name: True) is want


@pytest.mark.parametrize(("old", "new", "want"), [
    ({"a": 1}, {"a": 1}, None),
    ({"a": 1}, {"a": 2}, {"a": 2}),
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}, {"a": {"c": None}}),
    ({"l": [1, 2]}, {"l": [1, 3]}, {"l": [1, 3]}),  # lists whole
    ({}, {"n": {"x": 1}}, {"n": {"x": 1}}),
])
def test_merge_patch(old: Body, new: Body, want: Body | None) -> None:
    assert contract.merge_patch(old, new) == want


def pod_template(cpu: str = "1") -> Body:
    return {"spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def pytorchjob(*, suspend: bool | None = True, workers: int | None = 2) -> Body:
    specs: Body = {"Master": {"replicas": 1, "template": pod_template()},
                   "Worker": {"template": pod_template("2")}}
    if workers is not None:
        specs["Worker"]["replicas"] = workers
    run_policy: Body = {} if suspend is None else {"suspend": suspend}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "train", "namespace": "ns", "uid": "u-1"},
            "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": specs}}


def mpijob() -> Body:
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u-2"},
            "spec": {"runPolicy": {"suspend": True}, "mpiReplicaSpecs": {
                "Worker": {"replicas": 2, "template": pod_template()},
                "Launcher": {"replicas": 1, "template": pod_template()}}}}


def raycluster(*, autoscaling: bool = False) -> Body:
    spec: Body = {"suspend": True, "headGroupSpec": {"template": pod_template()},
                  "workerGroupSpecs": [{"groupName": "Small", "replicas": 2,
                                        "template": pod_template()},
                                       {"groupName": "tpu", "replicas": 1, "numOfHosts": 4,
                                        "template": pod_template()}]}
    if autoscaling:
        spec["enableInTreeAutoscaling"] = True
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "uid": "u-3"}, "spec": spec}


def rayjob(**extra: Any) -> Body:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rj", "namespace": "ns", "uid": "u-4"},
            "spec": {"suspend": True, "entrypoint": "python x.py",
                     "rayClusterSpec": {k: v for k, v in raycluster()["spec"].items()
                                        if k != "suspend"}, **extra}}


class TestOtherKinds:
    @pytest.mark.parametrize(("body", "want_sets", "want_name"), [
        (pytorchjob(), [("master", 1), ("worker", 2)], "pytorchjob-train-u-1"),
        (pytorchjob(workers=None), [("master", 1), ("worker", 1)], "pytorchjob-train-u-1"),
        (mpijob(), [("launcher", 1), ("worker", 2)], "mpijob-pi-u-2"),  # the operator's order
        (raycluster(), [("head", 1), ("small", 2), ("tpu", 4)], "raycluster-rc-u-3"),
        (rayjob(), [("head", 1), ("small", 2), ("tpu", 4), ("submitter", 1)], "rayjob-rj-u-4"),
        (rayjob(submissionMode="HTTPMode"), [("head", 1), ("small", 2), ("tpu", 4)],
         "rayjob-rj-u-4"),
    ])
    def test_pod_sets_as_kueue_names_them(self, body: Body,
                                          want_sets: list[tuple[str, int]],
                                          want_name: str) -> None:
        kind = kinds.KINDS[body["kind"]]
        manifest = contract.workload_for(kind, body, queue="main", priority=0,
                                         priority_class=None)
        assert [(ps["name"], ps["count"]) for ps in manifest["spec"]["podSets"]] == want_sets
        assert manifest["metadata"]["name"] == want_name
        assert isinstance(api.parse_object(manifest), api.Workload)

    @pytest.mark.parametrize("body", [pytorchjob(), mpijob(), raycluster(), rayjob()])
    def test_started_and_restored_through_its_own_suspend_field(self, body: Body) -> None:
        kind = kinds.KINDS[body["kind"]]
        sets = kind.pod_sets(body)
        given = admission(*((ps["name"], ps["count"], "a100") for ps in sets))
        running = applied(body, kind.start_write(body, given, FLAVORS))
        assert not kind.suspended(running)
        assert kind.pod_sets(running) == sets
        suspended = applied(running, contract.Write("suspend", kind.suspend_patch()))
        assert kind.suspended(suspended)
        restored = applied(suspended, kind.stop_write(suspended))
        assert kind.pod_sets(restored) == sets
        assert kind.start_write(restored, given, FLAVORS) is not None

    def test_a_rayjob_is_given_kuberays_default_submitter_with_its_flavor(self) -> None:
        body = rayjob()
        sets = kinds.KINDS["RayJob"].pod_sets(body)
        assert sets[-1]["template"]["spec"]["containers"][0]["resources"][
            "requests"] == {"cpu": "500m", "memory": "200Mi"}
        given = admission(*((ps["name"], ps["count"], "a100") for ps in sets))
        running = applied(body, kinds.KINDS["RayJob"].start_write(body, given, FLAVORS))
        assert running["spec"]["submitterPodTemplate"]["spec"]["nodeSelector"] == {
            "gpu": "a100"}

    @pytest.mark.parametrize(("status", "want"), [
        ({"conditions": [{"type": "Succeeded", "status": "True"}]}, "Succeeded"),
        ({"conditions": [{"type": "Failed", "status": "True"}]}, "Failed"),
        ({"conditions": [{"type": "Running", "status": "True"}]}, None),
    ])
    def test_a_kubeflow_job_ends_with_its_conditions(self, status: Body,
                                                     want: str | None) -> None:
        got = kinds.KINDS["PyTorchJob"].finished({**pytorchjob(), "status": status})
        assert (got[0] if got else None) == want

    @pytest.mark.parametrize(("status", "want"), [
        ({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "Succeeded"),
        ({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"}, "Failed"),
        ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, None),
    ])
    def test_a_rayjob_ends_with_its_deployment(self, status: Body, want: str | None) -> None:
        got = kinds.KINDS["RayJob"].finished({**rayjob(), "status": status})
        assert (got[0] if got else None) == want

    @pytest.mark.parametrize("body", [raycluster(autoscaling=True),
                                      rayjob(rayClusterSpec=raycluster(autoscaling=True)
                                             ["spec"])])
    def test_an_autoscaling_ray_cluster_is_refused_naming_the_field(self, body: Body) -> None:
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        with pytest.raises(webhooks.Rejected, match="enableInTreeAutoscaling"):
            webhooks.needs_suspend(body, default_queue=False, queue_exists=lambda ns, n: True)

    def test_the_webhook_suspends_through_the_kinds_own_field(self) -> None:
        body = pytorchjob(suspend=None)
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        assert webhooks.needs_suspend(body, default_queue=False,
                                      queue_exists=lambda ns, n: True)
        assert kinds.KINDS["PyTorchJob"].suspend_patch() == {
            "spec": {"runPolicy": {"suspend": True}}}


# -- Kubeflow Trainer v2: a TrainJob runs through the JobSet its controller builds --------------

TRAINJOB = kinds.KINDS["TrainJob"]
SPOT = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def trainjob(*, suspend: bool | None = True, overrides: list[Body] | None = None,
             status: Body | None = None, **spec: Any) -> Body:
    body: Body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                  "metadata": {"name": "train", "namespace": "ns", "uid": "tj-uid-1",
                               "labels": {"kueue.x-k8s.io/queue-name": "main"}},
                  "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec}}
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    if overrides is not None:
        body["spec"]["podTemplateOverrides"] = overrides
    if status is not None:
        body["status"] = status
    return body


def built_jobset(*roles: Body, owner_uid: str = "tj-uid-1") -> Body:
    """The JobSet the Trainer builds for ``trainjob()``, controlled by it."""
    body = jobset(*roles)
    body["metadata"]["labels"] = {}
    body["metadata"]["ownerReferences"] = [{"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                            "kind": "TrainJob", "name": "train",
                                            "uid": owner_uid, "controller": True}]
    return body


def initializer_and_nodes() -> Body:
    nodes = replicated("node", parallelism=4, completions=4)
    nodes["template"]["spec"]["template"]["spec"]["tolerations"] = [SPOT]
    return built_jobset(replicated("dataset-initializer"), nodes)


class TestTrainJob:
    def test_pod_sets_are_the_built_jobsets_replicated_jobs(self) -> None:
        body = contract.with_child(trainjob(), initializer_and_nodes())
        workload = contract.workload_for(TRAINJOB, body, queue="main", priority=0,
                                         priority_class=None)
        assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [
            ("dataset-initializer", 1), ("node", 4)]
        assert workload["metadata"]["name"] == "trainjob-train-tj-ui"
        assert kinds.owner_of(workload["metadata"]) == "TrainJob:ns/train"
        assert isinstance(api.parse_object(workload), api.Workload)

    @pytest.mark.parametrize(("owner_uid", "want_child"), [
        ("tj-uid-1", True),
        ("an-older-trainjob", False),  # a JobSet left by an earlier TrainJob of that name
    ])
    def test_only_its_own_jobset_is_attached(self, owner_uid: str, want_child: bool) -> None:
        body = contract.with_child(trainjob(), built_jobset(replicated("node"),
                                                            owner_uid=owner_uid))
        assert (contract.child_of(body) is not None) is want_child
        if not want_child:
            with pytest.raises(ValueError, match="not built its JobSet"):
                TRAINJOB.pod_sets(body)

    def test_started_in_two_writes_then_restored(self) -> None:
        user = [{"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"zone": "a"}}}]
        before = contract.with_child(trainjob(overrides=user), initializer_and_nodes())
        given = admission(("dataset-initializer", 1, "cpu"), ("node", 4, "a100"))

        prepare = TRAINJOB.start_write(before, given, FLAVORS)
        assert prepare is not None and prepare.step == "prepare"
        assert "suspend" not in prepare.patch["spec"]  # the Trainer refuses both at once
        prepared = applied(before, prepare)
        assert prepared["spec"]["podTemplateOverrides"] == [
            *user,
            {"targetJobs": [{"name": "dataset-initializer"}],
             "spec": {"nodeSelector": {"pool": "cpu"}}},
            # A tolerations list replaces the template's: the JobSet's own are kept.
            {"targetJobs": [{"name": "node"}],
             "spec": {"nodeSelector": {"gpu": "a100"},
                      "tolerations": [SPOT, dict(FLAVORS["a100"].tolerations[0])]}}]

        start = TRAINJOB.start_write(prepared, given, FLAVORS)
        assert start is not None and start.step == "start"
        assert start.patch == {"spec": {"suspend": False}}
        running = applied(prepared, start)
        assert TRAINJOB.start_write(running, given, FLAVORS) is None  # idempotent

        stop = TRAINJOB.stop_write(running)
        assert stop is not None and stop.step == "suspend"
        stopping = applied(running, stop)
        stopping["status"] = {"jobsStatus": [{"name": "node", "active": 1}]}
        assert TRAINJOB.stop_write(stopping) is None and not TRAINJOB.stopped(stopping)
        stopping["status"]["jobsStatus"][0]["active"] = 0
        assert TRAINJOB.stopped(stopping)
        restore = TRAINJOB.stop_write(stopping)
        assert restore is not None and restore.step == "restore"
        restored = applied(stopping, restore)
        assert restored["spec"]["podTemplateOverrides"] == user
        assert not (restored["metadata"].get("annotations") or {})
        assert TRAINJOB.stop_write(restored) is None

    def test_one_running_under_another_admission_is_suspended_first(self) -> None:
        body = contract.with_child(trainjob(suspend=False), initializer_and_nodes())
        write = TRAINJOB.start_write(body, admission(("node", 4, "cpu")), FLAVORS)
        assert write is not None and write.step == "suspend"

    @pytest.mark.parametrize(("child", "status", "want_write"), [
        (False, None, False),  # the Trainer has not built its JobSet yet
        (True, {"jobsStatus": [{"name": "node", "active": 2}]}, False),  # still stopping
        (True, {"jobsStatus": [{"name": "node", "active": 0}]}, True),
    ])
    def test_a_start_waits_for_its_jobset_and_inactive_jobs(
            self, child: bool, status: Body | None, want_write: bool) -> None:
        body = contract.with_child(trainjob(status=status),
                                   initializer_and_nodes() if child else None)
        write = TRAINJOB.start_write(body, admission(("node", 4, "cpu")), FLAVORS)
        assert (write is not None) is want_write

    @pytest.mark.parametrize(("suspend", "statuses", "want"), [
        (False, [{"name": "i", "succeeded": 1}, {"name": "node", "active": 1, "ready": 1}],
         True),
        (False, [{"name": "i", "succeeded": 1}, {"name": "node", "active": 1, "ready": 0}],
         False),
        (False, [{"name": "i", "active": 1, "ready": 1}, {"name": "node"}], False),
        (False, [{"name": "node", "active": 1, "ready": 1, "failed": 1}], False),
        (True, [{"name": "node", "active": 1, "ready": 1}], False),
        (False, [], False),
    ])
    def test_pods_ready(self, suspend: bool, statuses: list[Body], want: bool) -> None:
        assert TRAINJOB.pods_ready(trainjob(suspend=suspend,
                                            status={"jobsStatus": statuses})) is want

    @pytest.mark.parametrize(("conditions", "want"), [
        ([{"type": "Complete", "status": "True", "message": "done"}], ("Succeeded", "done")),
        ([{"type": "Failed", "status": "True", "reason": "BackoffLimit"}],
         ("Failed", "BackoffLimit")),
        ([{"type": "Complete", "status": "False"}], None),
    ])
    def test_finished(self, conditions: list[Body], want: tuple[str, str] | None) -> None:
        assert TRAINJOB.finished(trainjob(status={"conditions": conditions})) == want

    @pytest.mark.parametrize(("managed_by", "want_refused"), [
        (None, False),
        ("trainer.kubeflow.org/trainjob-controller", False),
        ("kueue.x-k8s.io/multikueue", True),
    ])
    def test_one_handed_to_another_controller_is_refused_naming_the_field(
            self, managed_by: str | None, want_refused: bool) -> None:
        spec = {} if managed_by is None else {"managedBy": managed_by}
        problem = TRAINJOB.refusal(trainjob(**spec))
        assert (problem is not None) is want_refused
        if problem is not None:
            assert "spec.managedBy" in problem
