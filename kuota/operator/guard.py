"""What nobody but kuota may change on an object kuota queues (pure).

Quota holds only if what runs is what was admitted. A user who may edit the
objects of a namespace (the ``edit`` role) could otherwise run outside it:
unsuspend a Job kuota has not admitted, take its queue label away and then
unsuspend it, scale up a running Job (``parallelism`` is mutable) beyond
what its Workload holds, or take kuota's scheduling gate off a gated pod.
kuota's webhook sees every update of the kinds it queues (and of queued
pods) and refuses these, naming the field, unless the request comes from
kuota itself (its own identity, learned at start from a SelfSubjectReview);
Kueue refuses the same in its webhooks. What stays open:

* a suspended object may move to another queue (the Workload follows: it is
  made anew for the new queue);
* a suspended object may change what it asks for while it waits — its
  Workload is then made anew (the owner's handling compares pod sets), as
  Kueue does;
* kuota's own writes, and those of the objects' controllers, which never
  touch these fields (status goes through a subresource the webhook does not
  see).

Deleting the Workload of a running object is not a way out either: kuota
makes a new one, which is not admitted, so the object is suspended until it
is (the owner's handling); and the Workload API itself is not granted to a
namespace's editors (the chart's aggregated roles give them read access).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kuota.operator import names
from kuota.operator.kinds.contract import WorkloadKind

Body = dict[str, Any]


def _queue(obj: Mapping[str, Any]) -> str | None:
    return names.first_of((obj.get("metadata") or {}).get("labels"), names.QUEUE_LABELS)


def _what(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind') or 'object'} {meta.get('namespace') or 'default'}/{meta.get('name')}"


def shape(pod_sets: list[Body]) -> list[tuple[str, int, list[Body]]]:
    """What quota counts of pod sets: names, counts and each container's requests (the
    rest of a template — images, commands — changes nothing kuota admitted)."""
    out = []
    for ps in pod_sets:
        spec = (ps.get("template") or {}).get("spec") or {}
        requests = [dict((c.get("resources") or {}).get("requests") or {})
                    for c in [*(spec.get("initContainers") or []),
                              *(spec.get("containers") or [])]]
        out.append((str(ps.get("name")), int(ps.get("count") or 0), requests))
    return out


def update_refusal(kind: WorkloadKind, old: Body, new: Body) -> str | None:
    """Why an update of an object of a suspendable kind by someone other than kuota is
    refused; None when it may go through."""
    queue = _queue(old)
    if queue is None:
        return None  # not queued by kuota (yet): adding a queue label is how one starts
    what = _what(old)
    label = next(k for k in names.QUEUE_LABELS
                 if k in ((old.get("metadata") or {}).get("labels") or {}))
    new_queue = _queue(new)
    if new_queue is None:
        return (f"{what}: metadata.labels[{label}] cannot be removed: the {kind.kind} is "
                f"queued by kuota, and without its queue it would run outside quota; "
                f"delete it instead")
    suspended = kind.suspended(old)
    if new_queue != queue and not suspended:
        return (f"{what}: metadata.labels[{label}] can be changed only while the "
                f"{kind.kind} is suspended (it runs under LocalQueue {queue})")
    if suspended and not kind.suspended(new):
        return (f"{what}: it cannot be unsuspended by hand: kuota starts it once its "
                f"Workload is admitted by LocalQueue {queue} (kubectl kuota why to see why "
                f"it waits)")
    if not suspended and _shape_of(kind, old) != _shape_of(kind, new):
        return (f"{what}: what it runs (pod counts or requests) cannot change while it runs "
                f"under its admission; suspend it first (it is queued again), or delete and "
                f"create it again")
    return None


def _shape_of(kind: WorkloadKind, obj: Body) -> list[tuple[str, int, list[Body]]] | None:
    """What ``obj`` runs now: its pod sets read without what kuota saved of the user's
    ask at its start (a Job's parallelism before a partial admission)."""
    meta = obj.get("metadata") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k != names.ORIGINAL_ANNOTATION}
    try:
        return shape(kind.pod_sets({**obj, "metadata": {**meta, "annotations": annotations}}))
    except (ValueError, TypeError, AttributeError, KeyError):
        return None  # unreadable either way: the API server's validation speaks for it


def pod_update_refusal(old: Body, new: Body) -> str | None:
    """Why an update of a pod kuota gates, by someone other than kuota, is refused: its
    admission gate taken off, or its queue or group labels changed."""
    gates = [g.get("name") for g in (old.get("spec") or {}).get("schedulingGates") or []
             if isinstance(g, dict)]
    kept = [g.get("name") for g in (new.get("spec") or {}).get("schedulingGates") or []
            if isinstance(g, dict)]
    what = _what({"kind": "Pod", **old})
    if names.ADMISSION_GATE in gates and names.ADMISSION_GATE not in kept:
        return (f"{what}: spec.schedulingGates[{names.ADMISSION_GATE}] is removed by kuota "
                f"alone, once the pod's group is admitted; it would run outside quota")
    old_labels = (old.get("metadata") or {}).get("labels") or {}
    new_labels = (new.get("metadata") or {}).get("labels") or {}
    if _queue(old) is None:
        return None
    for label in (*names.QUEUE_LABELS, *names.POD_GROUP_LABELS):
        if old_labels.get(label) != new_labels.get(label):
            return (f"{what}: metadata.labels[{label}] cannot change on a pod kuota "
                    f"queues (its group's Workload counts it)")
    return None
