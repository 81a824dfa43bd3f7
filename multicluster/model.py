"""The member-cluster model: what dispatch knows about one member, as a plain value.

A :class:`ClusterInfo` holds a member's selector labels, its cluster-wide
taints, its price table, the datasets it holds, its health (``Active`` and
when it was last seen) and its nodes — :class:`placement.model.Node` values
whose ``requested`` is what is already bound there, so ``allocatable -
requested`` is free. :mod:`multicluster.convert` builds it from a
MemberCluster object and the nodes observed in that member.

A ClusterInfo never changes: new observations make a new value. That is what
makes its memo safe. Every workload's decision asks each member the same
few questions — which nodes carry a flavor's labels, how many pods of a given
shape fit on the free nodes, what the flavor's nodes hold in total — and the
answers depend only on the member and the question, so each is computed once
per value and kept in :attr:`ClusterInfo.memo` (the equivalence idea of
:mod:`placement.memo`, at cluster granularity). A decision over 100 members
of 100 nodes then costs a few dictionary lookups per member instead of a
walk over 10,000 nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, TypeVar

from placement.model import PODS, ModelError, Node, Taint
from quota.resources import Amount

T = TypeVar("T")

#: Label set of a flavor (sorted items); empty = every node.
LabelSet = tuple[tuple[str, str], ...]


class MemberKind(StrEnum):
    KUBERNETES = "Kubernetes"
    POOL = "Pool"


@dataclass(frozen=True, slots=True)
class Health:
    """``active``: condition Active is True. ``last_seen``: seconds (clock of the caller)."""

    active: bool
    reason: str = ""
    message: str = ""
    last_seen: float | None = None


@dataclass(frozen=True, slots=True)
class CostTable:
    """Hourly price per milli-unit, by (resource, flavor); flavor ``None`` is the default."""

    rates: Mapping[tuple[str, str | None], float] = field(default_factory=dict)

    def price(self, resource: str, flavor: str) -> float:
        rates = self.rates
        rate = rates.get((resource, flavor))
        if rate is None:
            rate = rates.get((resource, None), 0.0)
        return rate

    def hourly(self, vector: Mapping[str, Amount], flavors: Mapping[str, str]) -> float:
        """The price per hour of ``vector`` (milli-units), each resource at its flavor's rate."""
        return sum(amount * self.price(resource, flavors.get(resource, ""))
                   for resource, amount in vector.items())


FREE: Final = CostTable()


@dataclass(frozen=True, slots=True)
class PoolSummary:
    """Totals over the nodes carrying a set of labels (a flavor's nodes in one member)."""

    nodes: int
    allocatable: Mapping[str, Amount]
    requested: Mapping[str, Amount]
    #: Sum of ``max(0, allocatable - requested)`` per resource.
    free: Mapping[str, Amount]
    #: Largest free amount on any one node, per resource.
    max_free: Mapping[str, Amount]


@dataclass(frozen=True, eq=False)
class ClusterInfo:
    """One member as dispatch sees it. Treat the mappings as read-only."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    cost: CostTable = FREE
    datasets: frozenset[str] = frozenset()
    health: Health = Health(active=True)
    nodes: tuple[Node, ...] = ()
    kind: MemberKind = MemberKind.KUBERNETES
    #: Answers already computed for this value (see the module docstring).
    memo: dict[Hashable, object] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("member cluster: name must not be empty")
        names = [node.name for node in self.nodes]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ModelError(f"member cluster {self.name}: node names must be unique "
                             f"(repeated: {', '.join(dup)})")

    def remember(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The memoised answer to ``key``, computed on first use."""
        memo = self.memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]  # stored by the same key's compute
        answer = memo[key] = compute()
        return answer

    def nodes_with(self, labels: LabelSet) -> tuple[Node, ...]:
        """Nodes carrying every label of ``labels``."""
        if not labels:
            return self.nodes
        return self.remember(("nodes", labels), lambda: tuple(
            node for node in self.nodes
            if all(node.labels.get(k) == v for k, v in labels)))

    def pool(self, label_sets: tuple[LabelSet, ...]) -> PoolSummary:
        """Totals over nodes carrying all labels of at least one of ``label_sets``."""
        return self.remember(("pool", label_sets), lambda: _summarise(self, label_sets))


def _summarise(cluster: ClusterInfo, label_sets: tuple[LabelSet, ...]) -> PoolSummary:
    if not label_sets or () in label_sets:
        nodes = cluster.nodes
    else:
        chosen = {node.name: node for labels in label_sets for node in cluster.nodes_with(labels)}
        nodes = tuple(chosen[name] for name in sorted(chosen))
    allocatable: dict[str, Amount] = {}
    requested: dict[str, Amount] = {}
    free: dict[str, Amount] = {}
    max_free: dict[str, Amount] = {}
    for node in nodes:
        if node.unschedulable:
            continue
        for resource, amount in node.allocatable.items():
            if resource == PODS:
                continue
            used = node.requested.get(resource, 0)
            allocatable[resource] = allocatable.get(resource, 0) + amount
            requested[resource] = requested.get(resource, 0) + used
            left = max(0, amount - used)
            free[resource] = free.get(resource, 0) + left
            if left > max_free.get(resource, 0):
                max_free[resource] = left
    count = sum(1 for node in nodes if not node.unschedulable)
    return PoolSummary(count, allocatable, requested, free, max_free)
