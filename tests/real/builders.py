"""Objects the real-tier tests create: nodes, queues, Jobs and pod groups.

Queue objects come from the emulator tier's builders (one format for both
tiers); Jobs here add what the fake kubelet reads (how long pods run, how
they end, see tests/cluster/kwok-stages.yaml). Cluster-scoped names carry
the test's namespace, so a test never meets another's leftovers.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.integration.operator.harness import (
    API,
    cluster_queue,
    condition,
    flavor,
    is_true,
    local_queue,
    priority_class,
)

Body = dict[str, Any]
GPU = "nvidia.com/gpu"

__all__ = [
    "API",
    "cluster_queue",
    "condition",
    "event_counts",
    "flavor",
    "is_true",
    "job",
    "job_finished",
    "local_queue",
    "owned_workload",
    "pool_queue",
    "priority_class",
    "queue_usage",
    "running_cpu",
    "workload_of",
]


def pool_queue(control_plane: ControlPlane, kube: Kube, namespace: str,
               quota: dict[str, Any], *, nodes: int = 1, node_cpu: str = "8") -> str:
    """A test's own pool: ``nodes`` kwok nodes labelled ``pool=<namespace>-pool``, their
    flavor, a ClusterQueue of ``quota`` (resource -> nominal) that preempts lower
    priorities within it, LocalQueue ``main``, and WorkloadPriorityClass
    ``<namespace>-high`` (1000). Returns the pool's label value."""
    pool = f"{namespace}-pool"
    control_plane.add_nodes(*(node(f"{namespace}-n{i}", cpu=node_cpu, labels={"pool": pool})
                              for i in range(1, nodes + 1)))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(flavor(rf, labels={"pool": pool}),
               cluster_queue(cq, quotas={rf: quota},
                             preemption={"withinClusterQueue": "LowerPriority"}),
               local_queue("main", cq, namespace),
               priority_class(f"{namespace}-high", 1000))
    return pool


def owned_workload(kube: Kube, namespace: str, kind: str, name: str) -> Body | None:
    """The Workload standing for the object ``kind``/``name`` (its owner reference)."""
    for wl in kube.list(API, "Workload", namespace):
        if any(r.get("kind") == kind and r.get("name") == name
               for r in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def job(name: str, namespace: str, *, queue: str | None = "main", cpu: str = "1",
        parallelism: int = 1, completions: int | None = None, run_for: str = "2s",
        fail: bool = False, priority_class: str | None = None,
        node_selector: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        pod_labels: dict[str, str] | None = None, pod_annotations: dict[str, str] | None = None,
        scheduler_name: str | None = None, backoff_limit: int = 0, gpu: int = 0) -> Body:
    """A Job whose pods run for ``run_for`` on kwok nodes, then succeed (or ``fail``)."""
    labels: dict[str, str] = {}
    if queue is not None:
        labels["kuota.dev/queue-name"] = queue
    if priority_class:
        labels["kuota.dev/priority-class"] = priority_class
    pod_meta: Body = {"annotations": {"kuota.dev/test-run-for": run_for,
                                      **(pod_annotations or {})}}
    if fail:
        pod_meta["annotations"]["kuota.dev/test-exit"] = "fail"
    if pod_labels:
        pod_meta["labels"] = dict(pod_labels)
    resources: Body = {"requests": {"cpu": cpu}}
    if gpu:  # an extended resource: requests must equal limits
        resources = {"requests": {"cpu": cpu, GPU: str(gpu)}, "limits": {GPU: str(gpu)}}
    pod: Body = {"restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "registry.example/fake:1",
                                 "resources": resources}]}
    if node_selector:
        pod["nodeSelector"] = dict(node_selector)
    if scheduler_name:
        pod["schedulerName"] = scheduler_name
    spec: Body = {"parallelism": parallelism, "backoffLimit": backoff_limit,
                  "template": {"metadata": pod_meta, "spec": pod}}
    if completions is not None:
        spec["completions"] = completions
    meta: Body = {"name": name, "namespace": namespace, "labels": labels}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def workload_of(workloads: list[Body], job_name: str) -> Body | None:
    """The Workload owned by Job ``job_name`` among ``workloads``."""
    for wl in workloads:
        refs = wl["metadata"].get("ownerReferences") or []
        if any(r.get("kind") == "Job" and r.get("name") == job_name for r in refs):
            return wl
    return None


def job_finished(job_obj: Body | None) -> str | None:
    """'Complete' or 'Failed' once the Job controller says so."""
    for kind in ("Complete", "Failed"):
        if condition(job_obj, kind) and (condition(job_obj, kind) or {}).get("status") == "True":
            return kind
    return None


def queue_usage(cq: Body | None, field: str = "flavorsUsage") -> dict[tuple[str, str], str]:
    """(flavor, resource) -> total, from a ClusterQueue's status.flavorsUsage (what admitted
    workloads use) or ``flavorsReservation`` (what every workload holding quota holds)."""
    usage: dict[tuple[str, str], str] = {}
    for flavor_usage in ((cq or {}).get("status") or {}).get(field) or []:
        for resource in flavor_usage.get("resources") or []:
            usage[(flavor_usage["name"], resource["name"])] = str(resource.get("total"))
    return usage


def running_cpu(kube: Kube, namespace: str) -> int:
    """How many one-cpu pods are bound and not yet ended or terminating."""
    pods = kube.list("v1", "Pod", namespace)
    return sum(1 for p in pods if p["spec"].get("nodeName")
               and (p.get("status") or {}).get("phase") in ("Pending", "Running")
               and not p["metadata"].get("deletionTimestamp"))


def event_counts(kube: Kube, namespace: str, reason: str, kind: str) -> dict[str, int]:
    """How often each object of ``kind`` got an Event with ``reason`` (repeats counted)."""
    counts: dict[str, int] = {}
    for event in kube.list("v1", "Event", namespace,
                           field_selector=f"reason={reason},involvedObject.kind={kind}"):
        name = event["involvedObject"]["name"]
        counts[name] = counts.get(name, 0) + int(event.get("count") or 1)
    return counts
