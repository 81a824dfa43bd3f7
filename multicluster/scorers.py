"""The score plugins: how good each feasible member is, 0..100, higher better.

Cost (default weight 1)
    Raw: what the gang costs per hour on the member — for every resource the
    pods request, ``count * request / per * price`` at the member's rate for
    the admitted flavor (or its flavor-less rate; unpriced resources are
    free). Normalised cheapest-best: the cheapest member gets 100, one twice
    as expensive 50.
LoadBalance (default weight 1)
    kube-scheduler's LeastAllocated at member scale: over the nodes of the
    admitted flavors, per resource the gang requests, ``(allocatable -
    requested - gang) * 100 // allocatable``, averaged. Emptier members score
    higher, so load spreads.
Binpack (default weight 0, off)
    MostAllocated, the mirror image: ``min(requested + gang, allocatable) *
    100 // allocatable``, averaged. Fuller members score higher, so whole
    members stay free (and can be scaled down). Give it a weight instead of
    LoadBalance's, not with it.
DataLocality (default weight 1)
    The percentage of the workload's *preferred* datasets the member holds.

LoadBalance, Binpack and DataLocality are already percentages and are only
rounded and clamped when normalised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from multicluster.framework import cheapest_best, keep_range
from multicluster.model import ClusterInfo
from multicluster.request import DispatchRequest
from placement.model import PODS
from placement.scoring import least_requested_score, most_requested_score

COST: Final = "Cost"
LOAD_BALANCE: Final = "LoadBalance"
BINPACK: Final = "Binpack"
DATA_LOCALITY: Final = "DataLocality"

#: What LoadBalance and Binpack look at when the pods request nothing.
_DEFAULT_RESOURCES: Final = ("cpu", "memory")


@dataclass(frozen=True, slots=True)
class Cost:
    name: str = COST
    default_weight: int = 1

    def score(self, request: DispatchRequest, cluster: ClusterInfo) -> float:
        table = cluster.cost
        total = 0.0
        for group in request.groups:
            total += group.count * table.hourly(group.pod.requests, group.flavors)
        return total

    def normalize(self, raw: Sequence[float]) -> list[int]:
        return cheapest_best(raw)


def _allocation_score(request: DispatchRequest, cluster: ClusterInfo,
                      formula: Callable[[int, int], int]) -> float:
    summary = cluster.pool(request.label_sets)
    resources = [r for r, v in request.total.items() if v > 0 and r != PODS] or \
        list(_DEFAULT_RESOURCES)
    scores = [formula(summary.requested.get(r, 0) + request.total.get(r, 0),
                      summary.allocatable.get(r, 0))
              for r in resources if summary.allocatable.get(r, 0) > 0]
    return sum(scores) / len(scores) if scores else 0.0


@dataclass(frozen=True, slots=True)
class LoadBalance:
    name: str = LOAD_BALANCE
    default_weight: int = 1

    def score(self, request: DispatchRequest, cluster: ClusterInfo) -> float:
        return _allocation_score(request, cluster, least_requested_score)

    def normalize(self, raw: Sequence[float]) -> list[int]:
        return keep_range(raw)


@dataclass(frozen=True, slots=True)
class Binpack:
    name: str = BINPACK
    default_weight: int = 0

    def score(self, request: DispatchRequest, cluster: ClusterInfo) -> float:
        return _allocation_score(request, cluster, most_requested_score)

    def normalize(self, raw: Sequence[float]) -> list[int]:
        return keep_range(raw)


@dataclass(frozen=True, slots=True)
class DataLocality:
    """Preferred datasets (the score half of DataLocality)."""

    name: str = DATA_LOCALITY
    default_weight: int = 1

    def score(self, request: DispatchRequest, cluster: ClusterInfo) -> float:
        preferred = request.hints.preferred_datasets
        if not preferred:
            return 0.0
        held = sum(1 for d in preferred if d in cluster.datasets)
        return 100.0 * held / len(preferred)

    def normalize(self, raw: Sequence[float]) -> list[int]:
        return keep_range(raw)


#: The built-in score plugins.
BUILTIN: Final = (Cost(), LoadBalance(), Binpack(), DataLocality())
