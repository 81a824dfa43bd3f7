"""Topology-aware assignment of a podSet's pods to topology domains.

Admission calls this (pure, values in, values out) when a podSet asks for
topology, to decide *where* its ``count`` identical pods go before it admits
the workload::

    result = assign_domains(nodes, topology, pod, count, required=level)
    # or preferred=level
    if isinstance(result, DomainUnfit):
        ...  # keep the workload pending with result.reason
    else:
        result.domains   # pods per domain at the asked level
        result.nodes     # pods per node (to pin pods, or to run them on a pool)

Inputs: ``nodes`` with their free capacity (``allocatable - requested``), the
:class:`~placement.topology.Topology`, ``pod`` — one pod's
:class:`~placement.model.PodRequirements` or just its request vector — and
``count``. Exactly one of ``required`` / ``preferred`` names a level (a
node-label key of the topology).

How it decides:

1. **Capacity per node** — how many such pods a node takes: the pod must pass
   the node's selector/affinity/taint checks; then the minimum over requested
   resources of ``free // request``, and the free pod slots. Nodes missing a
   topology label cannot be located and are left out.
2. **Capacity per domain** — the sum over its nodes, at every level.
3. **Required level** — only a single domain at that level will do. Among the
   domains whose capacity reaches ``count`` take the *tightest* (smallest
   capacity; ties by domain values): best fit keeps roomy domains whole for
   later, larger gangs. None fits → :class:`DomainUnfit` naming the roomiest.
4. **Preferred level** — one domain at that level if any fits (as above);
   otherwise the tightest single domain at the nearest wider level, or, if
   even the widest level has none, all nodes together. Inside it the pods are
   spread over as few domains as possible (below).
5. **Distribution inside a domain**, level by level down to nodes: children
   are taken largest first until the rest fits in one child, and for that rest
   the tightest child that holds it is chosen (fewest children, best fit for
   the tail).

The answer lists pods per domain at the asked level and per node (lowest
level). It never exceeds any node's capacity, and its counts sum to ``count``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from placement.fit import check_constraints
from placement.model import POD_SLOT, PODS, ModelError, Node, PodRequirements
from placement.topology import Domain, Topology
from quota.resources import format_vector


@dataclass(frozen=True, slots=True)
class DomainCount:
    """``values`` are the label values from the widest level down to the asked one."""

    values: Domain
    count: int


@dataclass(frozen=True, slots=True)
class NodeCount:
    node: str
    count: int


@dataclass(frozen=True, slots=True)
class DomainAssignment:
    #: The topology's levels down to the asked level (the keys of ``values``).
    levels: tuple[str, ...]
    #: Pods per domain at the asked level, sorted by values.
    domains: tuple[DomainCount, ...]
    #: Pods per node, sorted by node name.
    nodes: tuple[NodeCount, ...]

    @property
    def count(self) -> int:
        return sum(d.count for d in self.domains)


@dataclass(frozen=True, slots=True)
class DomainUnfit:
    reason: str


@dataclass(slots=True)
class _Tree:
    """A domain with its capacity and children (inner domains or nodes)."""

    key: Domain
    capacity: int = 0
    children: dict[str, _Tree] = field(default_factory=dict)
    node: str | None = None  # set on leaves


def node_capacity(node: Node, pod: PodRequirements, limit: int) -> int:
    """How many copies of ``pod`` fit on ``node`` (at most ``limit``)."""
    if not check_constraints(node, pod).fits:
        return 0
    fits = limit
    if PODS in node.allocatable:
        fits = min(fits, max(0, node.free(PODS)) // POD_SLOT)
    for resource, amount in pod.requests.items():
        if amount > 0:
            fits = min(fits, max(0, node.free(resource)) // amount)
    return fits


def assign_domains(
    nodes: Sequence[Node],
    topology: Topology,
    pod: PodRequirements | Mapping[str, int],
    count: int,
    *,
    required: str | None = None,
    preferred: str | None = None,
) -> DomainAssignment | DomainUnfit:
    if (required is None) == (preferred is None):
        raise ModelError("assign_domains: give exactly one of required= or preferred=")
    if count < 0:
        raise ModelError(f"assign_domains: count {count} must not be negative")
    level = required if required is not None else preferred
    assert level is not None
    depth = topology.index(level)
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ModelError("assign_domains: node names must be unique")
    spec = pod if isinstance(pod, PodRequirements) else PodRequirements(requests=dict(pod))
    if count == 0:
        return DomainAssignment(topology.levels[: depth + 1], (), ())
    root = _build(nodes, topology, spec, count)
    what = f"{count} pod(s) of {format_vector(spec.requests) or 'no resources'}"

    by_depth = _domains_at(root, depth + 1)
    fitting = [d for d in by_depth if d.capacity >= count]
    if fitting:
        chosen = min(fitting, key=lambda d: (d.capacity, d.key))
    elif required is not None:
        roomiest = min(by_depth, key=lambda d: (-d.capacity, d.key), default=None)
        best = (f"the roomiest, {'/'.join(roomiest.key)}, fits {roomiest.capacity}"
                if roomiest else "no located node has room for one")
        return DomainUnfit(f"{what} do not fit in one {level} domain: {best}")
    else:
        widened = _widen(root, depth, count)
        if widened is None:
            return DomainUnfit(f"{what} do not fit: all nodes of topology "
                               f"{topology.name or '?'} together fit {root.capacity}")
        chosen = widened
    per_node: dict[str, int] = {}
    _distribute(chosen, count, per_node)
    return _answer(per_node, nodes, topology, depth)


def _build(nodes: Sequence[Node], topology: Topology, pod: PodRequirements,
           count: int) -> _Tree:
    root = _Tree(())
    for node in nodes:
        path = topology.path(node.labels)
        if len(path) < len(topology.levels):
            continue  # cannot be located in the topology
        capacity = node_capacity(node, pod, count)
        if capacity == 0:
            continue
        tree = root
        tree.capacity += capacity
        for depth in range(len(path)):
            key = path[: depth + 1]
            tree = tree.children.setdefault(path[depth], _Tree(key))
            tree.capacity += capacity
        leaf = tree.children.setdefault(node.name, _Tree((*path, node.name), node=node.name))
        leaf.capacity += capacity
    return root


def _domains_at(root: _Tree, depth: int) -> list[_Tree]:
    level = [root]
    for _ in range(depth):
        level = [child for tree in level for child in tree.children.values()]
    return level


def _widen(root: _Tree, depth: int, count: int) -> _Tree | None:
    """The tightest single domain at the nearest wider level that fits, or the
    root when only all nodes together do, or None."""
    for wider in range(depth, 0, -1):
        fitting = [d for d in _domains_at(root, wider) if d.capacity >= count]
        if fitting:
            return min(fitting, key=lambda d: (d.capacity, d.key))
    return root if root.capacity >= count else None


def _distribute(tree: _Tree, count: int, per_node: dict[str, int]) -> None:
    if tree.node is not None:
        per_node[tree.node] = per_node.get(tree.node, 0) + count
        return
    pool = sorted(tree.children.values(), key=lambda d: (-d.capacity, d.key))
    remaining = count
    while remaining > 0:
        holding = [d for d in pool if d.capacity >= remaining]
        if holding:
            _distribute(min(holding, key=lambda d: (d.capacity, d.key)), remaining, per_node)
            return
        largest = pool.pop(0)
        _distribute(largest, largest.capacity, per_node)
        remaining -= largest.capacity


def _answer(per_node: dict[str, int], nodes: Sequence[Node], topology: Topology,
            depth: int) -> DomainAssignment:
    labels = {node.name: node.labels for node in nodes}
    per_domain: dict[Domain, int] = {}
    for name, n in per_node.items():
        domain = topology.domain(labels[name], depth)
        assert domain is not None  # only located nodes were built into the tree
        per_domain[domain] = per_domain.get(domain, 0) + n
    return DomainAssignment(
        levels=topology.levels[: depth + 1],
        domains=tuple(DomainCount(v, n) for v, n in sorted(per_domain.items())),
        nodes=tuple(NodeCount(name, n) for name, n in sorted(per_node.items())),
    )

