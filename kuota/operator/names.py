"""The names the operator reads and writes: resources, labels, annotations, reasons.

Every label and annotation is listed once here, with Kueue's spelling next
to kuota's where Kueue has one: a Job written for Kueue works unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from quota.api import GROUP, VERSION


@dataclass(frozen=True, slots=True)
class Res:
    """A served resource: where its objects live in the API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


KUEUE: Final = "kueue.x-k8s.io"
#: The API kuota serves its queue objects and Workloads under (``kuota operator --api``):
#: its own group, or Kueue's (``kueue.x-k8s.io/v1beta2``, Kueue's manifests and tools
#: unchanged). Both are serialisations of the same models (:mod:`quota.api.kueue`).
APIS: Final = {"kuota": (GROUP, VERSION), "kueue": (KUEUE, "v1beta2")}

JOBS: Final = Res("batch", "v1", "jobs", "Job", True)
PODS: Final = Res("", "v1", "pods", "Pod", True)
NODES: Final = Res("", "v1", "nodes", "Node", False)
NAMESPACES: Final = Res("", "v1", "namespaces", "Namespace", False)
EVENTS: Final = Res("", "v1", "events", "Event", True)
LEASES: Final = Res("coordination.k8s.io", "v1", "leases", "Lease", True)
SECRETS: Final = Res("", "v1", "secrets", "Secret", True)
#: Kubernetes' pod priority classes (read with ``get``; the operator's ClusterRole allows it).
POD_PRIORITY_CLASSES: Final = Res("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass",
                                  False)
MEMBER_CLUSTERS: Final = Res(GROUP, VERSION, "memberclusters", "MemberCluster", False)
MULTICLUSTER_CONFIGS: Final = Res(GROUP, VERSION, "multiclusterconfigs", "MultiClusterConfig",
                                  False)

#: The LocalQueue a Job or pod group is submitted to.
QUEUE_LABELS: Final = (f"{GROUP}/queue-name", f"{KUEUE}/queue-name")
#: The WorkloadPriorityClass of a Job or pod group.
PRIORITY_LABELS: Final = (f"{GROUP}/priority-class", f"{KUEUE}/priority-class")
#: The Workload's ``spec.maximumExecutionTimeSeconds``, from a label on its Job or pods.
MAX_EXEC_TIME_LABELS: Final = (f"{GROUP}/max-exec-time-seconds",
                               f"{KUEUE}/max-exec-time-seconds")
#: Fewest pods a Job may start with (partial admission).
MIN_PARALLELISM_ANNOTATIONS: Final = (f"{GROUP}/job-min-parallelism",
                                      f"{KUEUE}/job-min-parallelism")
#: Plain pods that form one workload, and how many pods the group has.
POD_GROUP_LABELS: Final = (f"{GROUP}/pod-group-name", f"{KUEUE}/pod-group-name")
POD_GROUP_COUNT_ANNOTATIONS: Final = (f"{GROUP}/pod-group-total-count",
                                      f"{KUEUE}/pod-group-total-count")
#: On a pod of a group: "false" finishes the group (Failed) once a pod failed and none
#: runs, instead of waiting for a replacement of the failed pod.
RETRIABLE_ANNOTATIONS: Final = (f"{GROUP}/retriable-in-group", f"{KUEUE}/retriable-in-group")
#: On a pod of a group made by a controller that replaces its pods (a StatefulSet's): the
#: group never finishes.
SERVING_ANNOTATIONS: Final = (f"{GROUP}/pod-group-serving", f"{KUEUE}/pod-group-serving")
#: On a pod of a group whose pods are all alike: its Workload is made from the first pod.
FAST_ADMISSION_ANNOTATIONS: Final = (f"{GROUP}/pod-group-fast-admission",
                                     f"{KUEUE}/pod-group-fast-admission")
#: On the pods of a group made of declared roles (a LeaderWorkerSet's group): its pod sets
#: and their sizes, ``leader=1,worker=3``; each pod's own is ``kuota.dev/pod-set``.
ROLES_ANNOTATION: Final = f"{GROUP}/pod-group-roles"
#: On a pod kuota pins to topology domains (it carries :data:`TOPOLOGY_GATE` at creation);
#: set on the pod template of a started Job that asks for topology, and by the webhook.
TOPOLOGY_LABEL: Final = f"{GROUP}/tas"

# The queue objects and Workloads, under the API served (set by :func:`serve`).
SERVED: str
RESOURCE_FLAVORS: Res
COHORTS: Res
CLUSTER_QUEUES: Res
LOCAL_QUEUES: Res
ADMISSION_CHECKS: Res
TOPOLOGIES: Res
PRIORITY_CLASSES: Res
WORKLOADS: Res
#: The group of the WorkloadPriorityClass a Workload's ``priorityClassRef`` names.
PRIORITY_CLASS_GROUP: str
#: Queue objects, in the order a rebuild feeds them to the engine.
CONFIG_RESOURCES: tuple[Res, ...]
#: Watched through kopf handlers (few objects, few changes), by kind.
KOPF_WATCHED: dict[str, Res]
#: Watched by kuota's own informers (many objects, many changes; see ``informer``):
#: (resource, label key the objects must carry, or None for all).
#: (The kinds kuota queues, Jobs among them, are watched too: ``kuota.operator.kinds``.)
INFORMED: tuple[tuple[Res, str | None], ...]


def serve(api: str) -> None:
    """Read and write the queue objects and Workloads under ``api`` (a key of
    :data:`APIS`) from now on. The operator calls it once, before it starts; every
    module reads these names at call time (``names.WORKLOADS``), never binds them."""
    global SERVED, RESOURCE_FLAVORS, COHORTS, CLUSTER_QUEUES, LOCAL_QUEUES, ADMISSION_CHECKS
    global TOPOLOGIES, PRIORITY_CLASSES, WORKLOADS, PRIORITY_CLASS_GROUP, CONFIG_RESOURCES
    global KOPF_WATCHED, INFORMED
    group, version = APIS[api]

    def res(plural: str, kind: str, namespaced: bool = False) -> Res:
        return Res(group, version, plural, kind, namespaced)

    SERVED = api
    RESOURCE_FLAVORS = res("resourceflavors", "ResourceFlavor")
    COHORTS = res("cohorts", "Cohort")
    CLUSTER_QUEUES = res("clusterqueues", "ClusterQueue")
    LOCAL_QUEUES = res("localqueues", "LocalQueue", namespaced=True)
    ADMISSION_CHECKS = res("admissionchecks", "AdmissionCheck")
    TOPOLOGIES = res("topologies", "Topology")
    PRIORITY_CLASSES = res("workloadpriorityclasses", "WorkloadPriorityClass")
    WORKLOADS = res("workloads", "Workload", namespaced=True)
    PRIORITY_CLASS_GROUP = group
    CONFIG_RESOURCES = (RESOURCE_FLAVORS, ADMISSION_CHECKS, COHORTS, CLUSTER_QUEUES,
                        LOCAL_QUEUES)
    KOPF_WATCHED = {r.kind: r for r in (NAMESPACES, PRIORITY_CLASSES, TOPOLOGIES,
                                        *CONFIG_RESOURCES, MEMBER_CLUSTERS,
                                        MULTICLUSTER_CONFIGS)}
    INFORMED = ((WORKLOADS, None), *((PODS, label) for label in POD_GROUP_LABELS),
                (PODS, TOPOLOGY_LABEL), (NODES, None))


serve("kuota")
#: Scheduling gate held on a pod group's pods until the group is admitted.
ADMISSION_GATE: Final = f"{GROUP}/admission"
#: Scheduling gate held on a pod that asks for topology until it is given its domain.
TOPOLOGY_GATE: Final = f"{GROUP}/topology"
#: A pod's index in an Indexed Job (annotation, and label since Kubernetes 1.28).
COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
#: The Job a pod belongs to (the Job controller's labels, newest spelling first).
JOB_NAME_LABELS: Final = ("batch.kubernetes.io/job-name", "job-name")

#: On a Job kuota changed at admission: what to put back on eviction (JSON).
ORIGINAL_ANNOTATION: Final = f"{GROUP}/original-pod-template"
#: On a Job or pod kuota started: the admission it runs under.
ADMISSION_ANNOTATION: Final = f"{GROUP}/admission"
#: On a pod-group pod kuota started: its podSet (its shape before kuota changed it).
POD_SET_ANNOTATION: Final = f"{GROUP}/pod-set"
#: On a Workload: the Job or pod group it stands for.
JOB_UID_LABEL: Final = f"{GROUP}/job-uid"
POD_GROUP_LABEL: Final = f"{GROUP}/pod-group"
#: On a Workload: the kind of what it stands for (``kubectl get workloads`` shows it).
OWNER_KIND_LABEL: Final = f"{GROUP}/owner-kind"
#: LocalQueue used for unlabelled Jobs when the deployment opts in.
DEFAULT_QUEUE: Final = "default"

#: Who writes Events and leases.
COMPONENT: Final = "kuota-operator"


def _job_ref(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
            return dict(ref)
    return {}


def job_owner(meta: Mapping[str, Any]) -> str | None:
    """The name of the Job among an object's owner references (``metadata``), if any."""
    return str(_job_ref(meta).get("name") or "") or None


def owner_job_key(meta: Mapping[str, Any]) -> str | None:
    """``namespace/name`` of the Job owning an object (a Workload), if any."""
    name = job_owner(meta)
    return f"{meta.get('namespace') or 'default'}/{name}" if name else None


def pod_job(meta: Mapping[str, Any]) -> str | None:
    """The name of the Job a pod (its ``metadata``) belongs to: its Job owner reference,
    else the Job controller's label (a pod whose owner references were not set yet)."""
    return job_owner(meta) or first_of(meta.get("labels"), JOB_NAME_LABELS)


def first_of(mapping: dict[str, str] | None, keys: tuple[str, ...]) -> str | None:
    """The value of the first of ``keys`` present in ``mapping`` (kuota's spelling wins)."""
    for key in keys:
        if mapping and mapping.get(key):
            return mapping[key]
    return None
