"""Kubeflow PyTorchJobs and KubeRay clusters under quota, with their real controllers.

Each starts from its project's own example (the builders of the peer smoke
tests: the training operator's pytorch/simple.yaml, KubeRay's
ray-cluster.sample.yaml) with only the queue label added:

* a PyTorchJob is created with ``spec.runPolicy.suspend``; its Workload has
  pod sets ``master`` and ``worker``; admitted, each replica's template gets
  the flavor and the training operator runs it on that flavor's node to
  Succeeded; the Workload finishes and the quota is given back. Preempted
  by a higher-priority Job it is suspended, its pods deleted by its
  operator (the quota held until they are gone), its templates restored,
  and admitted again;
* a RayCluster is queued with pod sets ``head`` and one per worker group,
  reaches ``ready`` on its flavor's node once admitted, and is suspended
  (KubeRay deletes its pods) and admitted again when preempted;
* a RayJob's Workload adds the ``submitter`` pod set; admitted, the cluster
  KubeRay makes from it runs on the flavor's node (a RayJob cannot complete
  under kwok: KubeRay reads its result from the Ray dashboard); deleting it
  deletes its Workload.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess
from tests.real.test_real_peer_kuberay import CLUSTER_LABEL, RAY_API, raycluster_sample
from tests.real.test_real_peer_training_operator import (
    JOB_NAME_LABEL,
    KUBEFLOW_API,
    pytorch_simple,
)

Body = dict[str, Any]
QUEUE = {"kueue.x-k8s.io/queue-name": "main"}


def pod_sets(workload: Body) -> list[tuple[str, int]]:
    return [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]]


def running_pods(kube: Kube, namespace: str, selector: str, count: int) -> list[Body] | None:
    pods = [p for p in kube.list("v1", "Pod", namespace, label_selector=selector)
            if (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")]
    return pods if len(pods) == count else None


def preempt(kube: Kube, namespace: str, cpu: str) -> None:
    kube.create(b.job("high", namespace, cpu=cpu, run_for="3s",
                      priority_class=f"{namespace}-high"))


def wait_preemptor(kube: Kube, namespace: str) -> None:
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run once the preempted pods are gone", timeout=120)


class TestPyTorchJob:
    def selectors(self, job: Body) -> list[Body | None]:
        specs = job["spec"]["pytorchReplicaSpecs"]
        return [specs[r]["template"]["spec"].get("nodeSelector") for r in ("Master", "Worker")]

    def test_queued_admitted_with_its_flavor_and_finished(
            self, control_plane: ControlPlane, training_operator_controller: PeerController,
            kube: Kube, namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "2", "memory": "64Gi"})
        body = pytorch_simple("mnist", namespace)
        body["metadata"]["labels"] = dict(QUEUE)
        created = kube.create(body)
        assert created["spec"]["runPolicy"]["suspend"] is True
        workload = kube.wait_for(
            lambda: b.owned_workload(kube, namespace, "PyTorchJob", "mnist"),
            what="the PyTorchJob's Workload")
        assert pod_sets(workload) == [("master", 1), ("worker", 1)]
        assert workload["metadata"]["name"].startswith("pytorchjob-mnist-")

        def succeeded() -> Body | None:
            job = kube.get(KUBEFLOW_API, "PyTorchJob", "mnist", namespace)
            return job if b.is_true(job, "Succeeded") else None

        job = kube.wait_for(succeeded, what="the PyTorchJob admitted and succeeded",
                            timeout=120)
        assert self.selectors(job) == [{"pool": pool}, {"pool": pool}]
        pods = kube.list("v1", "Pod", namespace, label_selector=f"{JOB_NAME_LABEL}=mnist")
        assert pods and {p["spec"]["nodeName"] for p in pods} == {f"{namespace}-n1"}
        kube.wait_for(lambda: b.is_true(b.owned_workload(kube, namespace, "PyTorchJob",
                                                       "mnist"), "Finished"),
                      what="its Workload to finish")

    def test_preempted_stopped_restored_and_admitted_again(
            self, control_plane: ControlPlane, training_operator_controller: PeerController,
            kube: Kube, namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "1", "memory": "64Gi"})
        body = pytorch_simple("low", namespace, run_for="1h", cpu="500m")
        body["metadata"]["labels"] = dict(QUEUE)
        kube.create(body)
        selector = f"{JOB_NAME_LABEL}=low"
        kube.wait_for(lambda: running_pods(kube, namespace, selector, 2),
                      what="the low PyTorchJob running", timeout=120)
        preempt(kube, namespace, cpu="1")

        def stopped() -> Body | None:
            job = kube.get(KUBEFLOW_API, "PyTorchJob", "low", namespace)
            return job if job["spec"]["runPolicy"].get("suspend") is True \
                and self.selectors(job) == [None, None] else None

        kube.wait_for(stopped, what="the PyTorchJob suspended and its templates restored")
        wait_preemptor(kube, namespace)
        kube.wait_for(lambda: running_pods(kube, namespace, selector, 2),
                      what="the PyTorchJob admitted and running again", timeout=120)
        job = kube.get(KUBEFLOW_API, "PyTorchJob", "low", namespace)
        assert self.selectors(job) == [{"pool": pool}, {"pool": pool}]


def worker_only(kind: str, field: str, container: str, name: str, namespace: str) -> Body:
    """The training operator's examples tensorflow/simple.yaml and paddlepaddle/
    simple-cpu.yaml: two Worker replicas of the framework's container, queued, training
    for a few seconds (the fake kubelet's run-for annotation)."""
    replica = {"replicas": 2, "restartPolicy": "OnFailure", "template": {
        "metadata": {"annotations": {"kuota.dev/test-run-for": "3s"}},
        "spec": {"containers": [{"name": container, "image": "registry.example/fake:1",
                                 "resources": {"requests": {"cpu": "250m"}}}]}}}
    return {"apiVersion": KUBEFLOW_API, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(QUEUE)},
            "spec": {field: {"Worker": replica}}}


@pytest.mark.parametrize(("kind", "field", "container"), [
    ("TFJob", "tfReplicaSpecs", "tensorflow"),
    ("PaddleJob", "paddleReplicaSpecs", "paddle"),
])
def test_other_training_operator_kinds_are_queued_and_finished(
        control_plane: ControlPlane, training_operator_controller: PeerController, kube: Kube,
        namespace: str, operator: OperatorProcess, kind: str, field: str,
        container: str) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "1", "memory": "64Gi"})
    created = kube.create(worker_only(kind, field, container, "train", namespace))
    assert created["spec"]["runPolicy"]["suspend"] is True
    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, kind, "train"),
                             what=f"the {kind}'s Workload")
    assert pod_sets(workload) == [("worker", 2)]

    def succeeded() -> Body | None:
        job = kube.get(KUBEFLOW_API, kind, "train", namespace)
        return job if b.is_true(job, "Succeeded") else None

    job = kube.wait_for(succeeded, what=f"the {kind} admitted and succeeded", timeout=120)
    assert job["spec"][field]["Worker"]["template"]["spec"]["nodeSelector"] == {"pool": pool}
    kube.wait_for(lambda: b.is_true(b.owned_workload(kube, namespace, kind, "train"),
                                    "Finished"), what="its Workload to finish")


class TestRay:
    def test_a_raycluster_is_queued_ready_preempted_and_admitted_again(
            self, control_plane: ControlPlane, kuberay_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "1", "memory": "64Gi"})
        body = raycluster_sample("rc", namespace, workers=2)  # 3 pods of 250m
        body["metadata"]["labels"] = dict(QUEUE)
        created = kube.create(body)
        assert created["spec"]["suspend"] is True
        workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "RayCluster", "rc"),
                                 what="the RayCluster's Workload")
        assert pod_sets(workload) == [("head", 1), ("workergroup", 2)]

        def state(want: str) -> Callable[[], Body | None]:
            def check() -> Body | None:
                cluster = kube.get(RAY_API, "RayCluster", "rc", namespace)
                return cluster if (cluster.get("status") or {}).get("state") == want \
                    else None
            return check

        kube.wait_for(state("ready"), what="the RayCluster admitted and ready", timeout=120)
        pods = kube.list("v1", "Pod", namespace, label_selector=f"{CLUSTER_LABEL}=rc")
        assert len(pods) == 3 and all(p["spec"]["nodeSelector"] == {"pool": pool}
                                      for p in pods)

        preempt(kube, namespace, cpu="500m")
        kube.wait_for(state("suspended"), what="the RayCluster suspended")

        def restored() -> Body | None:
            # (written once KubeRay reports its pods gone: a moment after "suspended")
            cluster = kube.get(RAY_API, "RayCluster", "rc", namespace)
            spec = cluster["spec"]
            templates = [spec["headGroupSpec"]["template"],
                         *(g["template"] for g in spec.get("workerGroupSpecs") or [])]
            return cluster if all(t["spec"].get("nodeSelector") is None
                                  for t in templates) else None

        kube.wait_for(restored, what="the RayCluster's templates restored")
        wait_preemptor(kube, namespace)
        kube.wait_for(state("ready"), what="the RayCluster admitted and ready again",
                      timeout=120)

    def test_a_rayjob_is_queued_with_its_submitter_and_its_cluster_runs_on_the_flavor(
            self, control_plane: ControlPlane, kuberay_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "4", "memory": "64Gi"})
        cluster = raycluster_sample("unused", namespace, workers=1)["spec"]
        body = {"apiVersion": RAY_API, "kind": "RayJob",
                "metadata": {"name": "rj", "namespace": namespace, "labels": dict(QUEUE)},
                "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": cluster,
                         "shutdownAfterJobFinishes": True}}
        created = kube.create(body)
        assert created["spec"]["suspend"] is True
        workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "RayJob", "rj"),
                                 what="the RayJob's Workload")
        assert pod_sets(workload) == [("head", 1), ("workergroup", 1), ("submitter", 1)]

        def started() -> Body | None:
            job = kube.get(RAY_API, "RayJob", "rj", namespace)
            return job if job["spec"].get("suspend") is False else None

        job = kube.wait_for(started, what="the RayJob admitted")
        submitter = job["spec"]["submitterPodTemplate"]["spec"]
        assert submitter["nodeSelector"] == {"pool": pool}
        name = kube.wait_for(
            lambda: (kube.get(RAY_API, "RayJob", "rj", namespace).get("status") or {})
            .get("rayClusterName"), what="KubeRay to make the RayJob's cluster")
        pods = kube.wait_for(
            lambda: running_pods(kube, namespace, f"{CLUSTER_LABEL}={name}", 2),
            what="the RayJob's cluster running", timeout=120)
        assert all(p["spec"]["nodeSelector"] == {"pool": pool} for p in pods)

        kube.delete(RAY_API, "RayJob", "rj", namespace)
        kube.wait_for(lambda: b.owned_workload(kube, namespace, "RayJob", "rj") is None,
                      what="its Workload deleted with it")
