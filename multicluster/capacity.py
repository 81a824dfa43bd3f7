"""Capacity estimate: does every pod of the gang fit on a member's free nodes, node by node?

A member with 12 free GPUs in sum may still not take two pods of 6 GPUs if
its free GPUs sit 4 to a node: sums lie about gangs. The estimate answers
with the member's nodes, in three steps from cheap to exact:

1. **Sums** — the gang's total request per resource against the member's
   free total. Short in sum means short; this rejects most hopeless members
   with a few additions (from a memoised summary).
2. **Copies per shape** — for each podSet, how many of its pods the free
   nodes take, node by node (:func:`placement.domains.node_capacity`:
   selector, taints, cordon, then ``min(free // request)`` per resource and
   free pod slots). The count is memoised per member and pod signature, so
   every later workload with pods of that shape pays one lookup. If all the
   gang's pods have one shape, this is exact: placing identical pods one by
   one lowers the capacity of exactly one node by exactly one each time, so
   a greedy placer places ``min(count, capacity)`` of them, no more, no less.
3. **Gang placement** — gangs mixing shapes (a launcher and workers) go
   through :func:`placement.gang.place_gang` on the member's nodes, largest
   pods first with a binpacking scorer (first-fit decreasing keeps big holes
   for big pods). Memoised per member and gang.

The answer is ``None`` (fits) or a reason naming the podSet and the figures,
so the explanation tells the user what was missing where.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

from multicluster.model import ClusterInfo
from multicluster.request import DispatchRequest, PodGroup
from placement.domains import node_capacity
from placement.gang import GangUnplaceable, place_gang
from placement.model import PODS, PodRequirements
from placement.scoring import ResourceAllocationScorer, ResourceSpec, Strategy
from quota.resources import format_amount, format_vector

#: Counting cap: far above any gang, so counts are member facts, not per-request ones.
_UNCAPPED: Final = 1 << 30


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
    shapes: dict[Hashable, int] = {}
    for group in request.groups:
        shapes[group.signature] = shapes.get(group.signature, 0) + group.count
    for group in request.groups:
        need = shapes[group.signature]
        have = copies(cluster, group)
        if have < need:
            return _short_of_copies(group, need, have, cluster)
    if len(shapes) == 1:
        return None
    key = ("gang", tuple((g.signature, g.count) for g in request.groups))
    return cluster.remember(key, lambda: _place(request, cluster))


def copies(cluster: ClusterInfo, group: PodGroup) -> int:
    """How many pods like ``group.pod`` the member's free nodes take (memoised)."""
    pod = group.pod
    return cluster.remember(("copies", group.signature), lambda: sum(
        node_capacity(node, pod, _UNCAPPED) for node in cluster.nodes))


def _short_of_copies(group: PodGroup, need: int, have: int, cluster: ClusterInfo) -> str:
    largest = {resource: cluster.pool((group.node_labels,)).max_free.get(resource, 0)
               for resource in group.pod.requests}
    return (f"podSet {group.pod_set}: {need} pod(s) of "
            f"{format_vector(group.pod.requests) or 'no resources'} needed, the free nodes "
            f"take {have} (largest free per node: {format_vector(largest) or 'none'})")


def _place(request: DispatchRequest, cluster: ClusterInfo) -> str | None:
    pods: list[PodRequirements] = []
    for group in request.groups:
        pods.extend([group.pod] * group.count)
    # Largest first (by dominant share of the member's capacity): big pods find big holes
    # before small pods break them up. The sort is stable, so equal pods keep their order.
    allocatable = cluster.pool(request.label_sets).allocatable
    pods.sort(key=lambda p: -max((v / allocatable[r] for r, v in p.requests.items()
                                  if allocatable.get(r)), default=0.0))
    resources = sorted({r for p in pods for r, v in p.requests.items() if v > 0 and r != PODS})
    scorer = ResourceAllocationScorer(Strategy.MOST_ALLOCATED,
                                      tuple(ResourceSpec(r) for r in resources) or
                                      (ResourceSpec("cpu"), ResourceSpec("memory")))
    result = place_gang(pods, cluster.nodes, scorer)
    if isinstance(result, GangUnplaceable):
        return f"the gang does not fit node by node: {result.reason}"
    return None


def _nodes_phrase(request: DispatchRequest) -> str:
    labels = [labels for labels in request.label_sets if labels]
    if not labels:
        return "nodes"
    spelled = " or ".join(",".join(f"{k}={v}" for k, v in ls) for ls in labels)
    return f"nodes with {spelled}"
