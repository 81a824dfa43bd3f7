"""Capacity estimate: does every pod of the gang fit on a member's free nodes, node by node?

A member with 12 free GPUs in sum may still not take two pods of 6 GPUs if
its free GPUs sit 4 to a node: sums lie about gangs. The estimate answers
with the member's nodes, from cheap to exact:

1. **Sums** — the gang's total request per resource against the free total
   of the nodes of its flavors. Short in sum means short; this rejects most
   hopeless members with a few lookups (from a memoised summary).
2. **Copies per shape** — for each podSet, how many of its pods the free
   nodes take, node by node, as :func:`placement.domains.node_capacity`
   counts: the nodes whose selector, affinity, taints and cordon admit the
   pod (a *layout* answer, kept across usage changes), then per node
   ``min(free // request)`` over resources and free pod slots. The count
   stops as soon as it reaches what the gang needs, and resumes from there
   when a later gang needs more; it is memoised per member value and pod
   signature. If all the gang's pods have one shape this is exact: placing
   identical pods one by one lowers the capacity of exactly one node by
   exactly one each time, so any greedy placer places ``min(count,
   capacity)`` of them.
3. **Filling** (gangs mixing shapes, such as a launcher and workers) — the
   podSets, largest pods first, each fill the nodes that take them,
   re-counting nodes an earlier podSet already used: first in node order
   (first fit, which stops as soon as the podSet is placed), then, if that
   fails, tightest node first (best fit keeps big holes for big pods). A fill
   that succeeds *is* a placement, so the gang fits. Only when both fail does
   :func:`placement.gang.place_gang`, pod by pod with a binpacking scorer,
   have the last word. Memoised per member value and gang.

The answer is ``None`` (fits) or a reason naming the podSet and the figures,
so the explanation tells the user what was missing where. :func:`fill`
also returns the filled nodes, for callers that want the placement itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final

from multicluster.model import ClusterInfo, Swap, UsageAnswer
from multicluster.request import DispatchRequest, PodGroup
from placement.fit import check_constraints
from placement.gang import GangPlacement, GangUnplaceable, place_gang
from placement.model import POD_SLOT, PODS, Node, PodRequirements
from placement.scoring import ResourceAllocationScorer, ResourceSpec, Strategy
from quota.resources import Amount, format_amount, format_vector

#: Counting cap: far above any gang, so counts are member facts, not per-request ones.
_UNCAPPED: Final = 1 << 30

#: (node index in ``ClusterInfo.nodes``, copies it takes), tightest node first.
Slots = tuple[tuple[int, int], ...]


def shortfall(request: DispatchRequest, cluster: ClusterInfo) -> str | None:
    """Why the gang does not fit on ``cluster``'s free nodes, or None if it does."""
    if not request.groups or request.pod_count == 0:
        return None
    summary = cluster.pool(request.label_sets)
    for resource, need in request.total.items():
        have = summary.free.get(resource, 0)
        if need > 0 and have < need:
            return (f"needs {format_amount(need, resource)} {resource} in total; the "
                    f"{_nodes_phrase(request)} have {format_amount(have, resource)} free")
    shapes = request.shapes
    for group in request.groups:
        need = shapes[group.signature]
        have = copies(cluster, group, need)
        if have < need:
            return _short_of_copies(group, need, have, cluster)
    if len(shapes) == 1:
        return None
    return cluster.remember(("gang", request.gang_key), lambda: _fill_or_place(request, cluster))


def _fill_or_place(request: DispatchRequest, cluster: ClusterInfo) -> str | None:
    # Cheapest proof first: a first fit that succeeds is a placement.
    if fill(request, cluster, tightest=False) is not None:
        return None
    if fill(request, cluster, tightest=True) is not None:
        return None
    return _place(request, cluster)


def eligible(cluster: ClusterInfo, group: PodGroup) -> tuple[int, ...]:
    """Indices of the nodes whose selector, affinity, taints and cordon admit the group's pods
    (a layout answer: it survives usage changes)."""
    pod = group.pod
    return cluster.remember_layout(("eligible", group.constraints), lambda: tuple(
        i for i, node in enumerate(cluster.nodes) if check_constraints(node, pod).fits))


@dataclass(slots=True)
class _Count(UsageAnswer):
    """A resumable count: ``total`` copies of a pod (``wanted``, ``constraints``) on the first
    ``position`` nodes of its eligible list."""

    wanted: tuple[tuple[str, Amount], ...]
    constraints: Hashable
    position: int = 0
    total: int = 0

    def patched(self, cluster: ClusterInfo, swaps: Sequence[Swap]) -> _Count | None:
        indices = cluster.layout.get(("eligible", self.constraints))
        if not isinstance(indices, tuple):
            return None
        positions = cluster.remember_layout(("eligible-at", self.constraints),
                                            lambda: {i: p for p, i in enumerate(indices)})
        total, wanted = self.total, self.wanted
        for index, old, new in swaps:
            at = positions.get(index)
            if at is not None and at < self.position:
                total += (free_copies(new, wanted, _UNCAPPED)
                          - free_copies(old, wanted, _UNCAPPED))
        return _Count(wanted, self.constraints, self.position, total)


def copies(cluster: ClusterInfo, group: PodGroup, need: int = _UNCAPPED) -> int:
    """How many pods like ``group.pod`` the member's free nodes take — counted only until
    ``need`` is reached (so the answer is exact when below ``need``). Memoised and resumed:
    a later, larger ``need`` continues where the last count stopped."""
    count = cluster.remember(("count", group.signature),
                             lambda: _Count(group.wanted, group.constraints))
    if count.total >= need:
        return count.total
    nodes, indices = cluster.nodes, eligible(cluster, group)
    wanted = group.wanted
    position, total = count.position, count.total
    while position < len(indices) and total < need:
        total += free_copies(nodes[indices[position]], wanted, _UNCAPPED)
        position += 1
    count.position, count.total = position, total
    return total


def free_copies(node: Node, wanted: tuple[tuple[str, Amount], ...], limit: int) -> int:
    """:func:`placement.domains.node_capacity` without its constraint check (done once per
    layout by :func:`eligible`): copies of a pod requesting ``wanted`` that fit the node's
    free resources and pod slots, at most ``limit``. Inlined: it runs in the hot loop."""
    allocatable, requested = node.allocatable, node.requested
    fits = limit
    if PODS in allocatable:
        fits = (allocatable[PODS] - requested.get(PODS, 0)) // POD_SLOT
        if fits > limit:
            fits = limit
    for resource, amount in wanted:
        n = (allocatable.get(resource, 0) - requested.get(resource, 0)) // amount
        if n < fits:
            fits = n
            if fits <= 0:
                return 0
    return max(fits, 0)


def slots(cluster: ClusterInfo, group: PodGroup) -> Slots:
    """The nodes that take at least one pod like ``group.pod``, tightest first (memoised)."""
    def compute() -> Slots:
        nodes = cluster.nodes
        wanted = group.wanted
        found = []
        for index in eligible(cluster, group):
            n = free_copies(nodes[index], wanted, _UNCAPPED)
            if n:
                found.append((index, n))
        found.sort(key=lambda slot: (slot[1], slot[0]))
        return tuple(found)

    return cluster.remember(("slots", group.signature), compute)


def fill(request: DispatchRequest, cluster: ClusterInfo, *,
         tightest: bool = True) -> dict[str, Node] | None:
    """Place the gang podSet by podSet, largest pods first: the touched nodes with the gang
    added, or None if this greedy fill finds no room. ``tightest`` fills the nodes that take
    fewest copies first (best fit); otherwise nodes in order (first fit, which stops as soon
    as the podSet is placed, without counting the other nodes)."""
    nodes = cluster.nodes
    touched: dict[int, Node] = {}
    for group in sorted(request.groups, key=lambda g: -_dominant_share(g.pod, request,
                                                                        cluster)):
        remaining = group.count
        wanted = group.wanted
        order = ([index for index, _ in slots(cluster, group)] if tightest
                 else eligible(cluster, group))
        for index in order:
            node = touched.get(index) or nodes[index]
            take = free_copies(node, wanted, remaining)
            if take:
                touched[index] = _with_pods(node, group.pod, take)
                remaining -= take
                if remaining == 0:
                    break
        if remaining:
            return None
    return {node.name: node for node in touched.values()}


def _with_pods(node: Node, pod: PodRequirements, count: int) -> Node:
    requested = dict(node.requested)
    for resource, amount in pod.requests.items():
        requested[resource] = requested.get(resource, 0) + amount * count
    requested[PODS] = requested.get(PODS, 0) + POD_SLOT * count
    return Node(node.name, node.allocatable, requested, node.labels, node.taints,
                node.unschedulable)


def _dominant_share(pod: PodRequirements, request: DispatchRequest,
                    cluster: ClusterInfo) -> float:
    allocatable = cluster.pool(request.label_sets).allocatable
    return max((v / allocatable[r] for r, v in pod.requests.items() if allocatable.get(r)),
               default=0.0)


def _short_of_copies(group: PodGroup, need: int, have: int, cluster: ClusterInfo) -> str:
    largest = cluster.remember(("largest", group.constraints), lambda: _largest_free(
        cluster, eligible(cluster, group)))
    largest = {resource: largest.get(resource, 0) for resource in group.pod.requests}
    return (f"podSet {group.pod_set}: {need} pod(s) of "
            f"{format_vector(group.pod.requests) or 'no resources'} needed, the free nodes "
            f"take {have} (largest free per node: {format_vector(largest) or 'none'})")


def _largest_free(cluster: ClusterInfo, indices: tuple[int, ...]) -> dict[str, Amount]:
    largest: dict[str, Amount] = {}
    for index in indices:
        node = cluster.nodes[index]
        for resource in node.allocatable:
            free = node.free(resource)
            if free > largest.get(resource, 0):
                largest[resource] = free
    return largest


def _place(request: DispatchRequest, cluster: ClusterInfo) -> str | None:
    """The gang placer's verdict (see :func:`place`)."""
    result = place(request, cluster)
    if isinstance(result, GangUnplaceable):
        return f"the gang does not fit node by node: {result.reason}"
    return None


def place(request: DispatchRequest, cluster: ClusterInfo) -> GangPlacement | GangUnplaceable:
    """The gang placer, pod by pod: largest pods first with a binpacking scorer, and, if
    that fails, in podSet order with the default scorer. Greedy orders are heuristics (the
    problem is bin packing): one can fail where the other succeeds, as in a member's own
    scheduler, which sees the pods in podSet order."""
    pods: list[PodRequirements] = []
    for group in sorted(request.groups, key=lambda g: -_dominant_share(g.pod, request,
                                                                        cluster)):
        pods.extend([group.pod] * group.count)
    resources = sorted({r for p in pods for r, v in p.requests.items() if v > 0})
    scorer = ResourceAllocationScorer(Strategy.MOST_ALLOCATED,
                                      tuple(ResourceSpec(r) for r in resources) or
                                      (ResourceSpec("cpu"), ResourceSpec("memory")))
    result = place_gang(pods, cluster.nodes, scorer)
    if isinstance(result, GangUnplaceable):
        in_order = [group.pod for group in request.groups for _ in range(group.count)]
        second = place_gang(in_order, cluster.nodes, ResourceAllocationScorer())
        if isinstance(second, GangPlacement):
            return second
    return result


def _nodes_phrase(request: DispatchRequest) -> str:
    labels = [labels for labels in request.label_sets if labels]
    if not labels:
        return "nodes"
    spelled = " or ".join(",".join(f"{k}={v}" for k, v in ls) for ls in labels)
    return f"nodes with {spelled}"
