"""The filter plugins: members that cannot run a workload, and why.

Registered in this order, cheapest first (the first refusal is the one
reported):

Health
    The member's condition ``Active`` is True and it was seen within
    ``staleAfter`` of now. An inactive member, one never seen, or one whose
    last answer is older gets nothing new.
ClusterAffinity
    The member's selector labels satisfy the workload's
    ``kuota.dev/cluster-selector`` (no annotation: every member does).
TaintToleration
    Every ``NoSchedule``/``NoExecute`` taint of the member is tolerated by
    the pods of every podSet (their own tolerations plus their flavors'). A
    cluster taint stands for a taint on all of its nodes, so the pods'
    tolerations are the right test. ``PreferNoSchedule`` never filters.
DataLocality
    The member holds every dataset the workload *requires*
    (``kuota.dev/datasets``).
Hardware
    For every podSet, some node of the member carries all nodeLabels of the
    podSet's admitted flavors (the GPU model, the accelerator family). Free
    capacity is not looked at here; that is CapacityEstimate's job, so the
    explanation tells "no A100 nodes" from "A100 nodes full".
CapacityEstimate
    Every pod of the gang fits on the member's free nodes, node by node
    (:mod:`multicluster.capacity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from multicluster import capacity
from multicluster.framework import SUCCESS, Status, unschedulable
from multicluster.hints import CLUSTER_SELECTOR, DATASETS, describe
from multicluster.model import ClusterInfo
from multicluster.request import DispatchRequest
from placement.model import BLOCKING_EFFECTS

HEALTH: Final = "Health"
CLUSTER_AFFINITY: Final = "ClusterAffinity"
TAINT_TOLERATION: Final = "TaintToleration"
DATA_LOCALITY: Final = "DataLocality"
HARDWARE: Final = "Hardware"
CAPACITY_ESTIMATE: Final = "CapacityEstimate"


@dataclass(frozen=True, slots=True)
class Health:
    name: str = HEALTH

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        health = cluster.health
        if not health.active:
            why = ": ".join(part for part in (health.reason, health.message) if part)
            return unschedulable(f"member is not active{f' ({why})' if why else ''}")
        if health.last_seen is None:
            return unschedulable("member has never been seen")
        age = request.now - health.last_seen
        if age > request.stale_after:
            return unschedulable(f"member last seen {age:.0f}s ago (staleAfter is "
                                 f"{request.stale_after:.0f}s)")
        return SUCCESS


@dataclass(frozen=True, slots=True)
class ClusterAffinity:
    name: str = CLUSTER_AFFINITY

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        selector = request.hints.selector
        if selector is None:
            return SUCCESS
        labels = cluster.labels
        for requirement in selector:
            if not requirement.matches(labels):
                have = labels.get(requirement.key)
                seen = f"{requirement.key}={have}" if have is not None else \
                    f"no label {requirement.key}"
                return unschedulable(f"{CLUSTER_SELECTOR} requires {describe(requirement)}; "
                                     f"member has {seen}")
        return SUCCESS


@dataclass(frozen=True, slots=True)
class TaintToleration:
    name: str = TAINT_TOLERATION

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        for taint in cluster.taints:
            if taint.effect not in BLOCKING_EFFECTS:
                continue
            for group in request.groups:
                if not any(t.tolerates(taint) for t in group.pod.tolerations):
                    spelled = f"{taint.key}={taint.value}" if taint.value else taint.key
                    return unschedulable(f"member taint {spelled}:{taint.effect} is not "
                                         f"tolerated by podSet {group.pod_set}")
        return SUCCESS


@dataclass(frozen=True, slots=True)
class DataLocality:
    """Required datasets (the filter half of DataLocality)."""

    name: str = DATA_LOCALITY

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        missing = [d for d in request.hints.required_datasets if d not in cluster.datasets]
        if missing:
            return unschedulable(f"{DATASETS} requires {', '.join(missing)}, which the "
                                 "member does not hold")
        return SUCCESS


@dataclass(frozen=True, slots=True)
class Hardware:
    name: str = HARDWARE

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        for group in request.groups:
            if group.node_labels and not cluster.node_indices(group.node_labels):
                flavors = ", ".join(dict.fromkeys(group.flavors.values()))
                labels = ",".join(f"{k}={v}" for k, v in group.node_labels)
                return unschedulable(f"no node has the labels of flavor {flavors} ({labels}) "
                                     f"needed by podSet {group.pod_set}")
        return SUCCESS


@dataclass(frozen=True, slots=True)
class CapacityEstimate:
    name: str = CAPACITY_ESTIMATE

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        reason = capacity.shortfall(request, cluster)
        return SUCCESS if reason is None else unschedulable(reason)


#: The built-in filters in their running order.
BUILTIN: Final = (Health(), ClusterAffinity(), TaintToleration(), DataLocality(), Hardware(),
                  CapacityEstimate())
