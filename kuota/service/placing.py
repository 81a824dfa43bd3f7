"""Placing an admitted gang on the nodes of one worker pool (the one call site of placement/).

Admission decided *whether* the workload may run and with which flavors;
this decides *where*. Each pod of the gang asks for its pod set's requests,
its nodeSelector and required node affinity, plus the ``nodeLabels`` of every
flavor it was admitted with — that is how a ResourceFlavor selects the nodes
of a pool. A gang runs inside one pool (a pool acts as one member cluster);
pools are tried in name order and the first that takes the whole gang wins.
Inside the pool :func:`placement.gang.place_gang` places every pod or none,
scoring with kube-scheduler's MostAllocated (binpack), so small gangs fill
nodes up and leave whole nodes free for big ones. The leader passes its pools
as :class:`placement.ranking.NodeRanking` s, which give place_gang's answer at
the cost of the nodes that changed since the last gang instead of every node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from placement.gang import GangPlacement, place_gang
from placement.model import (
    POD_SLOT,
    PODS,
    ModelError,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodRequirements,
    SelectorOperator,
    add_amounts,
)
from placement.ranking import NodeRanking
from placement.scoring import ResourceAllocationScorer, Strategy
from queueing.store import NodeRecord
from quota.config import FlavorConfig
from quota.resources import ResourceVector
from quota.values import value
from quota.workload import Admission, PodSetInfo, WorkloadInfo

SCORER = ResourceAllocationScorer(Strategy.MOST_ALLOCATED)


@value
class GangPod:
    """Pod ``index`` of the gang (indices run across pod sets in order)."""

    index: int
    pod_set: str
    requests: ResourceVector
    requirements: PodRequirements


@value
class Placed:
    pool: str
    #: Node of every pod, by pod index.
    nodes: tuple[str, ...]
    #: The touched nodes with the gang's pods added.
    updated: dict[str, Node]


@dataclass(frozen=True, slots=True)
class Unplaceable:
    reason: str


def gang_pods(info: WorkloadInfo, admission: Admission,
              flavors: Mapping[str, FlavorConfig]) -> list[GangPod]:
    """Every pod of the admitted gang with what it asks of a node."""
    pods: list[GangPod] = []
    by_name = {ps.name: ps for ps in info.pod_sets}
    for ps_admission in admission.pod_sets:
        ps = by_name[ps_admission.name]
        selector = dict(ps.node_selector)
        for flavor_name in dict.fromkeys(ps_admission.flavors.values()):
            flavor = flavors.get(flavor_name)
            if flavor is not None:
                selector.update(flavor.node_labels)
        requirements = PodRequirements(requests=dict(ps.requests), node_selector=selector,
                                       required_terms=_terms(ps), name=f"{ps.name}")
        for _ in range(ps_admission.count):
            pods.append(GangPod(len(pods), ps.name, dict(ps.requests), requirements))
    return pods


def _terms(ps: PodSetInfo) -> tuple[NodeSelectorTerm, ...] | None:
    if not ps.affinity_terms:
        return None
    return tuple(NodeSelectorTerm(tuple(
        NodeSelectorRequirement(r.key, SelectorOperator(r.operator), tuple(r.values))
        for r in term)) for term in ps.affinity_terms)


def node_value(record: NodeRecord) -> Node:
    """A Ready node as placement sees it, nothing requested yet."""
    return Node(record.name, dict(record.capacity), labels=dict(record.labels))


def with_requests(node: Node, requests: Iterable[ResourceVector]) -> Node:
    """``node`` with pods of these ``requests`` bound to it: one new value for all of them
    (a node running thousands of pods is rebuilt once, not once per pod)."""
    if node.nonzero_requested is not None:  # score defaults to keep apart: pod by pod
        for vector in requests:
            node = node.with_pod(PodRequirements(requests=vector))
        return node
    requested = dict(node.requested)
    pods = 0
    for vector in requests:
        add_amounts(requested, vector)
        pods += 1
    if not pods:
        return node
    requested[PODS] = requested.get(PODS, 0) + pods * POD_SLOT
    return Node(node.name, node.allocatable, requested, node.labels, node.taints,
                node.unschedulable)


def without_requests(node: Node, requests: ResourceVector) -> Node:
    """``node`` with one pod of ``requests`` gone (the inverse of :meth:`Node.with_pod`)."""
    requested = dict(node.requested)
    for resource, amount in {**requests, PODS: POD_SLOT}.items():
        left = requested.get(resource, 0) - amount
        if left > 0:
            requested[resource] = left
        else:
            requested.pop(resource, None)
    return Node(node.name, node.allocatable, requested, node.labels, node.taints,
                node.unschedulable)


#: A pool's nodes: a list, or a ranking of them (:mod:`placement.ranking`).
Pool = Sequence[Node] | NodeRanking


def members(pool: Pool) -> Sequence[Node]:
    """The pool's nodes as a list."""
    return list(pool.nodes.values()) if isinstance(pool, NodeRanking) else pool


def place(pods: Sequence[GangPod], pools: Mapping[str, Pool]) -> Placed | Unplaceable:
    """All pods in the first pool (by name) that takes them all, or why none does."""
    if not pods:
        return Placed("", (), {})
    requirements = [p.requirements for p in pods]
    scanned: dict[str, str] = {}  # pool -> why the gang does not fit there
    try:
        for pool in sorted(pools):
            nodes = pools[pool]
            # A ranking answers as place_gang would, without the reasons: those are scanned
            # for below, and only when no pool takes the gang.
            result = (nodes.place_gang(requirements) if isinstance(nodes, NodeRanking)
                      else place_gang(requirements, nodes, SCORER))
            if isinstance(result, GangPlacement):
                return Placed(pool, result.assignments, result.nodes)
            if result is not None:
                scanned[pool] = result.reason
        for pool in sorted(pools.keys() - scanned.keys()):
            result = place_gang(requirements, members(pools[pool]), SCORER)
            if isinstance(result, GangPlacement):  # (never: a ranking is exact)
                return Placed(pool, result.assignments, result.nodes)
            scanned[pool] = result.reason
    except ModelError as exc:
        return Unplaceable(str(exc))
    reasons = [f"pool {pool}: {reason}" for pool, reason in sorted(scanned.items())]
    if not reasons:
        return Unplaceable("no Ready nodes in any pool")
    return Unplaceable("; ".join(reasons))
