"""Pod-based kinds: a single Pod, and the pods of Deployments, StatefulSets and
LeaderWorkerSets.

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
* **A LeaderWorkerSet** is one gang per group (a leader and ``size - 1``
  workers, each group its own StatefulSets): its templates declare the
  group's pod sets (``leader=1,worker=3``; ``main=4`` without a leader
  template) and serve; each pod joins group ``lws-<set>-<index>`` in its
  role, and the group's Workload is made once a pod of each role exists —
  with the default ``LeaderCreated`` startup the workers are made right
  after the leader; ``LeaderReady`` is refused (the workers would wait for a
  leader waiting for them).

Pure functions; the webhook (:mod:`kuota.operator.handlers`) applies them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from kuota.operator import names
from kuota.operator.names import Res

Body = dict[str, Any]

DEPLOYMENTS = Res("apps", "v1", "deployments", "Deployment", True)
STATEFULSETS = Res("apps", "v1", "statefulsets", "StatefulSet", True)
LEADERWORKERSETS = Res("leaderworkerset.x-k8s.io", "v1", "leaderworkersets",
                       "LeaderWorkerSet", True)
#: Kinds whose pods are queued through their pod templates.
TEMPLATED = {r.kind: r for r in (DEPLOYMENTS, STATEFULSETS, LEADERWORKERSETS)}
#: LeaderWorkerSet's labels and annotations on its pods.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
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
            or names.first_of(labels, names.POD_GROUP_LABELS) is not None or _job_pod(meta) \
            or LWS_NAME_LABEL in labels:
        return None
    base = str(meta.get("name") or meta.get("generateName") or "pod")
    return ({names.POD_GROUP_LABELS[0]: group_name(f"pod-{base}", secrets.token_hex(3))},
            {names.POD_GROUP_COUNT_ANNOTATIONS[0]: "1",
             names.RETRIABLE_ANNOTATIONS[0]: "false"})


def _marks(have: Body, labels: dict[str, str], annotations: dict[str, str]) -> Body | None:
    """The template ``metadata`` patch adding what ``have`` lacks; None when nothing."""
    have_labels, have_annotations = have.get("labels") or {}, have.get("annotations") or {}
    out: Body = {}
    add_labels = {k: v for k, v in labels.items() if have_labels.get(k) != v}
    add_annotations = {k: v for k, v in annotations.items() if have_annotations.get(k) != v}
    if add_labels:
        out["labels"] = add_labels
    if add_annotations:
        out["annotations"] = add_annotations
    return out or None


def template_patch(obj: Body) -> Body | None:
    """The ``spec`` merge patch that labels the pod templates of a queue-labelled
    Deployment, StatefulSet or LeaderWorkerSet so that its pods are queued; None when they
    already are, or the object has no queue label."""
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
    if obj.get("kind") == "LeaderWorkerSet":
        return _leader_worker_patch(spec, wanted_labels)
    wanted_annotations: dict[str, str] = {}
    if obj.get("kind") == "StatefulSet":
        wanted_labels[names.POD_GROUP_LABELS[0]] = group_name(f"sts-{meta.get('name')}", "")
        replicas = spec.get("replicas")
        wanted_annotations = {
            names.POD_GROUP_COUNT_ANNOTATIONS[0]: str(1 if replicas is None else replicas),
            names.SERVING_ANNOTATIONS[0]: "true",
            names.FAST_ADMISSION_ANNOTATIONS[0]: "true"}
    marks = _marks((spec.get("template") or {}).get("metadata") or {}, wanted_labels,
                   wanted_annotations)
    return {"template": {"metadata": marks}} if marks else None


def _leader_worker_patch(spec: Body, labels: dict[str, str]) -> Body | None:
    """A LeaderWorkerSet's group is one gang of pod sets ``leader`` (1) and ``worker``
    (size - 1) as Kueue's, or ``main`` (size) without a leader template: both templates
    declare them, and serve (the group never finishes)."""
    template = spec.get("leaderWorkerTemplate") or {}
    size = int(template.get("size") or 1)
    declared = f"leader=1,worker={size - 1}" if template.get("leaderTemplate") \
        else f"main={size}"
    annotations = {names.ROLES_ANNOTATION: declared, names.SERVING_ANNOTATIONS[0]: "true"}
    out: Body = {}
    for field in ("leaderTemplate", "workerTemplate"):
        if field == "leaderTemplate" and not template.get(field):
            continue
        marks = _marks((template.get(field) or {}).get("metadata") or {}, labels, annotations)
        if marks:
            out[field] = {"metadata": marks}
    return {"leaderWorkerTemplate": out} if out else None


def leader_worker_marks(pod: Body) -> tuple[dict[str, str], dict[str, str]] | None:
    """(labels, annotations) that put a new pod of a queued LeaderWorkerSet in its group's
    gang: the group ``lws-<set>-<group index>`` of ``size`` pods, and the pod's role —
    ``leader`` for the leader StatefulSet's pod (named after the set), ``worker`` for the
    workers' (``main`` for both without a leader template). None for other pods."""
    meta = pod.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    lws = labels.get(LWS_NAME_LABEL)
    declared = annotations.get(names.ROLES_ANNOTATION)
    if not lws or not declared or names.first_of(labels, names.QUEUE_LABELS) is None:
        return None
    owner = next((str(r.get("name")) for r in meta.get("ownerReferences") or []
                  if r.get("kind") == "StatefulSet"), "")
    leader = owner == lws
    # The leader's group index is its ordinal in the leader StatefulSet (LWS's own webhook
    # may label it after this one); a worker's is in its StatefulSet's name and labels.
    index = labels.get(LWS_GROUP_INDEX_LABEL) or \
        (str(meta.get("name") or "") if leader else owner).rpartition("-")[2]
    if not index.isdigit():
        return None
    role = "main" if declared.startswith("main=") else "leader" if leader else "worker"
    size = annotations.get(LWS_SIZE_ANNOTATION) or str(
        sum(int(c) for c in declared.replace(",", "=").split("=")[1::2]))
    return ({names.POD_GROUP_LABELS[0]: group_name(f"lws-{lws}-{index}", "")},
            {names.POD_GROUP_COUNT_ANNOTATIONS[0]: size, names.POD_SET_ANNOTATION: role})


def default_queue(obj: Body, *, enabled: bool,
                  queue_exists: Callable[[str, str], bool]) -> str | None:
    """The queue a new Deployment, StatefulSet or LeaderWorkerSet without a queue label is
    given when the operator runs with ``--default-queue`` (Kueue's
    ``manageJobsWithoutQueueName``): LocalQueue ``default`` of its namespace, if there is
    one — and only for an object nothing controls (a LeaderWorkerSet's own StatefulSets
    are its, not queued apart). None: it stays as it is."""
    meta = obj.get("metadata") or {}
    if not enabled or names.first_of(meta.get("labels"), names.QUEUE_LABELS) is not None \
            or any(r.get("controller") for r in meta.get("ownerReferences") or []):
        return None
    namespace = meta.get("namespace") or "default"
    return names.DEFAULT_QUEUE if queue_exists(namespace, names.DEFAULT_QUEUE) else None


def with_queue(obj: Body, queue: str) -> Body:
    """``obj`` labelled with ``queue`` (what the webhook writes onto it)."""
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), names.QUEUE_LABELS[0]: queue}
    return {**obj, "metadata": meta}


def refusal(obj: Body) -> str | None:
    """Why a queue-labelled object of these kinds cannot be queued (None: it can): a
    LeaderWorkerSet that makes its workers only once its leader is ready, while the leader
    waits for the whole group to be admitted."""
    if obj.get("kind") != "LeaderWorkerSet" \
            or names.first_of((obj.get("metadata") or {}).get("labels"),
                              names.QUEUE_LABELS) is None:
        return None
    if (obj.get("spec") or {}).get("startupPolicy") == "LeaderReady":
        return ("spec.startupPolicy: LeaderReady makes the workers only once the leader is "
                "ready, and a queued leader waits for its whole group: use LeaderCreated")
    return None


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
