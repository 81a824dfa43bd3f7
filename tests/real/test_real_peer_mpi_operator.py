"""Peer controllers on the real control plane: Kubeflow's MPI operator, as released.

Before kuota can queue MPIJobs (kubeflow.org/v2beta1), the MPI operator (built
from its Go module by hack/controllers/build-controllers.sh, run by
tests/cluster/controllers.py as its ServiceAccount) must be shown to work here
on its own: an MPIJob becomes worker pods and a launcher Job, kube-scheduler
binds their pods to kwok nodes, the launcher runs to the end, the operator
reports the MPIJob Succeeded and, by the example's clean-pod policy, deletes the
workers that still run.

The kuota operator runs too: its shipped webhook sees every MPIJob, Job and pod
created in a test namespace (failurePolicy Fail) and must let these through
untouched — they carry no queue label.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controllers import PeerController
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.cluster.peer_releases import peer_controller_fixture
from tests.real import builders as b
from tests.real.operator import OperatorProcess

MPI_API = "kubeflow.org/v2beta1"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"

# Here until tests/real/conftest.py defines it for every real-tier test (then remove this
# line: two definitions would start two managers on one control plane, which is refused).
# Per module, not per session: the release's health server takes :8080 whatever it is
# told, so the MPI operators of two control planes (two pytest-xdist workers) take turns
# (tests/cluster/controllers.py, Launch.fixed_ports), and a session-long one would keep the
# other worker waiting for the rest of its session.
mpi_operator_controller = peer_controller_fixture("mpi-operator", scope="module")


def pi(name: str, namespace: str, *, workers: int = 2, launcher_runs_for: str = "3s",
       cpu: str = "250m", node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """The MPI operator's example examples/v2beta1/pi/pi.yaml: a launcher running
    ``mpirun -n 2 /home/mpiuser/pi`` over two workers running sshd. Changed for kwok: the
    launcher's run becomes the fake kubelet's run-for annotation and the workers' sshd
    runs until deleted ("1h", tests/cluster/kwok-stages.yaml), the containers ask for a
    little CPU instead of one CPU and 1Gi each, and ``node_selector`` keeps the pods on the
    test's own nodes (the control plane is shared)."""

    def replica(replicas: int, container: dict[str, Any], run_for: str) -> dict[str, Any]:
        container = {"image": "mpioperator/mpi-pi:openmpi",
                     "securityContext": {"runAsUser": 1000},
                     "resources": {"limits": {"cpu": cpu, "memory": "64Mi"}}, **container}
        spec: dict[str, Any] = {"containers": [container]}
        if node_selector:
            spec["nodeSelector"] = dict(node_selector)
        return {"replicas": replicas,
                "template": {"metadata": {"annotations": {"kuota.dev/test-run-for": run_for}},
                             "spec": spec}}

    launcher = {"name": "mpi-launcher", "command": ["mpirun"],
                "args": ["-n", str(workers), "/home/mpiuser/pi"]}
    worker = {"name": "mpi-worker", "command": ["/usr/sbin/sshd"],
              "args": ["-De", "-f", "/home/mpiuser/.sshd_config"]}
    return {"apiVersion": MPI_API, "kind": "MPIJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"slotsPerWorker": 1,
                     "runPolicy": {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 60},
                     "sshAuthMountPath": "/home/mpiuser/.ssh",
                     "mpiReplicaSpecs": {
                         "Launcher": replica(1, launcher, launcher_runs_for),
                         "Worker": replica(workers, worker, "1h")}}}


class TestMPIOperator:
    def test_an_mpijob_runs_its_launcher_and_workers_on_kwok_nodes_to_success(
            self, control_plane: ControlPlane, mpi_operator_controller: PeerController,
            kube: Kube, namespace: str, operator: OperatorProcess) -> None:
        nodes = {f"{namespace}-n1", f"{namespace}-n2"}
        pool = {"pool": f"{namespace}-pool"}
        control_plane.add_nodes(*(node(n, cpu="4", labels=pool) for n in sorted(nodes)))

        created = kube.create(pi("pi", namespace, node_selector=pool))
        # No queue label: kuota's webhook let it through unsuspended.
        assert not created["spec"]["runPolicy"].get("suspend"), created["spec"]

        selector = f"{JOB_NAME_LABEL}=pi"
        # What the operator makes for the workers to be reached by the launcher: the
        # hostfile, the SSH keys, the headless Service of the workers.
        config = kube.wait_for(lambda: kube.find("v1", "ConfigMap", "pi-config", namespace),
                               what="the MPIJob's hostfile ConfigMap")
        assert config["data"]["hostfile"].split("\n")[:2] == \
            [f"pi-worker-{i}.pi.{namespace}.svc slots=1" for i in range(2)], config["data"]
        assert kube.wait_for(lambda: kube.find("v1", "Secret", "pi-ssh", namespace),
                             what="the MPIJob's SSH Secret")["type"] == "kubernetes.io/ssh-auth"
        service = kube.wait_for(lambda: kube.find("v1", "Service", "pi", namespace),
                                what="the workers' headless Service")
        assert service["spec"]["clusterIP"] == "None"

        launcher = kube.wait_for(lambda: kube.find("batch/v1", "Job", "pi-launcher", namespace),
                                 what="the launcher Job")
        owner = launcher["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "pi", True)
        assert not launcher["spec"].get("suspend"), launcher["spec"]

        pods = kube.wait_for(
            lambda: (found := kube.list("v1", "Pod", namespace, label_selector=selector))
            and len(found) == 3 and all(p["spec"].get("nodeName") for p in found) and found,
            what="the MPIJob's launcher and 2 worker pods to be bound", timeout=90)
        roles = sorted(p["metadata"]["labels"][JOB_ROLE_LABEL] for p in pods)
        assert roles == ["launcher", "worker", "worker"], roles
        assert {p["spec"]["nodeName"] for p in pods} <= nodes

        def succeeded() -> dict[str, Any] | None:
            mpijob = kube.get(MPI_API, "MPIJob", "pi", namespace)
            return mpijob if b.is_true(mpijob, "Succeeded") else None

        mpijob = kube.wait_for(succeeded, what="the MPIJob to succeed", timeout=120)
        assert not b.is_true(mpijob, "Failed"), mpijob["status"]
        assert mpijob["status"]["replicaStatuses"]["Launcher"].get("succeeded") == 1, \
            mpijob["status"]
        assert b.job_finished(kube.get("batch/v1", "Job", "pi-launcher", namespace)) == \
            "Complete"
        launcher_pods = kube.list("v1", "Pod", namespace,
                                  label_selector=f"{selector},{JOB_ROLE_LABEL}=launcher")
        assert [p["status"]["phase"] for p in launcher_pods] == ["Succeeded"], launcher_pods
        # cleanPodPolicy Running: the workers, still running sshd, are deleted.
        kube.wait_for(lambda: not kube.list("v1", "Pod", namespace,
                                            label_selector=f"{selector},{JOB_ROLE_LABEL}=worker"),
                      what="the running workers to be cleaned up", timeout=60)


class TestQueuedMPIJob:
    """The pi example with only the queue label added, under kuota."""

    def test_queued_admitted_with_its_flavor_and_finished(
            self, control_plane: ControlPlane, mpi_operator_controller: PeerController,
            kube: Kube, namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 1, "memory": "1Gi"},
                            node_cpu="4")
        body = pi("pi", namespace)
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        created = kube.create(body)
        assert created["spec"]["runPolicy"]["suspend"] is True

        def workload() -> dict[str, Any] | None:
            return next((w for w in kube.list(b.API, "Workload", namespace)
                         if w["metadata"]["name"].startswith("mpijob-pi-")), None)

        queued = kube.wait_for(workload, what="the MPIJob's Workload")
        assert [(ps["name"], ps["count"]) for ps in queued["spec"]["podSets"]] == \
            [("launcher", 1), ("worker", 2)]

        def succeeded() -> dict[str, Any] | None:
            job = kube.get(MPI_API, "MPIJob", "pi", namespace)
            return job if b.is_true(job, "Succeeded") else None

        job = kube.wait_for(succeeded, what="the MPIJob admitted and succeeded", timeout=120)
        specs = job["spec"]["mpiReplicaSpecs"]
        assert [specs[r]["template"]["spec"]["nodeSelector"] for r in ("Launcher", "Worker")] \
            == [{"pool": pool}, {"pool": pool}]
        kube.wait_for(lambda: b.is_true(workload(), "Finished"), what="its Workload to finish")

    def test_preempted_stopped_restored_and_admitted_again(
            self, control_plane: ControlPlane, mpi_operator_controller: PeerController,
            kube: Kube, namespace: str, operator: OperatorProcess) -> None:
        pool = b.pool_queue(control_plane, kube, namespace, {"cpu": 1, "memory": "1Gi"},
                            node_cpu="4")
        body = pi("low", namespace, launcher_runs_for="1h")  # 3 pods of 250m
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
        kube.create(body)

        def running() -> int:
            return len([p for p in kube.list("v1", "Pod", namespace,
                                             label_selector=f"{JOB_NAME_LABEL}=low")
                        if (p.get("status") or {}).get("phase") == "Running"
                        and not p["metadata"].get("deletionTimestamp")])

        kube.wait_for(lambda: running() == 3, what="the MPIJob running", timeout=90)
        kube.create(b.job("high", namespace, cpu="500m", run_for="3s",
                          priority_class=f"{namespace}-high"))

        def selectors(job: dict[str, Any]) -> list[Any]:
            specs = job["spec"]["mpiReplicaSpecs"]
            return [specs[r]["template"]["spec"].get("nodeSelector")
                    for r in ("Launcher", "Worker")]

        kube.wait_for(lambda: (j := kube.get(MPI_API, "MPIJob", "low", namespace))
                      and j["spec"]["runPolicy"].get("suspend") is True
                      and selectors(j) == [None, None],
                      what="the MPIJob suspended and its templates restored")
        kube.wait_for(lambda: b.job_finished(kube.get("batch/v1", "Job", "high", namespace)),
                      what="the preemptor to run once the MPIJob's pods are gone", timeout=90)
        kube.wait_for(lambda: running() == 3, what="the MPIJob admitted and running again",
                      timeout=90)
        job = kube.get(MPI_API, "MPIJob", "low", namespace)
        assert selectors(job) == [{"pool": pool}, {"pool": pool}]
