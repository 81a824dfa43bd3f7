"""Pod-based kinds: a single Pod, and the pods of Deployments and StatefulSets.

These objects have no suspend field kuota could use, so, as Kueue does,
they are queued through their *pods*, each made a member of a pod group
(:mod:`kuota.operator.kinds.podgroups`) by the webhook at creation — gated
until admitted, their flavors added when they are let run:

* **A single Pod** with a queue label, owned by nothing kuota queues
  another way (not a Job's pod), is a group of one: the webhook gives it a
  group name of its own (its name, or its ``generateName``, and a random
  suffix, so a Pod made again under the same name is a new workload) and
  marks it not retriable, so the workload ends with the pod, Succeeded or
  Failed, as Kueue's single-pod workloads do.
* **A Deployment**'s pods are single Pods: the webhook copies the
  Deployment's queue (and priority class) label into its pod template, so
  each replica is queued and admitted on its own. An evicted replica is
  deleted; its ReplicaSet makes a new one, which queues again.
* **A StatefulSet** is one group (Kueue's "serving" pod group): the webhook
  labels its pod template with a group named after it, its size
  (``replicas``), and two marks: *serving* — the group never finishes, a pod
  that ends is replaced by the StatefulSet — and *fast admission* — the
  Workload is made from the first pod (all replicas share one template),
  since a StatefulSet with ``OrderedReady`` pods makes the next pod only once
  the one before is ready, and a group that waited for all of them would
  wait for ever. As in Kueue, only scaling to and from zero is allowed.

Pure functions; the webhook (:mod:`kuota.operator.handlers`) applies them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from typing import Any

from kuota.operator import names
from kuota.operator.names import Res

Body = dict[str, Any]

DEPLOYMENTS = Res("apps", "v1", "deployments", "Deployment", True)
STATEFULSETS = Res("apps", "v1", "statefulsets", "StatefulSet", True)
#: Kinds whose pods are queued through their pod template.
TEMPLATED = {r.kind: r for r in (DEPLOYMENTS, STATEFULSETS)}
#: A label value's longest.
_LABEL_MAX = 63


def group_name(base: str, suffix: str) -> str:
    """``base-suffix`` as a label value: cut, with a hash of the whole, when too long."""
    base = base.rstrip("-.") or "pod"
    name = f"{base}-{suffix}" if suffix else base
    if len(name) <= _LABEL_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{base[:_LABEL_MAX - len(digest) - 1].rstrip('-.')}-{digest}"


def _job_pod(meta: Mapping[str, Any]) -> bool:
    return any(ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/")
               for ref in meta.get("ownerReferences") or []) \
        or bool(names.first_of(meta.get("labels"), names.JOB_NAME_LABELS))


def single_pod_marks(pod: Body) -> tuple[dict[str, str], dict[str, str]] | None:
    """(labels, annotations) that make a new queue-labelled Pod a group of one; None for a
    pod that is not one — no queue label, already in a group, or a Job's pod (queued with
    its Job, or not at all)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if names.first_of(labels, names.QUEUE_LABELS) is None \
            or names.first_of(labels, names.POD_GROUP_LABELS) is not None or _job_pod(meta):
        return None
    base = str(meta.get("name") or meta.get("generateName") or "pod")
    return ({names.POD_GROUP_LABELS[0]: group_name(f"pod-{base}", secrets.token_hex(3))},
            {names.POD_GROUP_COUNT_ANNOTATIONS[0]: "1",
             names.RETRIABLE_ANNOTATIONS[0]: "false"})


def template_marks(obj: Body) -> Body | None:
    """The pod-template ``metadata`` a queue-labelled Deployment or StatefulSet needs
    (labels and annotations to add); None when it has all of them, or no queue label."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    labels = meta.get("labels") or {}
    queue = names.first_of(labels, names.QUEUE_LABELS)
    if queue is None:
        return None
    wanted_labels = {names.QUEUE_LABELS[0]: queue}
    priority = names.first_of(labels, names.PRIORITY_LABELS)
    if priority:
        wanted_labels[names.PRIORITY_LABELS[0]] = priority
    wanted_annotations: dict[str, str] = {}
    if obj.get("kind") == "StatefulSet":
        wanted_labels[names.POD_GROUP_LABELS[0]] = group_name(f"sts-{meta.get('name')}", "")
        replicas = spec.get("replicas")
        wanted_annotations = {
            names.POD_GROUP_COUNT_ANNOTATIONS[0]: str(1 if replicas is None else replicas),
            names.SERVING_ANNOTATIONS[0]: "true",
            names.FAST_ADMISSION_ANNOTATIONS[0]: "true"}
    tmeta = (spec.get("template") or {}).get("metadata") or {}
    have_labels, have_annotations = tmeta.get("labels") or {}, tmeta.get("annotations") or {}
    add_labels = {k: v for k, v in wanted_labels.items() if have_labels.get(k) != v}
    add_annotations = {k: v for k, v in wanted_annotations.items()
                       if have_annotations.get(k) != v}
    if not add_labels and not add_annotations:
        return None
    out: Body = {}
    if add_labels:
        out["labels"] = add_labels
    if add_annotations:
        out["annotations"] = add_annotations
    return out


def scaling_error(old: Body, new: Body) -> str | None:
    """Why an update of a queued StatefulSet must be refused: its group's size is its
    Workload's, so it may only scale to zero (its pods go, and its Workload) or from
    zero (a new group); None when the update is fine."""
    if new.get("kind") != "StatefulSet" \
            or names.first_of((new.get("metadata") or {}).get("labels"),
                              names.QUEUE_LABELS) is None:
        return None

    def replicas(obj: Body) -> int:
        value = (obj.get("spec") or {}).get("replicas")
        return 1 if value is None else int(value)

    before, after = replicas(old), replicas(new)
    if before != after and before != 0 and after != 0:
        return (f"spec.replicas: a queued StatefulSet may only scale to or from 0 "
                f"(from {before} to {after} asked): scale it to 0, then to {after}")
    return None


def serving(pods: list[Body]) -> bool:
    """Whether a group is a serving one (a StatefulSet's): it never finishes."""
    return any(names.first_of((p.get("metadata") or {}).get("annotations"),
                              names.SERVING_ANNOTATIONS) == "true" for p in pods)


def fast_admission(pods: list[Body]) -> bool:
    """Whether a group's Workload is made from its first pod (all pods alike)."""
    return any(names.first_of((p.get("metadata") or {}).get("annotations"),
                              names.FAST_ADMISSION_ANNOTATIONS) == "true" for p in pods)
