"""The placement model: nodes, pods' scheduling requirements, taints, tolerations.

These are the few facts kube-scheduler's default Filter plugins look at
(NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit) and its
resource scorers read, written as plain frozen values so the same code serves
the scheduler extender (values built from Kubernetes JSON by
:mod:`placement.objects`), Redis worker pools (values built from a worker's
registration) and admission (values built from observed nodes).

Amounts are :mod:`quota.resources` milli-units. A node's ``requested`` is the
sum of the requests of the pods already bound to it; the number of those pods
is kept in the same vector under the resource ``pods`` (1000 per pod), so
``allocatable["pods"]`` caps it like any other resource and every pod
implicitly requests one pod slot.

kube-scheduler scores CPU and memory with *non-zero* requests: a container
that requests no CPU counts as 100m and one that requests no memory as 200Mi,
so best-effort pods still spread. :attr:`PodRequirements.nonzero_requests` and
:attr:`Node.nonzero_requested` carry those figures when the caller knows them
(the Kubernetes edge does); when absent, the plain requests stand in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from quota.labels import requirement_matches
from quota.resources import MILLI, Amount
from quota.values import value

#: The pseudo-resource counting pods on a node.
PODS: Final = "pods"
#: One pod slot, in milli-units.
POD_SLOT: Final = MILLI

#: Resources kube-scheduler treats as native; anything else (``nvidia.com/gpu``,
#: ``hugepages-2Mi``) is a *scalar* resource that is scored only for pods that
#: request it.
NATIVE_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage", PODS})


class ModelError(ValueError):
    """A placement value that cannot exist (names the object and the field)."""


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


#: Effects that keep a pod off a node unless tolerated. PreferNoSchedule only
#: lowers a score in kube-scheduler; it never filters.
BLOCKING_EFFECTS: Final = frozenset({TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE})


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: TaintEffect
    value: str = ""

    def __str__(self) -> str:
        return f"{{{self.key}: {self.value}}}"


class TolerationOperator(StrEnum):
    EQUAL = "Equal"
    EXISTS = "Exists"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod's toleration. Empty ``key`` with ``Exists`` tolerates every taint;
    ``effect=None`` matches every effect."""

    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: TaintEffect | None = None

    def __post_init__(self) -> None:
        if not self.key and self.operator is not TolerationOperator.EXISTS:
            raise ModelError("toleration: an empty key requires operator Exists")
        if self.operator is TolerationOperator.EXISTS and self.value:
            raise ModelError(f"toleration {self.key!r}: operator Exists takes no value")

    def tolerates(self, taint: Taint) -> bool:
        if self.effect is not None and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator is TolerationOperator.EXISTS:
            return True
        return self.value == taint.value


class SelectorOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    """One ``matchExpressions`` (or ``matchFields``) entry of node affinity."""

    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        op = self.operator
        where = f"node selector requirement {self.key!r} ({op})"
        if not self.key:
            raise ModelError("node selector requirement: key must not be empty")
        if op in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not self.values:
            raise ModelError(f"{where}: values must not be empty")
        if op in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST) and self.values:
            raise ModelError(f"{where}: values must be empty")
        if op in (SelectorOperator.GT, SelectorOperator.LT):
            if len(self.values) != 1:
                raise ModelError(f"{where}: needs exactly one value")
            try:
                int(self.values[0])
            except ValueError:
                raise ModelError(f"{where}: {self.values[0]!r} is not an integer") from None

    def matches(self, labels: Mapping[str, str]) -> bool:
        return requirement_matches(self.key, self.operator, self.values, labels)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """All expressions and fields must match. A term with neither matches no
    node (kube-scheduler's rule: an empty term selects nothing)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    #: Only ``metadata.name`` is a valid field key.
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    def __post_init__(self) -> None:
        for req in self.match_fields:
            if req.key != "metadata.name":
                raise ModelError(f"node selector term: matchFields key {req.key!r} is not "
                                 "supported (only metadata.name)")
            if req.operator not in (SelectorOperator.IN, SelectorOperator.NOT_IN):
                raise ModelError("node selector term: matchFields supports only In and NotIn")

    def matches(self, node: Node) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        fields = {"metadata.name": node.name}
        return (all(r.matches(node.labels) for r in self.match_expressions)
                and all(r.matches(fields) for r in self.match_fields))


@value
class Node:
    """A node as placement sees it. Treat the mappings as read-only."""

    name: str
    allocatable: Mapping[str, Amount]
    requested: Mapping[str, Amount] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    #: ``requested`` with kube-scheduler's non-zero CPU/memory defaults; None = same.
    nonzero_requested: Mapping[str, Amount] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("node: name must not be empty")
        for what, vector in (("allocatable", self.allocatable), ("requested", self.requested)):
            for resource, amount in vector.items():
                if amount < 0:
                    raise ModelError(f"node {self.name}: {what}[{resource}] must not be negative")

    def free(self, resource: str) -> Amount:
        """Allocatable minus requested; negative when overcommitted."""
        return self.allocatable.get(resource, 0) - self.requested.get(resource, 0)

    def score_requested(self, resource: str) -> Amount:
        source = self.requested if self.nonzero_requested is None else self.nonzero_requested
        return source.get(resource, 0)

    def with_requested(self, amounts: Mapping[str, Amount]) -> Node:
        """This node with ``amounts`` (pods counted elsewhere: their requests and pod slots)
        added to what is requested (a new value; ``self`` if there is nothing to add).

        The amounts are real requests, so they go into ``nonzero_requested`` as they are
        too, when the node keeps one: the non-zero defaults it already counts stay counted.
        """
        if not amounts:
            return self
        requested = dict(self.requested)
        add_amounts(requested, amounts)
        nonzero: dict[str, Amount] | None = None
        if self.nonzero_requested is not None:
            nonzero = dict(self.nonzero_requested)
            add_amounts(nonzero, amounts)
        return Node(self.name, self.allocatable, requested, self.labels, self.taints,
                    self.unschedulable, nonzero)

    def with_pod(self, pod: PodRequirements) -> Node:
        """This node with ``pod`` bound to it (a new value)."""
        requested = dict(self.requested)
        for resource, amount in pod.requests.items():
            requested[resource] = requested.get(resource, 0) + amount
        requested[PODS] = requested.get(PODS, 0) + POD_SLOT
        nonzero: dict[str, Amount] | None = None
        if self.nonzero_requested is not None or pod.nonzero_requests is not None:
            nonzero = dict(self.requested if self.nonzero_requested is None
                           else self.nonzero_requested)
            for resource, amount in pod.score_requests.items():
                nonzero[resource] = nonzero.get(resource, 0) + amount
            nonzero[PODS] = nonzero.get(PODS, 0) + POD_SLOT
        return Node(self.name, self.allocatable, requested, self.labels, self.taints,
                    self.unschedulable, nonzero)


def add_amounts(total: dict[str, Amount], amounts: Mapping[str, Amount]) -> None:
    """Add ``amounts`` into ``total`` in place, resource by resource."""
    for resource, amount in amounts.items():
        total[resource] = total.get(resource, 0) + amount


@dataclass(frozen=True, slots=True)
class PodRequirements:
    """What one pod asks of a node. ``required_terms=None`` means no required
    node affinity; a tuple means at least one term must match."""

    requests: Mapping[str, Amount] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    #: ``requests`` with kube-scheduler's non-zero CPU/memory defaults; None = same.
    nonzero_requests: Mapping[str, Amount] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        for resource, amount in self.requests.items():
            if amount < 0:
                raise ModelError(f"pod {self.name or '?'}: requests[{resource}] "
                                 "must not be negative")
            if resource == PODS:
                raise ModelError(f"pod {self.name or '?'}: requests must not name "
                                 f"{PODS!r} (every pod takes one slot implicitly)")

    @property
    def score_requests(self) -> Mapping[str, Amount]:
        return self.requests if self.nonzero_requests is None else self.nonzero_requests


def is_scalar_resource(resource: str) -> bool:
    """Extended resources and hugepages: scored only for pods requesting them."""
    return resource not in NATIVE_RESOURCES
