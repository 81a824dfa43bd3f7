"""Kubeflow Trainer v2 TrainJobs under quota, with the Trainer's own controller
(github.com/kubeflow/trainer/v2 v2.1.0) and JobSet's (which it runs through).

The runtime is the Trainer's ``torch-distributed`` ClusterTrainingRuntime
(manifests/base/runtimes) as a namespaced TrainingRuntime; the TrainJob asks
for its number of nodes and resources per node, and carries a pod template
override of its own (the fake kubelet's run-for annotation):

* the Trainer runs such a TrainJob without a queue label to ``Complete``, kuota
  leaving it alone (the harness works);
* queued, it is created suspended; the Trainer builds its JobSet, suspended,
  and the Workload's pod sets are that JobSet's (``node`` × numNodes);
  admitted, kuota appends an override with the flavor's node labels (the
  user's own kept), unsuspends it, the Trainer's JobSet runs on that
  flavor's node to ``Complete``; the Workload finishes and the quota is
  given back;
* preempted by a higher-priority Job, it is suspended (the Trainer suspends
  its JobSet, whose pods go), the overrides are put back as the user wrote
  them, and it is admitted and run again once the preemptor is done;
* one that does not fit runs nothing (its JobSet stays suspended), and deleting
  it deletes its Workload.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.cluster.peer_releases import TRAINER_API
from tests.real import builders as b
from tests.real.operator import OperatorProcess
from tests.real.test_real_peer_controllers import JOBSET_API, JOBSET_NAME_LABEL
from tests.real.test_real_training_kinds import running_pods

Body = dict[str, Any]
QUEUE = {"kueue.x-k8s.io/queue-name": "main"}
#: The label the Trainer's torch plugin finds the training node's replicated Job by.
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def torch_runtime(namespace: str) -> Body:
    """The release's torch-distributed runtime (manifests/base/runtimes), namespaced."""
    node = {"name": "node", "template": {
        "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
        "spec": {"template": {"spec": {"containers": [{
            "name": "node", "image": "registry.example/pytorch:2.7.1",
            "command": ["/bin/bash", "-c", "torchrun train.py"]}]}}}}}
    return {"apiVersion": TRAINER_API, "kind": "TrainingRuntime",
            "metadata": {"name": "torch-distributed", "namespace": namespace,
                         "labels": {"trainer.kubeflow.org/framework": "torch"}},
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
                     "template": {"spec": {"replicatedJobs": [node]}}}}


#: The override a user writes for the runtime's ``node`` Job (kept through kuota's writes).
def users_override(run_for: str) -> Body:
    return {"targetJobs": [{"name": "node"}],
            "metadata": {"annotations": {"kuota.dev/test-run-for": run_for}}}


def trainjob(name: str, namespace: str, *, nodes: int = 2, cpu: str = "500m",
             run_for: str = "3s", queued: bool = True) -> Body:
    meta: Body = {"name": name, "namespace": namespace}
    if queued:
        meta["labels"] = dict(QUEUE)
    return {"apiVersion": TRAINER_API, "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": {"name": "torch-distributed", "kind": "TrainingRuntime"},
                     "trainer": {"numNodes": nodes,
                                 "resourcesPerNode": {"requests": {"cpu": cpu}}},
                     "podTemplateOverrides": [users_override(run_for)]}}


def get(kube: Kube, name: str, namespace: str) -> Body:
    return kube.get(TRAINER_API, "TrainJob", name, namespace)


def completed(kube: Kube, name: str, namespace: str) -> Body | None:
    job = get(kube, name, namespace)
    return job if b.is_true(job, "Complete") else None


def node_selector(kube: Kube, name: str, namespace: str) -> Body | None:
    """The ``node`` Job's pod template node selector in the JobSet the Trainer built."""
    jobset = kube.get(JOBSET_API, "JobSet", name, namespace)
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"] \
        .get("nodeSelector")


def test_the_trainer_runs_a_trainjob_kuota_does_not_queue_to_complete(
        control_plane: ControlPlane, jobset_controller: PeerController,
        trainer_controller: PeerController, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8"))
    kube.create(torch_runtime(namespace))
    created = kube.create(trainjob("alone", namespace, queued=False))
    assert created["spec"].get("suspend") is not True  # no queue label: left alone
    kube.wait_for(lambda: completed(kube, "alone", namespace),
                  what="the TrainJob complete", timeout=120)
    pods = kube.list("v1", "Pod", namespace, label_selector=f"{JOBSET_NAME_LABEL}=alone")
    assert len(pods) == 2


def test_a_trainjob_is_queued_admitted_with_its_flavor_and_finished(
        control_plane: ControlPlane, jobset_controller: PeerController,
        trainer_controller: PeerController, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 2})
    kube.create(torch_runtime(namespace))
    created = kube.create(trainjob("train", namespace))
    assert created["spec"]["suspend"] is True

    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "TrainJob", "train"),
                             what="the TrainJob's Workload")
    assert workload["metadata"]["name"].startswith("trainjob-train-")
    assert [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]] == [("node", 2)]
    assert workload["metadata"]["labels"]["kuota.dev/owner-kind"] == "TrainJob"
    requests = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]
    assert requests["requests"]["cpu"] == "500m"  # the TrainJob's resourcesPerNode

    job = kube.wait_for(lambda: completed(kube, "train", namespace),
                        what="the TrainJob admitted and complete", timeout=120)
    assert job["spec"]["podTemplateOverrides"] == [
        users_override("3s"),
        {"targetJobs": [{"name": "node"}], "spec": {"nodeSelector": {"pool": pool}}}]
    assert node_selector(kube, "train", namespace) == {"pool": pool}
    pods = kube.list("v1", "Pod", namespace, label_selector=f"{JOBSET_NAME_LABEL}=train")
    assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {f"{namespace}-n1"}
    kube.wait_for(lambda: b.is_true(b.owned_workload(kube, namespace, "TrainJob", "train"),
                                    "Finished"), what="its Workload to finish")
    kube.wait_for(lambda: b.queue_usage(kube.get(b.API, "ClusterQueue", f"{namespace}-cq"))
                  .get((f"{namespace}-rf", "cpu"), "0") == "0", what="the quota given back")


def test_a_preempted_trainjob_is_stopped_restored_and_admitted_again(
        control_plane: ControlPlane, jobset_controller: PeerController,
        trainer_controller: PeerController, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    pool = b.pool_queue(control_plane, kube, namespace, {"cpu": "1500m"})
    kube.create(torch_runtime(namespace))
    kube.create(trainjob("low", namespace, run_for="1h"))  # 2 nodes of 500m
    kube.wait_for(lambda: running_pods(kube, namespace, f"{JOBSET_NAME_LABEL}=low", 2),
                  what="the low TrainJob running", timeout=120)
    kube.create(b.job("high", namespace, cpu="1", run_for="3s",
                      priority_class=f"{namespace}-high"))

    def restored() -> Body | None:
        job = get(kube, "low", namespace)
        return job if job["spec"].get("suspend") is True \
            and job["spec"].get("podTemplateOverrides") == [users_override("1h")] else None

    kube.wait_for(restored, what="the TrainJob suspended and its overrides put back",
                  timeout=90)
    kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                  what="the preemptor to run once the TrainJob's pods are gone", timeout=120)
    kube.wait_for(lambda: running_pods(kube, namespace, f"{JOBSET_NAME_LABEL}=low", 2),
                  what="the TrainJob admitted and running again", timeout=120)
    assert node_selector(kube, "low", namespace) == {"pool": pool}


def test_a_trainjob_that_does_not_fit_runs_nothing_and_deleting_it_deletes_its_workload(
        control_plane: ControlPlane, jobset_controller: PeerController,
        trainer_controller: PeerController, kube: Kube, namespace: str,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 2})
    kube.create(torch_runtime(namespace))
    kube.create(trainjob("big", namespace, nodes=2, cpu="2"))  # 4 cpu asked, 2 in quota
    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "TrainJob", "big"),
                             what="the TrainJob's Workload")
    assert not b.is_true(workload, "QuotaReserved")
    jobset = kube.wait_for(lambda: kube.find(JOBSET_API, "JobSet", "big", namespace),
                           what="the Trainer's JobSet")
    assert jobset["spec"]["suspend"] is True
    assert kube.list("v1", "Pod", namespace) == []
    kube.delete(TRAINER_API, "TrainJob", "big", namespace)
    kube.wait_for(lambda: b.owned_workload(kube, namespace, "TrainJob", "big") is None,
                  what="its Workload deleted")
