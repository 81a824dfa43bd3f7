"""Pinning pods to topology domains: which gated pod goes to which domain.

A pod that asks for topology is created with the scheduling gate
``kuota.dev/topology`` (see :mod:`kuota.operator.webhooks`), so kube-scheduler
leaves it alone. Once its Workload is admitted with a ``topologyAssignment``
— pods per domain — each gated pod is given a domain with room left and
ungated with a ``nodeSelector`` naming that domain at every level of the
assignment (``rack: r1`` and ``kubernetes.io/hostname: node-3``). This module
decides; :mod:`kuota.operator.ungater` writes.

How a pod gets its domain (Kueue's topology ungater works the same way):

* Pods that ended (Succeeded / Failed) or are being deleted (terminating)
  count for nothing: they are being replaced. A terminating pod's
  replacement may take its domain at once — kube-scheduler holds it until
  the node has room — and an Indexed Job's replacement, which shares its
  predecessor's index, keeps ranks usable.
* A gated pod's ``nodeSelector`` may only gain keys (Kubernetes refuses to
  change or remove one while the pod is gated), so a pod only goes to a
  domain whose labels agree with the keys it already has. A pod that agrees
  with no domain of the assignment can never be pinned:
  :func:`unplaceable` says why, and the ungater reports it instead of
  writing a patch the API server would refuse.
* Pods already ungated count against the domain their ``nodeSelector``
  names; a domain's room is its count minus those.
* **By rank**, when every live pod carries a distinct Job completion index
  below the assignment's total (an Indexed Job): the domains are laid out in
  order, one slot per pod (rank 0 .. total-1), and a pod goes to the slot of
  its index. Neighbouring indices — which talk most in ring all-reduce — land
  in the same domain, and a replacement pod goes where its predecessor was.
  Used only while every ungated pod sits where its rank says.
* **Greedy** otherwise: gated pods in a stable order (completion index, then
  creation time, then name) each take the first domain, in the assignment's
  order, that has room and agrees with the pod's nodeSelector.

Pods beyond the domains' room stay gated until a pod ends. Without an
assignment (the flavor is not topology-aware) every gated pod is ungated with
no selector: there is nothing to pin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kuota.operator import names
from kuota.operator.objects import being_deleted

Body = dict[str, Any]
Domain = tuple[str, ...]


def gated(pod: Body, gate: str = names.TOPOLOGY_GATE) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(isinstance(g, Mapping) and g.get("name") == gate for g in gates)


def ended(pod: Body) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def gone(pod: Body) -> bool:
    """Ended, or being deleted: it takes no room and is not pinned."""
    return ended(pod) or being_deleted(pod)


def conflict(pod: Body, wanted: Mapping[str, str]) -> str | None:
    """Why ``wanted`` cannot be added to the pod's nodeSelector (a key it has with another
    value: ``ValidatePodUpdate`` lets a gated pod's nodeSelector only gain keys); None if
    it can."""
    have = (pod.get("spec") or {}).get("nodeSelector") or {}
    clashes = [f"{key}={have[key]}" for key, value in wanted.items()
               if key in have and have[key] != value]
    if not clashes:
        return None
    asked = ", ".join(f"{k}={v}" for k, v in wanted.items())
    return (f"its nodeSelector has {', '.join(clashes)} but its admission needs {asked}; a "
            "gated pod's nodeSelector may only gain keys")


def completion_index(pod: Body) -> int | None:
    """The pod's index in an Indexed Job (annotation, else label); None if absent or bad."""
    meta = pod.get("metadata") or {}
    for source in (meta.get("annotations") or {}, meta.get("labels") or {}):
        raw = source.get(names.COMPLETION_INDEX)
        if isinstance(raw, str) and raw.isdigit():
            return int(raw)
    return None


def _order(pod: Body) -> tuple[bool, int, str, str]:
    meta = pod.get("metadata") or {}
    index = completion_index(pod)
    return (index is None, index or 0, str(meta.get("creationTimestamp") or ""),
            str(meta.get("name") or ""))


def selector(levels: Sequence[str], values: Domain) -> dict[str, str]:
    """The nodeSelector pinning a pod to a domain."""
    return dict(zip(levels, values, strict=True))


def domain_of(pod: Body, levels: Sequence[str]) -> Domain:
    """The domain a pod's nodeSelector names (empty strings where it names none)."""
    chosen = (pod.get("spec") or {}).get("nodeSelector") or {}
    return tuple(str(chosen.get(level) or "") for level in levels)


def plan(pods: Sequence[Body], levels: Sequence[str] | None,
         domains: Sequence[tuple[Domain, int]] | None, *,
         gate: str = names.TOPOLOGY_GATE) -> list[tuple[Body, dict[str, str]]]:
    """(gated pod, nodeSelector to add) for each pod of one pod set that may be ungated now.

    ``levels`` / ``domains``: the pod set's topology assignment, None when it has none.
    """
    live = [p for p in pods if not gone(p)]
    waiting = sorted((p for p in live if gated(p, gate)), key=_order)
    if not waiting:
        return []
    if levels is None or domains is None:
        return [(p, {}) for p in waiting]
    slots = [values for values, count in domains for _ in range(count)]
    by_rank = _by_rank(live, slots, levels, gate)
    if by_rank is not None:
        return [(pod, selector(levels, slots[rank])) for rank, pod in sorted(by_rank.items())
                if gated(pod, gate)]
    taken: dict[Domain, int] = {}
    for pod in live:
        if not gated(pod, gate):
            where = domain_of(pod, levels)
            taken[where] = taken.get(where, 0) + 1
    room = [max(0, count - taken.get(values, 0)) for values, count in domains]
    out: list[tuple[Body, dict[str, str]]] = []
    for pod in waiting:
        for i, (values, _) in enumerate(domains):
            chosen = selector(levels, values)
            if room[i] and conflict(pod, chosen) is None:
                room[i] -= 1
                out.append((pod, chosen))
                break
    return out


def unplaceable(pod: Body, levels: Sequence[str] | None,
                domains: Sequence[tuple[Domain, int]] | None) -> str | None:
    """Why a gated pod agrees with no domain of its assignment (so it can never be
    pinned); None when some domain would do, or there is nothing to pin to."""
    if levels is None or not domains:
        return None
    problems = [conflict(pod, selector(levels, values)) for values, _ in domains]
    return problems[0] if all(problems) else None


def _by_rank(live: Sequence[Body], slots: Sequence[Domain], levels: Sequence[str],
             gate: str) -> dict[int, Body] | None:
    """Rank -> pod when ranks can be used (see the module docstring), else None."""
    ranks: dict[int, Body] = {}
    for pod in live:
        index = completion_index(pod)
        if index is None or index >= len(slots) or index in ranks:
            return None
        if not gated(pod, gate) and domain_of(pod, levels) != slots[index]:
            return None  # someone placed it elsewhere: ranks no longer describe the pods
        if gated(pod, gate) and conflict(pod, selector(levels, slots[index])) is not None:
            return None  # its rank's domain contradicts its nodeSelector
        ranks[index] = pod
    return ranks
