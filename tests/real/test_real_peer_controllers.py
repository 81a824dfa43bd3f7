"""Peer controllers on the real control plane: JobSet's own manager, as released.

Before kuota can queue a framework's workloads, the framework must be shown to
work here on its own: the JobSet controller (built from its Go module by
hack/controllers/build-controllers.sh, run by tests/cluster/controllers.py as
its ServiceAccount, with its webhooks registered) turns a JobSet into child
Jobs, the Job controller makes their pods, kube-scheduler binds them to kwok
nodes, kwok runs them to the end, and JobSet reports the whole set Completed.

The kuota operator runs too: its shipped webhook sees every Job created in a
test namespace (failurePolicy Fail), the JobSet's children included, and must
let these through untouched — they carry no queue label.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"

def paralleljobs(name: str, namespace: str, *, workers: int = 2, run_for: str = "2s",
                 cpu: str = "250m", node_selector: dict[str, str] | None = None
                 ) -> dict[str, Any]:
    """JobSet's example site/static/examples/simple/paralleljobs.yaml: a replicated Job of
    four parallel workers and a one-pod driver. Changed for kwok: the busybox ``sleep``
    becomes the fake kubelet's run-for annotation (tests/cluster/kwok-stages.yaml), the
    containers request a little CPU, and the workers Job is replicated ``workers`` times
    (child Jobs ``<name>-workers-0``, ``-1``, ...). Completion mode and restart policy are
    left out, as in the example, for JobSet's defaulting webhook to fill in.
    ``node_selector`` keeps the pods on a test's own nodes (the control plane is shared)."""

    def replicated(job: str, replicas: int, pods: int) -> dict[str, Any]:
        pod: dict[str, Any] = {
            "metadata": {"annotations": {"kuota.dev/test-run-for": run_for}},
            "spec": {"containers": [{"name": "sleep", "image": "registry.example/fake:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}
        if node_selector:
            pod["spec"]["nodeSelector"] = dict(node_selector)
        return {"name": job, "replicas": replicas,
                "template": {"spec": {"parallelism": pods, "completions": pods,
                                      "backoffLimit": 0, "template": pod}}}

    return {"apiVersion": JOBSET_API, "kind": "JobSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicatedJobs": [replicated("workers", workers, 4),
                                        replicated("driver", 1, 1)]}}


class TestJobSet:
    def test_a_jobset_runs_its_child_jobs_on_kwok_nodes_to_completion(
            self, control_plane: ControlPlane, jobset_controller: PeerController, kube: Kube,
            namespace: str, operator: OperatorProcess) -> None:
        nodes = {f"{namespace}-n1", f"{namespace}-n2"}
        pool = {"pool": f"{namespace}-pool"}
        control_plane.add_nodes(*(node(n, cpu="4", labels=pool) for n in sorted(nodes)))

        created = kube.create(paralleljobs("paralleljobs", namespace, node_selector=pool))
        # JobSet's defaulting webhook, called by the API server on 127.0.0.1.
        assert created["spec"]["successPolicy"]["operator"] == "All"
        for rjob in created["spec"]["replicatedJobs"]:
            spec = rjob["template"]["spec"]
            assert spec["completionMode"] == "Indexed", rjob["name"]
            assert spec["template"]["spec"]["restartPolicy"] == "OnFailure", rjob["name"]

        selector = f"{JOBSET_NAME_LABEL}=paralleljobs"
        expected_jobs = {"paralleljobs-workers-0", "paralleljobs-workers-1",
                         "paralleljobs-driver-0"}
        jobs = kube.wait_for(
            lambda: (found := kube.list("batch/v1", "Job", namespace, label_selector=selector))
            and {j["metadata"]["name"] for j in found} == expected_jobs and found,
            what="the JobSet's three child Jobs")
        for job in jobs:
            owner = job["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["controller"]) == \
                ("JobSet", "paralleljobs", True), job["metadata"]
            # No queue label: kuota's webhook let the child Job through unsuspended.
            assert not job["spec"].get("suspend"), job["metadata"]["name"]
        # Network defaulting (enableDNSHostnames) makes the controller create the
        # headless Service the pods' hostnames resolve through.
        service = kube.wait_for(lambda: kube.find("v1", "Service", "paralleljobs", namespace),
                                what="the JobSet's headless Service")
        assert service["spec"]["clusterIP"] == "None"

        pods = kube.wait_for(
            lambda: (found := kube.list("v1", "Pod", namespace, label_selector=selector))
            and len(found) == 9 and all(p["spec"].get("nodeName") for p in found) and found,
            what="the 9 pods of the JobSet to be bound", timeout=90)
        assert {p["spec"]["nodeName"] for p in pods} <= nodes

        def completed() -> dict[str, Any] | None:
            jobset = kube.get(JOBSET_API, "JobSet", "paralleljobs", namespace)
            return jobset if b.is_true(jobset, "Completed") else None

        jobset = kube.wait_for(completed, what="the JobSet to complete", timeout=120)
        assert jobset["status"].get("terminalState") == "Completed", jobset["status"]
        assert not b.is_true(jobset, "Failed"), jobset["status"]
        for job in kube.list("batch/v1", "Job", namespace, label_selector=selector):
            assert b.job_finished(job) == "Complete", job["metadata"]["name"]
        succeeded = {p["metadata"]["name"]: p["status"]["phase"]
                     for p in kube.list("v1", "Pod", namespace, label_selector=selector)}
        assert set(succeeded.values()) == {"Succeeded"}, succeeded
