"""From MemberCluster objects and observed nodes to dispatch values, and back to status.

:func:`cluster_info` is what the multi-cluster controller calls whenever a
MemberCluster or one of its nodes changes: the object gives selector labels,
taints, prices, datasets and health (condition ``Active``, ``lastSeenTime``);
the nodes are :class:`placement.model.Node` values as observed in the member
(Kubernetes Node objects through :func:`placement.objects.node_from_object`
plus the requests of the pods bound there, or a pool's worker registrations),
their ``requested`` already counting what runs on them.

Prices are turned into price per milli-unit-hour once, here, so scoring
multiplies integers by one float per resource.

:func:`capacity_status` goes the other way: capacity and free capacity per
flavor, for the member's status (``kubectl get mc -o yaml``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal

from multicluster.model import FREE, ClusterInfo, CostTable, Health, MemberKind
from placement.model import PODS, Node, Taint, TaintEffect
from quota.api.membercluster import ACTIVE, FlavorCapacity, MemberCluster
from quota.api.meta import find_condition
from quota.api.quantity import amount
from quota.config import FlavorConfig
from quota.resources import Amount, format_amount


def cluster_info(obj: MemberCluster, nodes: Iterable[Node]) -> ClusterInfo:
    """The dispatch value of a member and its observed nodes."""
    spec, status = obj.spec, obj.status
    condition = find_condition(status.conditions, ACTIVE)
    health = Health(
        active=condition is not None and condition.is_true,
        reason=condition.reason if condition is not None else "NotObserved",
        message=condition.message if condition is not None else "",
        last_seen=timestamp(status.last_seen_time) if status.last_seen_time else None,
    )
    return ClusterInfo(
        name=obj.metadata.name,
        labels=obj.selector_labels(),
        taints=tuple(Taint(t.key, TaintEffect(t.effect), t.value) for t in spec.taints),
        cost=cost_table(obj),
        datasets=frozenset(spec.datasets),
        health=health,
        nodes=tuple(sorted(nodes, key=lambda n: n.name)),
        kind=MemberKind.POOL if spec.pool else MemberKind.KUBERNETES,
    )


def cost_table(obj: MemberCluster) -> CostTable:
    if not obj.spec.cost:
        return FREE
    return CostTable({(rate.resource, rate.flavor): float(Decimal(rate.price) / amount(rate.per))
                      for rate in obj.spec.cost})


def timestamp(moment: datetime) -> float:
    """Seconds since the epoch; a time without a zone is read as UTC (as Kubernetes writes)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def capacity_status(nodes: Iterable[Node], flavors: Mapping[str, FlavorConfig]
                    ) -> tuple[tuple[FlavorCapacity, ...], tuple[FlavorCapacity, ...]]:
    """(capacity, free capacity) per flavor over schedulable nodes carrying its nodeLabels."""
    ready = [node for node in nodes if not node.unschedulable]
    capacity, free = [], []
    for name in sorted(flavors):
        labels = flavors[name].node_labels
        mine = [n for n in ready if all(n.labels.get(k) == v for k, v in labels.items())]
        if not mine:
            continue
        total: dict[str, Amount] = {}
        left: dict[str, Amount] = {}
        for node in mine:
            for resource, allocatable in node.allocatable.items():
                if resource == PODS:
                    continue
                total[resource] = total.get(resource, 0) + allocatable
                left[resource] = left.get(resource, 0) + max(0, node.free(resource))
        capacity.append(FlavorCapacity(name=name, resources=_quantities(total)))
        free.append(FlavorCapacity(name=name, resources=_quantities(left)))
    return tuple(capacity), tuple(free)


def _quantities(vector: Mapping[str, Amount]) -> dict[str, str]:
    return {resource: format_amount(vector[resource], resource) for resource in sorted(vector)}
