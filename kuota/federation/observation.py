"""One observation of a Kubernetes member, from the objects it holds (pure).

The member's objects reach the operator one by one (a page of a list, an
event of a watch: :mod:`.member_watch`), so each is reduced as it arrives to
what an observation needs, and :func:`observation` adds them up when asked:

* a node becomes a :class:`placement.model.Node` (:func:`node_of`): labels,
  taints, allocatable;
* a pod becomes a :class:`PodUse` (:func:`pod_use`) — the node it is bound
  to, what it requests there (:func:`placement.objects.pod_requests`: the
  Kubernetes way, containers, the largest init container, overhead) and, for a
  pod of one of this manager's copies (labelled ``kuota.dev/origin=<manager>``),
  the copy: its JobSet by the JobSet's name label, else its Job by the pod's
  ``ownerReference`` or its ``job-name`` label. Unbound and finished pods
  request nothing;
* :func:`observation` sums the pods per node: others' pods become the nodes'
  ``requested`` (the dispatcher already counts what it placed itself), our
  copies' pods their :attr:`.member.Copy.usage` (a manager that did not place
  them — it restarted — adopts them with it).

An object that cannot be read (a bad quantity) is reported as a problem and
left out, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kuota.federation import copies
from kuota.federation.member import Copy, Observation, add_pod
from kuota.federation.remote_job import ORIGIN_LABEL, workload_of
from placement.model import Node
from placement.objects import node_from_object, pod_requests

Body = dict[str, Any]

#: Pod phases after which a pod holds nothing on its node.
TERMINAL: Final = ("Succeeded", "Failed")
#: The pods worth reading (the real API server filters pods by these two fields): bound and
#: not finished.
POD_FIELDS: Final = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


@dataclass(frozen=True, slots=True)
class PodUse:
    """What one bound, running pod holds on its node."""

    node: str
    requests: Mapping[str, int]
    #: The copy of this manager's the pod belongs to (``Kind:ns/name``,
    #: :func:`.copies.copy_key`); None for anyone else's pod.
    copy: str | None = None


def node_of(raw: Body) -> Node:
    """The node (raises :class:`placement.objects.ObjectError` when it cannot be read)."""
    meta = dict(raw.get("metadata") or {})
    meta["labels"] = meta.get("labels") or {}
    spec = dict(raw.get("spec") or {})
    spec["taints"] = spec.get("taints") or []
    status = dict(raw.get("status") or {})
    status["allocatable"] = status.get("allocatable") or {}
    return node_from_object({**raw, "metadata": meta, "spec": spec, "status": status})


def pod_use(pod: Body, origin: str) -> PodUse | None:
    """What the pod holds (None: nothing, or a pod of ours whose Job is unknown); raises
    :class:`placement.objects.ObjectError` when its requests cannot be read."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    where = spec.get("nodeName")
    if not where or (pod.get("status") or {}).get("phase") in TERMINAL:
        return None
    requests = pod_requests(spec, f"pod {meta.get('namespace')}/{meta.get('name')}")
    if (meta.get("labels") or {}).get(ORIGIN_LABEL) != origin:
        return PodUse(where, requests)
    owner = copies.pod_copy(meta)
    return None if owner is None else PodUse(where, requests, owner)


def observation(nodes: Mapping[str, Node], pods: Iterable[PodUse], ours_found: Iterable[Body],
                problems: Iterable[str] = ()) -> Observation:
    """The observation: nodes (by name) with others' pods counted, and our copies (each
    body carrying its ``kind``)."""
    used: dict[str, dict[str, int]] = {}
    #: Copy key (Kind:ns/name) -> node -> what that copy's pods request there.
    ours: dict[str, dict[str, dict[str, int]]] = {}
    for use in pods:
        if use.node not in nodes:
            continue
        if use.copy is None:
            add_pod(used.setdefault(use.node, {}), use.requests)
        else:
            add_pod(ours.setdefault(use.copy, {}).setdefault(use.node, {}), use.requests)
    observed = tuple(nodes[name].with_requested(used.get(name) or {}) for name in sorted(nodes))
    found = []
    for body in ours_found:
        meta = body.get("metadata") or {}
        namespace, name = meta.get("namespace") or "default", meta.get("name") or ""
        kind = copies.kind_of(body)
        found.append(Copy(namespace, name, workload_of(body) or "", body,
                          ours.get(copies.copy_key(kind, namespace, name), {}), kind))
    return Observation(observed, tuple(found), tuple(problems))
