"""Deployment settings of the operator (``kuota operator`` flags map onto these)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kuota.operator import names
from kuota.operator.retries import RetryPolicy
from quota.config import EngineConfig, Selector

#: The kinds whose objects are queued through their pods (Kueue's pod-based integrations).
POD_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "LeaderWorkerSet"})
#: The label Kubernetes gives every namespace: its name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Options:
    #: Namespaces whose Jobs and Workloads are managed; empty: all (cluster-wide).
    namespaces: tuple[str, ...] = ()
    #: Submit unlabelled Jobs to a LocalQueue named ``default`` when the namespace has one
    #: (Kueue's feature gate LocalQueueDefaulting).
    default_queue: bool = False
    #: The kinds queued (``Job``, ``JobSet``, ..., ``Pod``, ``Deployment``, ``StatefulSet``,
    #: ``LeaderWorkerSet``: Kueue's ``integrations.frameworks``); None: every kind kuota knows.
    frameworks: frozenset[str] | None = None
    #: Namespaces (by their labels) whose pods, Deployments, StatefulSets and LeaderWorkerSets
    #: are queued (Kueue's ``managedJobsNamespaceSelector``); None: every namespace.
    pod_namespaces: Selector | None = None
    engine: EngineConfig = field(default_factory=EngineConfig)
    #: How often queue statuses and waiting workloads' reasons are written (seconds).
    status_interval: float = 1.0
    #: Writes in flight at once.
    write_concurrency: int = 32
    #: Waiting workloads whose reason (why they wait) is written per status interval, at
    #: most: these writes inform, and must not take the API server from the decisions.
    reason_writes: int = 10
    #: Re-reads after a 409 Conflict before a write is given up.
    conflict_retries: int = 5
    #: How the API client repeats a request through transient failures (429, 5xx, no answer).
    api_retry: RetryPolicy = field(default_factory=RetryPolicy)
    #: Work whose write failed after the API client's own retries is queued again after
    #: this pause, doubled with each further failure up to ``requeue_backoff_max`` (seconds).
    requeue_backoff: float = 1.0
    requeue_backoff_max: float = 60.0
    #: Post Kubernetes Events on Jobs and Workloads.
    events: bool = True
    #: Leader election: a Lease in ``lease_namespace``; None runs as the only replica.
    lease_name: str | None = "kuota-operator"
    lease_namespace: str = "kuota-system"
    lease_duration: float = 15.0
    lease_renew: float = 5.0
    #: This replica's identity in the Lease (default: host name and process id).
    identity: str = ""
    #: This replica's Pod (namespace, name), from the downward API: the leader labels it.
    pod: tuple[str, str] | None = None
    #: Multi-cluster dispatch: this manager's id, the ``kuota.dev/origin`` label of its copies.
    manager_id: str = "kuota"
    #: Where member kubeconfig Secrets are read (the operator's own namespace).
    operator_namespace: str = "kuota-system"
    #: How often each member cluster is observed (its health check), seconds.
    member_interval: float = 10.0
    #: How often the multi-cluster loop runs (task results, dispatch, failover), seconds.
    federation_tick: float = 0.5
    #: Pause after a copy's creation failed (all its task retries spent), doubled with each
    #: further failure for that workload and member, seconds.
    create_backoff: float = 5.0
    #: Failed creations after which a member counts as refusing the workload: it is evicted
    #: and dispatched again without that member.
    create_attempts: int = 5
    #: Redis for the remote-call task queue; None: an in-process fakeredis. Pool members
    #: (MemberCluster ``spec.pool``) are the pools of workers registered in this Redis.
    redis_url: str | None = None
    #: Key prefix of the Redis-mode store the pool members live in (``kuota scheduler --prefix``).
    pool_prefix: str = "kuota"

    def queues(self, kind: str) -> bool:
        """Whether objects of ``kind`` (kuota's kind name) are queued."""
        return self.frameworks is None or kind in self.frameworks

    @property
    def queues_pod_groups(self) -> bool:
        """Whether any kind queued through its pods is (their pod groups are watched)."""
        return self.frameworks is None or bool(self.frameworks & POD_KINDS)

    def queues_pods(self, kind: str, namespace: str | None,
                    namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether pods standing for ``kind`` (``Pod``, ``Deployment``, ``StatefulSet``,
        ``LeaderWorkerSet``) are queued in ``namespace``, which has these labels (None: not
        seen yet; its name label is known all the same)."""
        if not self.queues(kind):
            return False
        labels = {**(namespace_labels or {}), NAMESPACE_NAME_LABEL: namespace or "default"}
        return self.pod_namespaces is None or self.pod_namespaces.matches(labels)

    def leaves_pod(self, pod: Mapping[str, Any], namespace: str | None,
                   namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether the webhook leaves a new pod as it is: one standing for a pod-based kind
        not queued (there), and neither a Job's pod nor one of an object kuota started."""
        meta = pod.get("metadata") or {}
        if names.pod_job(meta) is not None or names.TOPOLOGY_LABEL in (meta.get("labels") or {}):
            return False
        return not self.queues_pods(pod_kind(meta), namespace, namespace_labels)


def pod_kind(meta: Mapping[str, Any]) -> str:
    """The kind a new pod's ``metadata`` says it stands for, as Kueue's frameworks name
    them: ``LeaderWorkerSet``, ``Deployment`` (a ReplicaSet's pod with the Deployment
    controller's ``pod-template-hash``), ``StatefulSet``, else ``Pod``."""
    labels = meta.get("labels") or {}
    if "leaderworkerset.sigs.k8s.io/name" in labels:
        return "LeaderWorkerSet"
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            if ref.get("kind") == "ReplicaSet" and "pod-template-hash" in labels:
                return "Deployment"
            if ref.get("kind") == "StatefulSet":
                return "StatefulSet"
    return "Pod"
