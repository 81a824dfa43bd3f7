"""Multi-cluster dispatch between two real control planes (and an emulated member).

The manager is the session's control plane; the member is a second real
control plane of the same version with its own Job controller and kwok nodes;
a third member is an emulator (no Job controller: a copy there never runs).

* A Job dispatched to the real member runs on its kwok nodes; its ``Complete``
  (or ``Failed``) comes home and the manager's Job — ``spec.managedBy`` set by
  the webhook, so the manager's own Job controller leaves it alone — accepts
  it from kuota through the status subresource; the Workload finishes.
* The real member is stopped while a long Job runs there: the workload is
  evicted (``ClusterLost``) and dispatched to the emulated member; when the
  real member comes back its stale copy is deleted, and at no sample are two
  copies running.
* A JobSet (JobSet's own controller v0.10.1 running in both clusters) gets
  ``spec.managedBy`` from the webhook, so the manager's JobSet controller
  leaves it alone; its copy runs in the real member with each role on the
  flavor's nodes, its ``Completed`` comes home and the Workload finishes. A
  long one deleted in the manager has its Workload and its copy deleted.
"""

from __future__ import annotations

import base64
import pathlib
import time
from collections.abc import Iterator

import pytest
import yaml

from tests.cluster.controllers import PeerController, require_controller
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.cluster.peer_releases import launch_of
from tests.emulator import Emulator, kubeconfig
from tests.real import builders as b
from tests.real.operator import OPERATOR_NAMESPACE, Installation, OperatorProcess
from tests.real.test_real_peer_controllers import JOBSET_API, JOBSET_NAME_LABEL, paralleljobs

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK_CONTROLLER = "kuota.dev/multicluster"


@pytest.fixture(scope="session")
def member_plane(control_plane: ControlPlane,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A second control plane of the same version: the member cluster."""
    workdir = tmp_path_factory.mktemp(f"member-{control_plane.binaries.version}")
    with ControlPlane(control_plane.binaries, workdir) as plane:
        plane.kubectl("apply", "-f", str(ROOT / "manifests" / "operator" / "member-rbac.yaml"))
        yield plane


@pytest.fixture(scope="session")
def member_jobset(member_plane: ControlPlane) -> Iterator[PeerController]:
    """JobSet's controller in the member cluster (the manager's is ``jobset_controller``)."""
    with PeerController(require_controller("jobset"), member_plane,
                        launch_of("jobset")) as controller:
        yield controller


def _secret(name: str, config: dict) -> dict:
    data = base64.b64encode(yaml.safe_dump(config).encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": OPERATOR_NAMESPACE},
            "data": {"kubeconfig": data}}


def _queues(ns: str, members: list[str], flavor: str) -> list[dict]:
    check, config = f"{ns}-dispatch", f"{ns}-fleet"
    return [
        {"apiVersion": b.API, "kind": "AdmissionCheck", "metadata": {"name": check},
         "spec": {"controllerName": CHECK_CONTROLLER,
                  "parameters": {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                 "name": config}}},
        {"apiVersion": b.API, "kind": "MultiClusterConfig", "metadata": {"name": config},
         "spec": {"clusters": members, "staleAfter": "3s", "workerLostTimeout": "6s"}},
        b.flavor(flavor, labels={"pool": flavor}),
        b.cluster_queue(f"{ns}-cq", quotas={flavor: {"cpu": 16}},
                        admissionChecksStrategy={"admissionChecks": [{"name": check}]}),
        b.local_queue("main", f"{ns}-cq", ns)]


def _member(name: str, secret: str, cost: str) -> dict:
    return {"apiVersion": b.API, "kind": "MemberCluster", "metadata": {"name": name},
            "spec": {"kubeConfig": {"location": secret, "locationType": "Secret"},
                     "cost": [{"resource": "cpu", "price": cost}]}}


def test_jobs_run_in_a_real_member_and_fail_over_to_another(
        control_plane: ControlPlane, member_plane: ControlPlane, kube: Kube, namespace: str,
        installation: Installation, tmp_path: pathlib.Path) -> None:
    ns = namespace
    flavor = f"{ns}-rf"
    member_plane.add_nodes(*(node(f"{ns}-m{i}", cpu="8", labels={"pool": flavor})
                             for i in (1, 2)))
    real_config = yaml.safe_load(member_plane.service_account_kubeconfig(
        "kube-system", "kuota-manager", tmp_path / "member.kubeconfig").read_text())
    member = Kube(member_plane.admin_kubeconfig, describe=member_plane.logs)
    with Emulator() as emulated:
        emulated.create({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": "e1", "labels": {"pool": flavor}},
                         "spec": {}, "status": {
                             "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                             "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        real, backup = f"{ns}-real", f"{ns}-emulated"
        kube.apply(_secret(real, real_config), _secret(backup, kubeconfig(emulated.url)),
                   # The real member is cheaper: it is chosen while it is healthy.
                   _member(real, real, "1"), _member(backup, backup, "5"),
                   *_queues(ns, [real, backup], flavor))
        with OperatorProcess(installation, tmp_path, "--member-interval", "1",
                             "--manager-id", ns) as operator:
            kube.wait_for(lambda: all(b.is_true(kube.find(b.API, "MemberCluster", m), "Active")
                                      for m in (real, backup)), what="both members Active")

            # 1. Complete comes home.
            created = kube.create(b.job("ok", ns, cpu="1", run_for="3s"))
            assert created["spec"].get("managedBy") == CHECK_CONTROLLER, created["spec"]
            kube.wait_for(lambda: member.find("batch/v1", "Job", "ok", ns),
                          what="the copy in the real member")
            assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "ok", ns)),
                                 what="Complete to come home", timeout=60) == "Complete"
            assert kube.list("v1", "Pod", ns) == []  # nothing ran in the manager
            kube.wait_for(lambda: b.is_true(b.workload_of(kube.list(b.API, "Workload", ns),
                                                          "ok"), "Finished"),
                          what="the Workload to finish")

            # 2. Failed comes home.
            kube.create(b.job("bad", ns, cpu="1", run_for="1s", fail=True))
            assert kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "bad", ns)),
                                 what="Failed to come home", timeout=60) == "Failed"

            # 3. The real member is lost while a long Job runs there.
            kube.create(b.job("long", ns, cpu="1", run_for="1h"))
            kube.wait_for(lambda: [p for p in member.list("v1", "Pod", ns,
                                                          label_selector="job-name=long")
                                   if (p.get("status") or {}).get("phase") == "Running"],
                          what="the long Job running in the real member", timeout=60)
            member_plane.processes["kube-apiserver"].stop()
            try:
                kube.wait_for(lambda: emulated.find("batch/v1", "Job", "long", ns),
                              what="the copy dispatched to the emulated member", timeout=60)
            finally:
                member_plane.processes["kube-apiserver"].start()
            member_plane.wait_api_ready()

            def real_copy_running() -> bool:
                return any((p.get("status") or {}).get("phase") == "Running"
                           and not p["metadata"].get("deletionTimestamp")
                           for p in member.list("v1", "Pod", ns, label_selector="job-name=long"))

            deadline = time.monotonic() + 60
            while member.find("batch/v1", "Job", "long", ns) is not None:
                # The emulated copy exists from here on: the real one may linger, but
                # must be on its way out, never running beside it for long.
                assert time.monotonic() < deadline, (
                    f"the stale copy in the real member was never deleted\n{operator.tail(80)}")
                time.sleep(0.5)
            assert not real_copy_running()
            assert emulated.find("batch/v1", "Job", "long", ns) is not None
        member.close()


def test_a_jobset_runs_in_a_real_member_and_its_completion_comes_home(
        control_plane: ControlPlane, member_plane: ControlPlane,
        jobset_controller: PeerController, member_jobset: PeerController, kube: Kube,
        namespace: str, installation: Installation, tmp_path: pathlib.Path) -> None:
    ns = namespace
    flavor = f"{ns}-rf"
    member_plane.add_nodes(node(f"{ns}-m1", cpu="8", labels={"pool": flavor}))
    config = yaml.safe_load(member_plane.service_account_kubeconfig(
        "kube-system", "kuota-manager", tmp_path / "member.kubeconfig").read_text())
    member = Kube(member_plane.admin_kubeconfig, describe=member_plane.logs)
    real = f"{ns}-real"
    kube.apply(_secret(real, config), _member(real, real, "1"), *_queues(ns, [real], flavor))
    with OperatorProcess(installation, tmp_path, "--member-interval", "1",
                         "--manager-id", ns) as operator:
        kube.wait_for(lambda: b.is_true(kube.find(b.API, "MemberCluster", real), "Active"),
                      what="the member Active")
        body = paralleljobs("train", ns, workers=1, run_for="3s")
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        created = kube.create(body)
        assert created["spec"].get("managedBy") == CHECK_CONTROLLER, created["spec"]
        assert created["spec"]["suspend"] is True

        copy = kube.wait_for(lambda: member.find(JOBSET_API, "JobSet", "train", ns),
                             what="the JobSet's copy in the member", timeout=60)
        assert "managedBy" not in copy["spec"] and copy["spec"]["suspend"] is False
        assert [r["template"]["spec"]["template"]["spec"].get("nodeSelector")
                for r in copy["spec"]["replicatedJobs"]] == [{"pool": flavor}] * 2

        def completed() -> dict | None:
            local = kube.get(JOBSET_API, "JobSet", "train", ns)
            return local if b.is_true(local, "Completed") else None

        local = kube.wait_for(completed, what="Completed to come home", timeout=90)
        assert local["spec"]["suspend"] is True  # it never ran in the manager
        assert kube.list("v1", "Pod", ns) == []
        pods = member.list("v1", "Pod", ns, label_selector=f"{JOBSET_NAME_LABEL}=train")
        assert len(pods) == 5 and {p["spec"]["nodeName"] for p in pods} == {f"{ns}-m1"}
        kube.wait_for(lambda: b.is_true(b.owned_workload(kube, ns, "JobSet", "train"),
                                        "Finished"), what="the Workload to finish")

        long = paralleljobs("long", ns, workers=1, run_for="1h")
        long["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        kube.create(long)
        kube.wait_for(lambda: [p for p in member.list(
            "v1", "Pod", ns, label_selector=f"{JOBSET_NAME_LABEL}=long")
            if (p.get("status") or {}).get("phase") == "Running"],
            what="the long JobSet running in the member", timeout=60)
        kube.delete(JOBSET_API, "JobSet", "long", ns)
        kube.wait_for(lambda: member.find(JOBSET_API, "JobSet", "long", ns) is None,
                      what=f"its copy deleted in the member\n{operator.tail(40)}", timeout=60)
        assert b.owned_workload(kube, ns, "JobSet", "long") is None
    member.close()
