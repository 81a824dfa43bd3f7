"""Peer controllers on the real control plane: KubeRay's operator, as released.

Before kuota can queue RayClusters and RayJobs, KubeRay's operator (built from
its Go module by hack/controllers/build-controllers.sh, run by
tests/cluster/controllers.py as its ServiceAccount; its webhooks are off, as in
its default install) must be shown to work here on its own: a RayCluster
becomes a head pod and a worker group's pods, kube-scheduler binds them to kwok
nodes, kwok runs them, and the operator reports the cluster ready.

Why a RayCluster and not a RayJob to success: the operator reads a RayJob's
end (jobStatus SUCCEEDED, then jobDeploymentStatus Complete) only from the Ray
head's dashboard, ``GET http://<cluster>-head-svc.<namespace>.svc.cluster.local:
8265/api/jobs/<id>``, whatever its submitter Job does. Under kwok there is no Ray
and no cluster DNS: every call fails (``dial tcp: lookup ...svc.cluster.local
... no such host``), the RayJob stays Running while its cluster is ready and its
submitter Job completes, and 30 s after that (DefaultSubmitterFinishedTimeout)
it turns Failed, jobStatus FAILED, reason
JobDeploymentStatusTransitionGracePeriodExceeded ("The RayJob submitter
finished at ... but the ray job did not reach terminal state within 30s").
Up to the submission a RayJob is its RayCluster's path, which this test covers.

The kuota operator runs too: its shipped webhook sees every RayCluster and pod
created in a test namespace (failurePolicy Fail) and must let these through
untouched — they carry no queue label.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

RAY_API = "ray.io/v1"
CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"


def raycluster_sample(name: str, namespace: str, *, workers: int = 1,
                      node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """KubeRay's example config/samples/ray-cluster.sample.yaml: a head (GCS, dashboard
    and client ports) and a worker group ``workergroup`` of one replica (between one and
    five; no autoscaler). Changed for kwok: the pods keep running (run-for "1h",
    tests/cluster/kwok-stages.yaml) as Ray nodes do, they ask for a little CPU and memory
    instead of one CPU and 1-2 GB, and ``node_selector`` keeps them on the test's own
    nodes (the control plane is shared)."""

    def template(container: dict[str, Any], memory: str) -> dict[str, Any]:
        resources = {"cpu": "250m", "memory": memory}
        spec: dict[str, Any] = {"containers": [{
            "image": "rayproject/ray:2.46.0",
            "resources": {"limits": dict(resources), "requests": dict(resources)},
            **container}]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        return {"metadata": {"annotations": {"kuota.dev/test-run-for": "1h"}}, "spec": spec}

    head = {"name": "ray-head", "ports": [
        {"containerPort": 6379, "name": "gcs-server"},
        {"containerPort": 8265, "name": "dashboard"},
        {"containerPort": 10001, "name": "client"}]}
    return {"apiVersion": RAY_API, "kind": "RayCluster",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"rayVersion": "2.46.0",
                     "headGroupSpec": {"rayStartParams": {},
                                       "template": template(head, "256Mi")},
                     "workerGroupSpecs": [{
                         "replicas": workers, "minReplicas": 1, "maxReplicas": 5,
                         "groupName": "workergroup", "rayStartParams": {},
                         "template": template({"name": "ray-worker"}, "128Mi")}]}}


class TestKubeRay:
    def test_a_raycluster_runs_its_head_and_workers_on_kwok_nodes_and_is_ready(
            self, control_plane: ControlPlane, kuberay_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        nodes = {f"{namespace}-n1", f"{namespace}-n2"}
        pool = {"pool": f"{namespace}-pool"}
        control_plane.add_nodes(*(node(n, cpu="4", labels=pool) for n in sorted(nodes)))

        created = kube.create(raycluster_sample("raycluster-kuberay", namespace, workers=2,
                                                node_selector=pool))
        # No queue label: kuota's webhook let it through unsuspended.
        assert not created["spec"].get("suspend"), created["spec"]

        selector = f"{CLUSTER_LABEL}=raycluster-kuberay"
        pods = kube.wait_for(
            lambda: (found := kube.list("v1", "Pod", namespace, label_selector=selector))
            and len(found) == 3 and all(p["status"].get("phase") == "Running" for p in found)
            and found,
            what="the RayCluster's head and 2 worker pods to run", timeout=90)
        kinds = sorted((p["metadata"]["labels"][NODE_TYPE_LABEL],
                        p["metadata"]["labels"][GROUP_LABEL]) for p in pods)
        assert kinds == [("head", "headgroup"), ("worker", "workergroup"),
                         ("worker", "workergroup")], kinds
        assert {p["spec"]["nodeName"] for p in pods} <= nodes
        for pod in pods:
            owner = pod["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == \
                ("RayCluster", "raycluster-kuberay", True), pod["metadata"]
        # The head's Service, the address workers and clients reach the GCS and dashboard by.
        service = kube.wait_for(
            lambda: kube.find("v1", "Service", "raycluster-kuberay-head-svc", namespace),
            what="the head's Service")
        assert {p["name"] for p in service["spec"]["ports"]} >= {"gcs-server", "dashboard"}

        def ready() -> dict[str, Any] | None:
            cluster = kube.get(RAY_API, "RayCluster", "raycluster-kuberay", namespace)
            return cluster if (cluster.get("status") or {}).get("state") == "ready" else None

        cluster = kube.wait_for(ready, what="the RayCluster to be ready", timeout=120)
        status = cluster["status"]
        assert b.is_true(cluster, "HeadPodReady"), status
        assert b.is_true(cluster, "RayClusterProvisioned"), status
        assert (status.get("readyWorkerReplicas"), status.get("availableWorkerReplicas"),
                status.get("desiredWorkerReplicas")) == (2, 2, 2), status
        assert status["head"].get("podName") in {p["metadata"]["name"] for p in pods}, status
        running = {p["metadata"]["name"]: p["status"]["phase"]
                   for p in kube.list("v1", "Pod", namespace, label_selector=selector)}
        assert set(running.values()) == {"Running"}, running
