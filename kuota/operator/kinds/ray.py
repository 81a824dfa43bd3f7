"""Ray (``ray.io/v1``, KubeRay): RayClusters and RayJobs.

A RayCluster is a head pod and *worker groups*; ``spec.suspend`` suspends it
(KubeRay deletes its pods, and says ``status.state: suspended`` once they
are gone). As in Kueue, the head is pod set ``head`` (one pod) and each
worker group one pod set named after its ``groupName``, of ``replicas``
pods (1 when unset) times ``numOfHosts`` (multi-host workers). A cluster
that autoscales (``enableInTreeAutoscaling``) changes its own size, which
a fixed admission cannot follow: kuota refuses to queue it (Kueue does,
unless its experimental elastic workloads are on). A RayCluster runs until
it is deleted; it is ready (its pods ready) at ``status.state: ready``.

A RayJob holds the spec of the cluster it makes (``spec.rayClusterSpec``),
with the same pod sets, and in the default ``K8sJobMode`` a Job submits
the Ray job: pod set ``submitter``, one pod of ``spec.submitterPodTemplate``
or, when it has none, of KubeRay's default submitter (which kuota writes
into the RayJob at its start, with its flavor, as Kueue does). A RayJob
ends when ``status.jobDeploymentStatus`` is ``Complete`` or ``Failed``
(Succeeded when ``status.jobStatus`` is ``SUCCEEDED``).
"""

from __future__ import annotations

from typing import Any

from kuota.operator.kinds.templated import Role, TemplatedKind
from kuota.operator.names import Res

Body = dict[str, Any]

RAYCLUSTERS = Res("ray.io", "v1", "rayclusters", "RayCluster", True)
RAYJOBS = Res("ray.io", "v1", "rayjobs", "RayJob", True)
#: KubeRay's submitter pod when a RayJob names none (its requests are what quota counts).
DEFAULT_SUBMITTER: Body = {
    "spec": {"restartPolicy": "Never",
             "containers": [{"name": "ray-job-submitter", "image": "rayproject/ray",
                             "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                           "requests": {"cpu": "500m", "memory": "200Mi"}}}]}}


def autoscaling_problem(obj: Body) -> str | None:
    """Why kuota will not queue a RayCluster or RayJob: it autoscales (None: it may)."""
    spec = obj.get("spec") or {}
    cluster = spec.get("rayClusterSpec") if obj.get("kind") == "RayJob" else spec
    if (cluster or {}).get("enableInTreeAutoscaling") is True:
        where = "spec.rayClusterSpec" if obj.get("kind") == "RayJob" else "spec"
        return (f"{where}.enableInTreeAutoscaling: an autoscaling Ray cluster changes its own "
                f"size, which a queued admission cannot follow; set it to false to queue it")
    return None


def _cluster_roles(cluster: Body) -> list[Role]:
    head = cluster.setdefault("headGroupSpec", {})
    roles = [Role("head", 1, head.setdefault("template", {}))]
    for group in cluster.get("workerGroupSpecs") or []:
        replicas = group.get("replicas")
        count = 1 if replicas is None else int(replicas)
        hosts = int(group.get("numOfHosts") or 1)
        roles.append(Role(str(group.get("groupName")).lower(), count * max(hosts, 1),
                          group.setdefault("template", {})))
    return roles


class RayClusterKind(TemplatedKind):
    kind = "RayCluster"
    res = RAYCLUSTERS
    prefix = "raycluster"

    def roles(self, obj: Body) -> list[Role]:
        return _cluster_roles(obj.setdefault("spec", {}))

    def refusal(self, obj: Body) -> str | None:
        return autoscaling_problem(obj)

    def pods_left(self, obj: Body) -> int:
        state = (obj.get("status") or {}).get("state")
        return 0 if state in (None, "", "suspended") else 1

    def finished(self, obj: Body) -> tuple[str, str] | None:
        return None  # a cluster runs until it is deleted

    def pods_ready(self, obj: Body) -> bool:
        return (obj.get("status") or {}).get("state") == "ready"


class RayJobKind(TemplatedKind):
    kind = "RayJob"
    res = RAYJOBS
    prefix = "rayjob"

    def roles(self, obj: Body) -> list[Role]:
        spec = obj.setdefault("spec", {})
        roles = _cluster_roles(spec.setdefault("rayClusterSpec", {}))
        if spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            if not isinstance(spec.get("submitterPodTemplate"), dict):
                spec["submitterPodTemplate"] = {"spec": dict(DEFAULT_SUBMITTER["spec"])}
            roles.append(Role("submitter", 1, spec["submitterPodTemplate"]))
        return roles

    def refusal(self, obj: Body) -> str | None:
        return autoscaling_problem(obj)

    def pods_left(self, obj: Body) -> int:
        status = (obj.get("status") or {}).get("jobDeploymentStatus")
        return 0 if status in (None, "", "New", "Suspended", "Complete", "Failed") else 1

    def finished(self, obj: Body) -> tuple[str, str] | None:
        status = obj.get("status") or {}
        if status.get("jobDeploymentStatus") not in ("Complete", "Failed"):
            return None
        message = status.get("message") or f"Ray job {status.get('jobStatus') or 'ended'}"
        return ("Succeeded" if status.get("jobStatus") == "SUCCEEDED" else "Failed"), message

    def pods_ready(self, obj: Body) -> bool:
        cluster = (obj.get("status") or {}).get("rayClusterStatus") or {}
        return cluster.get("state") == "ready"


RAYCLUSTER = RayClusterKind()
RAYJOB = RayJobKind()
