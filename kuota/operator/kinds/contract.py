"""The contract a workload kind fills in, and what every kind shares.

kuota queues objects of many kinds — batch Jobs, JobSets, and more — the
same way: a queue-labelled object is created suspended, stands for one
Workload whose pod sets it describes, is started (unsuspended, each pod
set's template given its flavors' node labels and tolerations) once that
Workload is admitted, and is stopped and restored when it is evicted. What
differs from kind to kind is only *where* things are in the object: which
field suspends it, where its pod templates are, how many pods each runs,
which condition says it ended. That is the contract
(:class:`WorkloadKind`), after Kueue's ``GenericJob``
(pkg/controller/jobframework): suspended?/suspend, pod sets from the object,
run with the admission's pod-set infos, restore on eviction, finished,
pods ready, active. Each kind is one small module filling it in; the
operator's owners, writer and webhook speak only to the contract.

Everything here is pure: functions of object bodies (dicts as the API
returns them) that return values — a Workload manifest, the next
:class:`Write`. Replaying a decision computes the same write, or ``None``
once the object is as it should be, so a restart or a watch event of
kuota's own write costs nothing.

Pod groups (plain Pods that start together) are the one kind without a
suspend field: their pods are *gated* instead, and stopping one means
deleting its pods (Kueue's ``JobWithCustomStop``); they fill in their own
functions (:mod:`kuota.operator.kinds.podgroups`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from kuota.operator import names
from kuota.operator.names import Res
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Write:
    """One write towards the object a Workload stands for."""

    #: What it does: ``start``, ``suspend``, ``reset`` (clear a Job's startTime),
    #: ``prepare`` (what the admission needs, written while it is still suspended, for a
    #: kind whose controller refuses both in one write), ``restore`` (suspended, with the
    #: templates put back).
    step: Literal["start", "suspend", "reset", "prepare", "restore"]
    #: A JSON merge patch of the object.
    patch: Body
    #: ``status`` for a write to the status subresource; None for the object itself.
    subresource: str | None = None


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    """What an admission gives one pod set: its flavors' node labels and tolerations, and
    how many pods it may run (fewer than asked with partial admission)."""

    name: str
    count: int
    node_selector: dict[str, str]
    tolerations: list[Body]


class WorkloadKind(Protocol):
    """A kind of object kuota queues by suspending it (Kueue's ``GenericJob``)."""

    #: The object's kind (``Job``, ``JobSet``) and where it is served.
    kind: str
    res: Res
    #: The Workload's name starts with it (Kueue's spelling: ``job``, ``jobset``).
    prefix: str
    #: The kind of the child object it runs through, if any: one of the same name and
    #: namespace, controlled by it, that its controller builds from it (a TrainJob's
    #: JobSet, built from its training runtime). The pod sets are read from the child, so
    #: the operator gives the object with its child attached (:func:`with_child`).
    runs_through: str | None

    def pod_sets(self, obj: Body) -> list[Body]:
        """The Workload's ``podSets``: name, count (and minCount), template — as the user
        asked, not as kuota changed them to run."""
        ...

    def start_write(self, obj: Body, admission: Admission,
                    flavors: Mapping[str, FlavorConfig]) -> Write | None:
        """The next write that runs ``obj`` under ``admission`` (each pod set given its
        flavors' node labels and tolerations, see :func:`pod_set_infos`); None once it
        runs so, or while the pods of a previous run are still going."""
        ...

    def stop_write(self, obj: Body) -> Write | None:
        """The next write towards a suspended, restored ``obj``; None once it is."""
        ...

    def suspended(self, obj: Body) -> bool:
        """Whether the object is suspended."""
        ...

    def suspend_patch(self) -> Body:
        """The merge patch that suspends an object of this kind (the webhook's too)."""
        ...

    def refusal(self, obj: Body) -> str | None:
        """Why an object of this kind cannot be queued at all (the webhook refuses it,
        naming the field); None when it can."""
        ...

    def stopped(self, obj: Body) -> bool:
        """Suspended, and none of its pods left running or terminating: an evicted
        workload's quota is released only then."""
        ...

    def finished(self, obj: Body) -> tuple[str, str] | None:
        """("Succeeded" | "Failed", message) once the object has ended."""
        ...

    def pods_ready(self, obj: Body) -> bool:
        """Every pod it runs now is ready (or succeeded), for ``waitForPodsReady``."""
        ...


# -- what every kind shares ------------------------------------------------------------------

#: Where :func:`with_child` puts the child of an object that runs through one (a key no
#: API object has: a domain-qualified name).
CHILD = "kuota.dev/child"


def with_child(obj: Body, child: Body | None) -> Body:
    """``obj`` (not copied deeply) with the child it runs through attached, when there is
    one and ``obj`` controls it (by uid: an older object's child of the same name is not
    its own)."""
    if child is None:
        return obj
    uid = (obj.get("metadata") or {}).get("uid")
    refs = (child.get("metadata") or {}).get("ownerReferences") or []
    if not any(r.get("controller") and r.get("uid") == uid for r in refs):
        return obj
    return {**obj, CHILD: child}


def child_of(obj: Body) -> Body | None:
    """The child :func:`with_child` attached to ``obj``, if any."""
    child = obj.get(CHILD)
    return child if isinstance(child, dict) else None


def queue_of(obj: Body, *, default_queue: bool,
             queue_exists: Callable[[str, str], bool]) -> str | None:
    """The LocalQueue an object is submitted to, or None if kuota does not manage it."""
    meta = obj.get("metadata") or {}
    queue = names.first_of(meta.get("labels"), names.QUEUE_LABELS)
    if queue:
        return queue
    if default_queue and queue_exists(meta.get("namespace") or "default", names.DEFAULT_QUEUE):
        return names.DEFAULT_QUEUE
    return None


def workload_name(kind: WorkloadKind, obj: Body) -> str:
    meta = obj["metadata"]
    return f"{kind.prefix}-{meta['name']}-{str(meta.get('uid') or '')[:5]}".rstrip("-")


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """Where a Workload's priority came from: a WorkloadPriorityClass (the
    ``priority-class`` label), or the pods' Kubernetes PriorityClass (``pod``: their
    ``priorityClassName``, when no WorkloadPriorityClass is named), as Kueue resolves it."""

    name: str
    pod: bool = False

    def ref(self) -> Body:
        """The Workload's ``spec.priorityClassRef`` (the group read at call time: it is
        the API served)."""
        if self.pod:
            return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": self.name}
        return {"group": names.PRIORITY_CLASS_GROUP, "kind": "WorkloadPriorityClass",
                "name": self.name}


def maximum_execution_time(labels: dict[str, str] | None) -> int | None:
    """The label's seconds, as Kueue reads it: a positive int32, else none."""
    raw = names.first_of(labels, names.MAX_EXEC_TIME_LABELS)
    if raw is None or not raw.isdigit() or not 0 < int(raw) < 2**31:
        return None
    return int(raw)


def pod_priority_class(pod_sets: list[Body]) -> str | None:
    """The first ``priorityClassName`` of the pod sets' templates (Kueue's rule)."""
    for pod_set in pod_sets:
        name = ((pod_set.get("template") or {}).get("spec") or {}).get("priorityClassName")
        if name:
            return str(name)
    return None


def workload_for(kind: WorkloadKind, obj: Body, *, queue: str, priority: int,
                 priority_class: str | PriorityClass | None) -> Body:
    """The Workload manifest standing for ``obj``, owned by it (``priority_class``: a
    WorkloadPriorityClass by name, or where the priority came from)."""
    meta = obj["metadata"]
    spec: Body = {"podSets": kind.pod_sets(obj), "queueName": queue, "priority": priority}
    if priority_class:
        spec["priorityClassRef"] = priority_class_ref(priority_class)
    limit = maximum_execution_time(meta.get("labels"))
    if limit is not None:
        spec["maximumExecutionTimeSeconds"] = limit
    return {
        "apiVersion": names.WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(kind, obj),
            "namespace": meta.get("namespace") or "default",
            "labels": {names.JOB_UID_LABEL: str(meta.get("uid") or ""),
                       names.OWNER_KIND_LABEL: kind.kind},
            "ownerReferences": [{"apiVersion": kind.res.api_version, "kind": kind.kind,
                                 "name": meta["name"], "uid": meta.get("uid") or "",
                                 "controller": True, "blockOwnerDeletion": True}],
        },
        "spec": spec,
    }


def priority_class_ref(priority_class: str | PriorityClass) -> Body:
    """``spec.priorityClassRef``; a plain name is a WorkloadPriorityClass."""
    if isinstance(priority_class, str):
        priority_class = PriorityClass(priority_class)
    return priority_class.ref()


def ended_by(obj: Body, succeeded: str, failed: str, *, what: str) -> tuple[str, str] | None:
    """("Succeeded" | "Failed", message) once ``obj`` has its ``succeeded`` or ``failed``
    condition true: how most kinds say they ended (``what`` names it in a default
    message)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == succeeded:
            return "Succeeded", condition.get("message") or f"{what} succeeded"
        if condition.get("type") == failed:
            return "Failed", condition.get("message") or condition.get("reason") \
                or f"{what} failed"
    return None


def fingerprint(admission: Admission) -> str:
    """What the admission annotation records: queue, flavors and counts."""
    parts = [admission.cluster_queue]
    for ps in admission.pod_sets:
        flavors = ",".join(f"{r}={f}" for r, f in sorted(ps.flavors.items()))
        parts.append(f"{ps.name}:{ps.count}:{flavors}")
    return ";".join(parts)


def node_constraints(admission: Admission, flavors: Mapping[str, FlavorConfig],
                     pod_set: str) -> tuple[dict[str, str], list[Body]]:
    """Node labels to require and tolerations to add for one admitted podSet."""
    labels: dict[str, str] = {}
    tolerations: list[Body] = []
    for ps in admission.pod_sets:
        if ps.name != pod_set:
            continue
        for flavor_name in dict.fromkeys(ps.flavors.values()):
            flavor = flavors.get(flavor_name)
            if flavor is None:
                continue
            labels.update(flavor.node_labels)
            for toleration in flavor.tolerations:
                as_dict = _toleration(toleration)
                if as_dict not in tolerations:
                    tolerations.append(as_dict)
    return labels, tolerations


def _toleration(toleration: Any) -> Body:
    if hasattr(toleration, "to_dict"):
        result: Body = toleration.to_dict()
        return result
    return dict(toleration)


def pod_set_infos(admission: Admission,
                  flavors: Mapping[str, FlavorConfig]) -> dict[str, PodSetInfo]:
    """PodSet name -> what ``admission`` gives it."""
    out = {}
    for ps in admission.pod_sets:
        labels, tolerations = node_constraints(admission, flavors, ps.name)
        out[ps.name] = PodSetInfo(ps.name, ps.count, labels, tolerations)
    return out


def merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``: keys that differ,
    recursively; removed keys as None; lists whole. None when they are equal."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None if old == new else new
    patch: Body = {}
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            patch[key] = merge_patch(old[key], value) if isinstance(value, dict) \
                and isinstance(old[key], dict) else value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch or None
