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

Most changes to a member only move usage: pods are bound or finish, and the
nodes' labels, taints, allocatable and cordon stay. Answers that depend only
on those (which nodes carry a flavor's labels, which nodes a pod's selector
and tolerations admit) live in :attr:`ClusterInfo.layout`, which
:meth:`ClusterInfo.with_usage` hands on to the next value, patching the pool
totals and counts for the nodes that changed (answers that know how, the
:class:`UsageAnswer` ones); the rest of the memo starts over. Neither
is an init field, so ``dataclasses.replace(cluster, nodes=...)`` starts with
both empty.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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


#: A node replaced by :meth:`ClusterInfo.with_usage`: (index, old value, new value).
Swap = tuple[int, Node, Node]


class UsageAnswer:
    """A memoised answer that can follow a usage-only change of its member (a few nodes'
    ``requested`` moved) by a patch, instead of being recomputed from all nodes."""

    __slots__ = ()

    def patched(self, cluster: ClusterInfo, swaps: Sequence[Swap]) -> UsageAnswer | None:
        """This answer for ``cluster`` (the new value); None to drop it."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PoolSummary(UsageAnswer):
    """Totals over the schedulable nodes carrying a set of labels (a flavor's nodes)."""

    #: Indices into :attr:`ClusterInfo.nodes`.
    indices: tuple[int, ...]
    allocatable: Mapping[str, Amount]
    requested: Mapping[str, Amount]
    #: Sum of ``max(0, allocatable - requested)`` per resource.
    free: Mapping[str, Amount]

    @property
    def nodes(self) -> int:
        return len(self.indices)

    def patched(self, cluster: ClusterInfo, swaps: Sequence[Swap]) -> PoolSummary:
        members = cluster.remember_layout(("pool-set", self.indices),
                                          lambda: frozenset(self.indices))
        requested = dict(self.requested)
        free = dict(self.free)
        for index, old, new in swaps:
            if index not in members:
                continue
            for resource, amount in new.allocatable.items():
                if resource == PODS:
                    continue
                before, after = old.requested.get(resource, 0), new.requested.get(resource, 0)
                requested[resource] += after - before
                free[resource] += max(0, amount - after) - max(0, amount - before)
        return PoolSummary(self.indices, self.allocatable, requested, free)


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
    #: Answers that depend on what runs on the nodes (see the module docstring).
    memo: dict[Hashable, object] = field(default_factory=dict, init=False, compare=False,
                                         repr=False)
    #: Answers that depend only on the nodes' labels, taints, allocatable and cordon; shared
    #: by the values :meth:`with_usage` derives.
    layout: dict[Hashable, object] = field(default_factory=dict, init=False, compare=False,
                                           repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("member cluster: name must not be empty")
        names = [node.name for node in self.nodes]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ModelError(f"member cluster {self.name}: node names must be unique "
                             f"(repeated: {', '.join(dup)})")

    def remember(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The memoised answer to ``key`` (usage-dependent), computed on first use."""
        memo = self.memo
        if key in memo:
            return memo[key]  # type: ignore[return-value]  # stored by the same key's compute
        answer = memo[key] = compute()
        return answer

    def remember_layout(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Like :meth:`remember`, for answers that do not depend on usage."""
        layout = self.layout
        if key in layout:
            return layout[key]  # type: ignore[return-value]  # stored by the same key's compute
        answer = layout[key] = compute()
        return answer

    def node_indices(self, labels: LabelSet) -> tuple[int, ...]:
        """Indices of the nodes carrying every label of ``labels``."""
        return self.remember_layout(("nodes", labels), lambda: tuple(
            i for i, node in enumerate(self.nodes)
            if all(node.labels.get(k) == v for k, v in labels)))

    def nodes_with(self, labels: LabelSet) -> tuple[Node, ...]:
        """Nodes carrying every label of ``labels``."""
        nodes = self.nodes
        return tuple(nodes[i] for i in self.node_indices(labels))

    def pool(self, label_sets: tuple[LabelSet, ...]) -> PoolSummary:
        """Totals over schedulable nodes carrying all labels of at least one of ``label_sets``."""
        return self.remember(("pool", label_sets), lambda: _summarise(self, label_sets))

    def with_usage(self, changed: Iterable[Node]) -> ClusterInfo:
        """This member with some nodes replaced (by name) after pods were bound or left.

        If only their ``requested`` differs, the new value keeps the answers that do not
        depend on usage and patches its pool totals, so the next decisions stay warm;
        otherwise (labels, taints, allocatable or cordon changed) it starts afresh.
        """
        position = self.remember_layout("positions",
                                        lambda: {n.name: i for i, n in enumerate(self.nodes)})
        nodes = list(self.nodes)
        swaps: list[Swap] = []
        same_layout = True
        for node in changed:
            index = position.get(node.name)
            if index is None:
                raise ModelError(f"member cluster {self.name}: no node {node.name} to update")
            old = nodes[index]
            same_layout = same_layout and (
                old.allocatable == node.allocatable and old.labels == node.labels
                and old.taints == node.taints and old.unschedulable == node.unschedulable)
            nodes[index] = node
            swaps.append((index, old, node))
        fresh = replace(self, nodes=tuple(nodes))
        if same_layout:
            object.__setattr__(fresh, "layout", self.layout)
            for key, answer in self.memo.items():
                if isinstance(answer, UsageAnswer):
                    patched = answer.patched(fresh, swaps)
                    if patched is not None:
                        fresh.memo[key] = patched
        return fresh


def _summarise(cluster: ClusterInfo, label_sets: tuple[LabelSet, ...]) -> PoolSummary:
    def members() -> tuple[int, ...]:
        nodes = cluster.nodes
        if not label_sets or () in label_sets:
            chosen: set[int] = set(range(len(nodes)))
        else:
            chosen = {i for labels in label_sets for i in cluster.node_indices(labels)}
        return tuple(i for i in sorted(chosen) if not nodes[i].unschedulable)

    indices = cluster.remember_layout(("pool-nodes", label_sets), members)
    allocatable: dict[str, Amount] = {}
    requested: dict[str, Amount] = {}
    free: dict[str, Amount] = {}
    for i in indices:
        node = cluster.nodes[i]
        used_by = node.requested
        for resource, amount in node.allocatable.items():
            if resource == PODS:
                continue
            used = used_by.get(resource, 0)
            allocatable[resource] = allocatable.get(resource, 0) + amount
            requested[resource] = requested.get(resource, 0) + used
            free[resource] = free.get(resource, 0) + max(0, amount - used)
    return PoolSummary(indices, allocatable, requested, free)
