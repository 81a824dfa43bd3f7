"""Pod groups: plain Pods that start together as one workload.

Pods labelled ``kuota.dev/pod-group-name: <group>`` with the annotation
``kuota.dev/pod-group-total-count: <n>`` (Kueue's ``kueue.x-k8s.io/…``
spellings too) and a queue label form one gang. The webhook gives each a
scheduling gate at creation, so kube-scheduler leaves it alone; once ``n``
pods of the group exist the operator creates one Workload for them, with
one podSet per pod *shape* (requests, node selector, tolerations, affinity:
pods that differ in anything the quota or the flavor choice reads). When
the Workload is admitted every pod gets its flavor's node labels and
tolerations and loses the gate — all of them, together.

Pods take time to die: a deleted pod that ran stays, *terminating*
(``deletionTimestamp`` set), for its grace period. A terminating pod is no
longer a member of its group — it neither completes a group nor counts as
ready — but it still runs: an evicted group is *stopped* (:func:`stopped`)
only once no pod kuota started is left running or terminating.

Pure functions over pod bodies; the writer applies the patches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kuota.operator import names, pinning, status
from kuota.operator.kinds.contract import (
    PriorityClass,
    maximum_execution_time,
    node_constraints,
    priority_class_ref,
)
from kuota.operator.kinds.pods import LWS_NAME_LABEL, fast_admission, serving
from kuota.operator.objects import being_deleted
from quota import convert
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]
_SHAPE_FIELDS = ("containers", "initContainers", "overhead", "nodeSelector", "tolerations",
                 "affinity", "priorityClassName")


class GroupError(ValueError):
    """A pod claims a group but says nothing usable about its size."""


def group_of(pod: Body) -> tuple[str, int] | None:
    """(``namespace/group``, total pod count) for a pod of a group; None for other pods."""
    meta = pod.get("metadata") or {}
    name = names.first_of(meta.get("labels"), names.POD_GROUP_LABELS)
    if not name:
        return None
    total = names.first_of(meta.get("annotations"), names.POD_GROUP_COUNT_ANNOTATIONS)
    if total is None or not total.isdigit() or int(total) < 1:
        raise GroupError(f"metadata.annotations[{names.POD_GROUP_COUNT_ANNOTATIONS[0]}]: "
                         f"must be a positive integer (got {total!r}) on a pod of group {name}")
    return f"{meta.get('namespace') or 'default'}/{name}", int(total)


def shape(pod: Body) -> str:
    """A short name shared by pods that ask for the same thing the same way."""
    spec = pod.get("spec") or {}
    containers = [{"name": c.get("name"), "resources": c.get("resources") or {}}
                  for c in spec.get("containers") or []]
    inits = [{"name": c.get("name"), "resources": c.get("resources") or {}}
             for c in spec.get("initContainers") or []]
    essence = {k: spec.get(k) for k in _SHAPE_FIELDS}
    essence["containers"], essence["initContainers"] = containers, inits
    digest = hashlib.sha256(json.dumps(essence, sort_keys=True).encode()).hexdigest()
    return f"shape-{digest[:8]}"


def gated(pod: Body) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == names.ADMISSION_GATE for g in gates)


def terminal(pod: Body) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def live(pod: Body) -> bool:
    """A member of its group: neither ended nor being deleted."""
    return not terminal(pod) and not being_deleted(pod)


def started(pod: Body) -> bool:
    """Let run by kuota (ungated under an admission)."""
    return not gated(pod) and names.ADMISSION_ANNOTATION in (
        (pod.get("metadata") or {}).get("annotations") or {})


def stopped(pods: Iterable[Body]) -> bool:
    """No pod kuota started is left running or terminating (ended ones are done)."""
    return not any(started(p) and not terminal(p) for p in pods)


def ready(pod: Body) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded" or status.is_true(pod, "Ready")


def workload_name(group_key: str) -> str:
    return f"group-{group_key.partition('/')[2]}"


def roles(pods: Iterable[Body]) -> dict[str, int] | None:
    """The pod sets a group declares (``kuota.dev/pod-group-roles: leader=1,worker=3``), in
    order; None when it declares none (its pod sets are its pods' shapes)."""
    for pod in pods:
        raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(
            names.ROLES_ANNOTATION)
        if raw:
            out = {}
            for part in str(raw).split(","):
                name, _, count = part.partition("=")
                if not name or not count.isdigit():
                    raise GroupError(f"metadata.annotations[{names.ROLES_ANNOTATION}]: "
                                     f"must be name=count,... (got {raw!r})")
                out[name] = int(count)
            return out
    return None


def enough(pods: list[Body], total: int) -> bool:
    """Whether a group has the live pods its Workload is made from: all of them; a pod of
    each role it declares (:func:`roles`); or one when its pods are all alike (fast
    admission)."""
    live_pods = [p for p in pods if live(p)]
    declared = roles(live_pods)
    if declared is not None:
        return set(declared) <= {pod_set_of(p) for p in live_pods}
    return len(live_pods) >= (1 if fast_admission(live_pods) else total)


def workload_for(group_key: str, pods: Iterable[Body], *, queue: str, priority: int,
                 priority_class: str | PriorityClass | None, total: int | None = None
                 ) -> Body:
    """The Workload standing for a complete group: one podSet per pod shape; one per role
    it declares, of the declared size, shaped as its first pod; or, with fast admission,
    one of ``total`` pods shaped as the first."""
    namespace, _, group = group_key.partition("/")
    by_shape: dict[str, list[Body]] = {}
    members_sorted = sorted(pods, key=lambda p: p["metadata"]["name"])
    for pod in members_sorted:
        by_shape.setdefault(pod_set_of(pod), []).append(pod)
    counts = {name: len(members) for name, members in by_shape.items()}
    declared = roles(members_sorted)
    order = sorted(by_shape)
    if declared is not None:
        by_shape = {name: by_shape[name] for name in declared if name in by_shape}
        counts, order = dict(declared), list(by_shape)
    elif total is not None and fast_admission(members_sorted):
        first = pod_set_of(members_sorted[0])
        by_shape, counts, order = {first: by_shape[first]}, {first: total}, [first]
    pod_sets = []
    for name in order:
        members = by_shape[name]
        spec = json.loads(json.dumps(members[0].get("spec") or {}))
        spec["schedulingGates"] = [g for g in spec.get("schedulingGates") or []
                                   if g.get("name") != names.ADMISSION_GATE]
        for key in ("schedulingGates", "nodeName"):
            if not spec.get(key):
                spec.pop(key, None)
        template: Body = {"spec": spec}
        annotations = (members[0].get("metadata") or {}).get("annotations") or {}
        asked = {k: v for k, v in annotations.items()
                 if k in (*convert.REQUIRED_TOPOLOGY, *convert.PREFERRED_TOPOLOGY)}
        if asked:  # the pod set's topology request travels with its template
            template["metadata"] = {"annotations": asked}
        pod_sets.append({"name": name, "count": counts[name], "template": template})
    workload_spec: Body = {"podSets": pod_sets, "queueName": queue, "priority": priority}
    if priority_class:
        workload_spec["priorityClassRef"] = priority_class_ref(priority_class)
    limit = maximum_execution_time((members_sorted[0].get("metadata") or {}).get("labels"))
    if limit is not None:
        workload_spec["maximumExecutionTimeSeconds"] = limit
    return {"apiVersion": names.WORKLOADS.api_version, "kind": "Workload",
            "metadata": {"name": workload_name(group_key), "namespace": namespace,
                         "labels": {names.POD_GROUP_LABEL: group,
                                    names.OWNER_KIND_LABEL: owner_kind(members_sorted)}},
            "spec": workload_spec}


def owner_kind(pods: list[Body]) -> str:
    """What a group's pods stand for, as users name it: ``StatefulSet``, ``Deployment``
    (a ReplicaSet's pods carrying the Deployment controller's ``pod-template-hash``),
    another controller's kind, ``Pod`` for a group of one, else ``PodGroup``."""
    meta = (pods[0].get("metadata") or {}) if pods else {}
    if LWS_NAME_LABEL in (meta.get("labels") or {}):
        return "LeaderWorkerSet"
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            kind = str(ref.get("kind") or "")
            if kind == "ReplicaSet" and "pod-template-hash" in (meta.get("labels") or {}):
                return "Deployment"
            return kind
    single = names.first_of(meta.get("annotations"), names.POD_GROUP_COUNT_ANNOTATIONS) == "1"
    return "Pod" if single and len(pods) == 1 else "PodGroup"


def start_conflict(pod: Body, admission: Admission,
                   flavors: Mapping[str, FlavorConfig]) -> str | None:
    """Why a gated pod cannot be started under ``admission``: its nodeSelector has a key of
    its flavor's node labels with another value (None: it can be)."""
    if not gated(pod):
        return None
    labels, _ = node_constraints(admission, flavors, pod_set_of(pod))
    return pinning.conflict(pod, labels)


def startable(pods: Iterable[Body], admission: Admission) -> tuple[list[Body], list[Body]]:
    """(gated pods that may start, gated pods beyond what ``admission`` counts).

    Each pod set runs at most its admitted count: pods of it already started and not
    ended, and those that succeeded, take their places; a failed pod gives its place to
    its replacement. A pod beyond that (a StatefulSet scaled past its group's size, a
    pod of a shape the admission does not know) stays gated: it would run outside
    quota."""
    places = {ps.name: ps.count for ps in admission.pod_sets}
    for pod in pods:
        if not gated(pod) and started(pod) \
                and (pod.get("status") or {}).get("phase") != "Failed":
            name = pod_set_of(pod)
            places[name] = places.get(name, 0) - 1
    start, excess = [], []
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        if not gated(pod):
            continue
        name = pod_set_of(pod)
        if places.get(name, 0) > 0:
            places[name] -= 1
            start.append(pod)
        else:
            excess.append(pod)
    return start, excess


def start_patch(pod: Body, admission: Admission,
                flavors: Mapping[str, FlavorConfig]) -> Body | None:
    """Remove the gate and add the podSet's flavor constraints; None if already started."""
    if not gated(pod):
        return None
    spec = pod.get("spec") or {}
    labels, added = node_constraints(admission, flavors, pod_set_of(pod))
    tolerations = list(spec.get("tolerations") or [])
    tolerations += [t for t in added if t not in tolerations]
    gates = [g for g in spec.get("schedulingGates") or [] if g.get("name") != names.ADMISSION_GATE]
    patch_spec: Body = {"schedulingGates": gates or None}
    if labels:
        patch_spec["nodeSelector"] = labels
    if tolerations:
        patch_spec["tolerations"] = tolerations
    return {"metadata": {"annotations": {names.ADMISSION_ANNOTATION: admission.cluster_queue,
                                         names.POD_SET_ANNOTATION: pod_set_of(pod)}},
            "spec": patch_spec}


def pod_set_of(pod: Body) -> str:
    """The podSet of a group's pod: its declared role (a LeaderWorkerSet's), or the one
    recorded when it was started (starting changes its nodeSelector and tolerations, and
    so its shape), else its shape."""
    recorded = ((pod.get("metadata") or {}).get("annotations") or {}).get(
        names.POD_SET_ANNOTATION)
    return str(recorded) if recorded else shape(pod)


def unretriable(pods: Iterable[Body]) -> bool:
    """Whether the group may not replace a failed pod: one of its pods says so with
    ``retriable-in-group: "false"`` (Kueue's annotation; kuota's spelling too)."""
    return any(names.first_of((p.get("metadata") or {}).get("annotations"),
                              names.RETRIABLE_ANNOTATIONS) == "false" for p in pods)


def outcome(pods: Iterable[Body], total: int) -> tuple[str, str] | None:
    """("Succeeded" | "Failed", message) once the group is done, by Kueue's rule: when
    ``total`` of its pods succeeded; or, in a group whose failed pods may not be replaced
    (:func:`unretriable`), when none is left running. A failed pod of any other group
    waits for its replacement (a new pod of the same group, which joins the running
    Workload), so it finishes nothing.

    Pods being deleted are leaving the group and count for nothing: the kubelet reports a
    deleted pod ``Failed`` once its containers are stopped, and those kuota deleted to
    evict the group must not read as the group's own failure."""
    staying = [p for p in pods if not being_deleted(p)]
    if serving(staying):
        return None  # its controller replaces what ends: it runs until it is deleted
    succeeded = sum(1 for p in staying if (p.get("status") or {}).get("phase") == "Succeeded")
    if succeeded >= total:
        return "Succeeded", f"Pods succeeded: {succeeded}/{total}"
    if any(not terminal(p) for p in staying) or not unretriable(staying):
        return None
    failed = sorted(p["metadata"]["name"] for p in staying
                    if (p.get("status") or {}).get("phase") == "Failed")
    return "Failed", f"Pods succeeded: {succeeded}/{total}; failed: {', '.join(failed)}"
