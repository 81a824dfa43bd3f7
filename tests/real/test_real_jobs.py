"""A queue-labelled Job on a real cluster: suspended, admitted, run on kwok nodes, finished.

Everything the emulator cannot show happens here: the real webhook call from
kube-apiserver, the Job controller creating pods once kuota unsuspends the
Job, kube-scheduler binding them to nodes of the chosen flavor, the Job
controller marking the Job Complete, RBAC on every operator call, and
kubectl reading the CRDs' printer columns and OpenAPI schemas.
"""

from __future__ import annotations

import pathlib

import yaml

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def pods_of(kube: Kube, namespace: str, job_name: str) -> list[dict]:
    return kube.list("v1", "Pod", namespace, label_selector=f"job-name={job_name}")


class TestJobLifecycle:
    def test_a_job_is_held_admitted_run_on_its_flavor_and_releases_quota(
            self, control_plane: ControlPlane, kube: Kube, namespace: str,
            operator: OperatorProcess) -> None:
        pool = f"{namespace}-pool"
        control_plane.add_nodes(node(f"{namespace}-n1", cpu="4", labels={"pool": pool}),
                                node(f"{namespace}-n2", cpu="4", labels={"pool": "other"}))
        rf, cq = f"{namespace}-rf", f"{namespace}-cq"
        kube.apply(b.flavor(rf, labels={"pool": pool}),
                   b.cluster_queue(cq, quotas={rf: {"cpu": 4}}),
                   b.local_queue("main", cq, namespace))

        created = kube.create(b.job("train", namespace, cpu="1", parallelism=2, run_for="3s"))
        assert created["spec"]["suspend"] is True, "the webhook must hold the Job"

        wl = kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace),
                                                 "train"), what="the Workload")
        assert wl["spec"]["podSets"][0]["count"] == 2

        def started() -> dict | None:
            job = kube.get("batch/v1", "Job", "train", namespace)
            return job if job["spec"].get("suspend") is False else None

        job = kube.wait_for(started, what="the Job to be unsuspended")
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": pool}

        # The real Job controller makes the pods, kube-scheduler puts them on the flavor's node.
        pods = kube.wait_for(lambda: [p for p in pods_of(kube, namespace, "train")
                                      if p["spec"].get("nodeName")] or None,
                             what="the Job's pods to be bound")
        assert {p["spec"]["nodeName"] for p in pods} == {f"{namespace}-n1"}

        usage = kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq))
                              .get((rf, "cpu")) == "2", what="the queue to show 2 cpu in use")
        assert usage

        assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "train",
                                                             namespace)),
                             what="the Job to complete") == "Complete"
        kube.wait_for(lambda: b.is_true(b.workload_of(kube.list(b.API, "Workload", namespace),
                                                      "train"), "Finished"),
                      what="the Workload to finish")
        kube.wait_for(lambda: b.queue_usage(kube.find(b.API, "ClusterQueue", cq))
                      .get((rf, "cpu")) == "0", what="the quota to be released")

    def test_kubectl_shows_the_printer_columns(
            self, control_plane: ControlPlane, kube: Kube, namespace: str,
            operator: OperatorProcess) -> None:
        rf, cq = f"{namespace}-rf", f"{namespace}-cq"
        kube.apply(b.flavor(rf, labels={"pool": "x"}),
                   b.cluster_queue(cq, quotas={rf: {"cpu": 1}}),
                   b.local_queue("main", cq, namespace))
        kube.wait_for(lambda: (kube.find(b.API, "LocalQueue", "main", namespace) or {})
                      .get("status"), what="the operator to see the LocalQueue")
        # More than the queue can ever give: kubectl says so at once (the webhook's warning).
        created = control_plane.kubectl("create", "-f", "-",
                                        input=yaml.safe_dump(b.job("waits", namespace, cpu="2")))
        assert f"Warning: Job {namespace}/waits can never be admitted" in created.stderr, \
            created.stderr
        assert "ExceedsMaxQuota" in created.stderr
        kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace), "waits"),
                      what="the Workload")

        out = control_plane.kubectl("get", "cq,lq,kwl,rf", "-A").stdout
        for header in ("COHORT", "PENDING WORKLOADS", "CLUSTERQUEUE", "QUEUE"):
            assert header in out, out
        assert cq in out and rf in out and "main" in out, out

    def test_kubectl_explain_works_on_every_crd(self, control_plane: ControlPlane) -> None:
        kinds = [yaml.safe_load(p.read_text())["spec"]["names"]["plural"]
                 for p in sorted((ROOT / "manifests" / "crds").glob("*.yaml"))]
        assert len(kinds) >= 10
        for plural in kinds:
            out = control_plane.kubectl("explain", plural).stdout
            assert "DESCRIPTION" in out and "FIELDS" in out, (plural, out)
            assert "<empty>" not in out.split("FIELDS")[0], (plural, out)  # described
        deep = control_plane.kubectl(
            "explain", "clusterqueues.spec.resourceGroups.flavors.resources.nominalQuota").stdout
        assert "DESCRIPTION" in deep
