"""Peer controllers on the real control plane: Kubeflow's training operator, as released.

Before kuota can queue Kubeflow training jobs, the training operator (v1, built
from its Go module by hack/controllers/build-controllers.sh, run by
tests/cluster/controllers.py as its ServiceAccount, with its validating webhooks
registered and its own cert rotator running) must be shown to work here on its
own: a PyTorchJob becomes a master and a worker pod, kube-scheduler binds them to
kwok nodes, kwok runs them to the end, and the operator reports the job
Succeeded.

The kuota operator runs too: its shipped webhook sees every PyTorchJob and pod
created in a test namespace (failurePolicy Fail) and must let these through
untouched — they carry no queue label.
"""

from __future__ import annotations

import json
from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

KUBEFLOW_API = "kubeflow.org/v1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"


def pytorch_simple(name: str, namespace: str, *, run_for: str = "3s", cpu: str = "250m",
                   node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """The training operator's example examples/pytorch/simple.yaml: one master and one
    worker replica, each a ``pytorch`` container training MNIST for an epoch. Changed for
    kwok: the training run becomes the fake kubelet's run-for annotation
    (tests/cluster/kwok-stages.yaml), the containers request a little CPU, and
    ``node_selector`` keeps the pods on the test's own nodes (the control plane is shared).
    """

    def replica() -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{
            "name": "pytorch", "image": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
            "imagePullPolicy": "Always",
            "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
            "resources": {"requests": {"cpu": cpu}}}]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        return {"replicas": 1, "restartPolicy": "OnFailure",
                "template": {"metadata": {"annotations": {"kuota.dev/test-run-for": run_for}},
                             "spec": spec}}

    return {"apiVersion": KUBEFLOW_API, "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}}}


class TestTrainingOperator:
    def test_a_pytorchjob_runs_its_master_and_worker_on_kwok_nodes_to_success(
            self, control_plane: ControlPlane,
            training_operator_controller: PeerController, kube: Kube, namespace: str,
            operator: OperatorProcess) -> None:
        nodes = {f"{namespace}-n1", f"{namespace}-n2"}
        pool = {"pool": f"{namespace}-pool"}
        control_plane.add_nodes(*(node(n, cpu="4", labels=pool) for n in sorted(nodes)))

        # The training operator's validating webhook (called by the API server on its
        # own port) refuses a PyTorchJob without a container named pytorch.
        bad = pytorch_simple("not-pytorch", namespace, node_selector=pool)
        bad["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
            "name"] = "main"
        refused = control_plane.kubectl("create", "-f", "-", input=json.dumps(bad),
                                        check=False)
        assert refused.returncode != 0 and "name pytorch" in refused.stderr, refused.stderr

        created = kube.create(pytorch_simple("pytorch-simple", namespace, node_selector=pool))
        # No queue label: kuota's webhook let it through unsuspended.
        assert not (created["spec"].get("runPolicy") or {}).get("suspend"), created["spec"]

        selector = f"{JOB_NAME_LABEL}=pytorch-simple"
        pods = kube.wait_for(
            lambda: (found := kube.list("v1", "Pod", namespace, label_selector=selector))
            and len(found) == 2 and all(p["spec"].get("nodeName") for p in found) and found,
            what="the PyTorchJob's master and worker pods to be bound", timeout=90)
        assert {p["metadata"]["labels"][REPLICA_TYPE_LABEL] for p in pods} == \
            {"master", "worker"}, [p["metadata"]["labels"] for p in pods]
        assert {p["spec"]["nodeName"] for p in pods} <= nodes
        for pod in pods:
            owner = pod["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == \
                ("PyTorchJob", "pytorch-simple", True), pod["metadata"]
            # The operator gives every replica the rendezvous environment of the master.
            env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
            assert env["MASTER_ADDR"] == "pytorch-simple-master-0", env
            assert env["WORLD_SIZE"] == "2", env
        # The master's headless Service, which MASTER_ADDR resolves through.
        service = kube.wait_for(
            lambda: kube.find("v1", "Service", "pytorch-simple-master-0", namespace),
            what="the master's Service")
        assert service["spec"]["clusterIP"] == "None"

        def succeeded() -> dict[str, Any] | None:
            job = kube.get(KUBEFLOW_API, "PyTorchJob", "pytorch-simple", namespace)
            return job if b.is_true(job, "Succeeded") else None

        job = kube.wait_for(succeeded, what="the PyTorchJob to succeed", timeout=120)
        assert not b.is_true(job, "Failed"), job["status"]
        assert job["status"]["replicaStatuses"]["Master"].get("succeeded") == 1, job["status"]
        assert job["status"].get("completionTime"), job["status"]
        phases = {p["metadata"]["name"]: p["status"]["phase"]
                  for p in kube.list("v1", "Pod", namespace, label_selector=selector)}
        assert phases.get("pytorch-simple-master-0") == "Succeeded", phases
