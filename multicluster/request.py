"""A dispatch request: an admitted workload's pods as a member cluster will run them.

Quota was reserved in the manager with a flavor per podSet and resource; the
member runs the pods with those flavors applied, exactly as the Kubernetes
edge does on admission: the flavors' ``nodeLabels`` join the pod's
``nodeSelector`` and the flavors' tolerations join the pod's own. A
:class:`DispatchRequest` holds, once per decision, what every plugin reads:

- one :class:`PodGroup` per admitted podSet: the admitted ``count``, one
  pod's :class:`~placement.model.PodRequirements` (flavors applied), the
  flavors' label set (for the Hardware filter) and the resource → flavor map
  (for prices);
- the total requests of the gang, per resource;
- the hints from the workload's annotations (:mod:`multicluster.hints`);
- ``now`` and the staleness limit, for the Health filter.

Values in, values out: building a request reads nothing but its arguments.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from multicluster.hints import NO_HINTS, Hints
from multicluster.model import LabelSet
from placement.memo import signature
from placement.model import (
    ModelError,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodRequirements,
    SelectorOperator,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from quota.config import FlavorConfig
from quota.resources import Amount, ResourceVector
from quota.workload import Admission, PodSetInfo, WorkloadInfo


class RequestError(ValueError):
    """A workload, admission and flavors that do not fit together (names what is wrong)."""


@dataclass(frozen=True, slots=True)
class PodGroup:
    """The admitted pods of one podSet."""

    pod_set: str
    count: int
    pod: PodRequirements
    #: Labels the pods' nodes must carry: all admitted flavors' nodeLabels, sorted.
    node_labels: LabelSet
    #: Resource → admitted flavor.
    flavors: Mapping[str, str]
    #: ``placement.memo.signature(pod)``: equal pods ask members equal questions.
    signature: Hashable
    #: What decides which nodes admit the pod regardless of usage (selector, affinity,
    #: tolerations).
    constraints: Hashable
    #: The pod's non-zero requests, as (resource, amount) pairs: the hot loops' input.
    wanted: tuple[tuple[str, Amount], ...] = ()


@dataclass(frozen=True, eq=False)
class DispatchRequest:
    workload: WorkloadInfo
    admission: Admission
    groups: tuple[PodGroup, ...]
    #: Requests of every admitted pod together, per resource.
    total: Mapping[str, Amount]
    hints: Hints = NO_HINTS
    now: float = 0.0
    #: A member not seen for longer than this gets nothing new (seconds).
    stale_after: float = 60.0
    # Derived once here, read by every plugin for every member:
    #: The distinct label sets of the groups (the member nodes the gang may use).
    label_sets: tuple[LabelSet, ...] = field(init=False)
    pod_count: int = field(init=False)
    #: Pods per distinct pod signature (podSets with equal pods counted together).
    shapes: Mapping[Hashable, int] = field(init=False)
    #: Identity of the whole gang, for memos.
    gang_key: Hashable = field(init=False)

    def __post_init__(self) -> None:
        shapes: dict[Hashable, int] = {}
        for group in self.groups:
            shapes[group.signature] = shapes.get(group.signature, 0) + group.count
        derived = {
            "label_sets": tuple(dict.fromkeys(g.node_labels for g in self.groups)),
            "pod_count": sum(g.count for g in self.groups),
            "shapes": shapes,
            "gang_key": tuple((g.signature, g.count) for g in self.groups),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)


def build_request(workload: WorkloadInfo, admission: Admission, *,
                  flavors: Mapping[str, FlavorConfig], hints: Hints = NO_HINTS,
                  now: float = 0.0, stale_after: float = 60.0) -> DispatchRequest:
    """The request for ``workload`` admitted as ``admission``; ``flavors`` by name."""
    by_name = {ps.name: ps for ps in workload.pod_sets}
    groups = []
    total: ResourceVector = {}
    for placed in admission.pod_sets:
        pod_set = by_name.get(placed.name)
        where = f"workload {workload.key}: podSet {placed.name}"
        if pod_set is None:
            raise RequestError(f"{where}: admitted but not in the workload")
        if placed.count < 0:
            raise RequestError(f"{where}: admitted count {placed.count} is negative")
        used = [flavors.get(name) for name in dict.fromkeys(placed.flavors.values())]
        missing = [name for name, config in zip(dict.fromkeys(placed.flavors.values()), used,
                                                 strict=True) if config is None]
        if missing:
            raise RequestError(f"{where}: flavor {', '.join(missing)} is not known")
        configs = [c for c in used if c is not None]
        try:
            pod = _pod(pod_set, configs)
        except (ModelError, ValueError) as exc:
            raise RequestError(f"{where}: {exc}") from None
        labels: dict[str, str] = {}
        for config in configs:
            for key, value in config.node_labels.items():
                if labels.setdefault(key, value) != value:
                    raise RequestError(f"{where}: flavors disagree on node label {key} "
                                       f"({labels[key]} vs {value})")
        groups.append(PodGroup(placed.name, placed.count, pod, tuple(sorted(labels.items())),
                               dict(placed.flavors), signature(pod),
                               (tuple(sorted(pod.node_selector.items())), pod.required_terms,
                                pod.tolerations),
                               tuple((r, a) for r, a in pod.requests.items() if a > 0)))
        for resource, amount in pod_set.requests.items():
            total[resource] = total.get(resource, 0) + amount * placed.count
    return DispatchRequest(workload, admission, tuple(groups), total, hints, now, stale_after)


def _pod(pod_set: PodSetInfo, flavors: Iterable[FlavorConfig]) -> PodRequirements:
    selector = dict(pod_set.node_selector)
    tolerations = [to_toleration(t) for t in pod_set.tolerations]
    for config in flavors:
        selector.update(config.node_labels)
        tolerations.extend(to_toleration(t) for t in config.tolerations)
    terms = None
    if pod_set.affinity_terms:
        terms = tuple(NodeSelectorTerm(tuple(
            NodeSelectorRequirement(r.key, SelectorOperator(r.operator), tuple(r.values))
            for r in term)) for term in pod_set.affinity_terms)
    return PodRequirements(requests=dict(pod_set.requests), node_selector=selector,
                           required_terms=terms, tolerations=tuple(dict.fromkeys(tolerations)),
                           name=pod_set.name)


def to_toleration(toleration: Any) -> Toleration:
    """A placement toleration from any toleration-shaped value (the API model's included)."""
    if isinstance(toleration, Toleration):
        return toleration
    effect = getattr(toleration, "effect", None)
    return Toleration(key=str(getattr(toleration, "key", "") or ""),
                      operator=TolerationOperator(getattr(toleration, "operator", None)
                                                  or "Equal"),
                      value=str(getattr(toleration, "value", "") or ""),
                      effect=TaintEffect(effect) if effect else None)
