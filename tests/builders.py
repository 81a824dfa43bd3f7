"""Fluent builders for the core's values, in the style of Kueue's test wrappers.

    cq = ClusterQueueBuilder("cq-a").cohort("co").flavor("default", {"cpu": 10}).obj()
    wl = WorkloadBuilder("train").pod_set(count=4, cpu=1).obj()

Amounts are given in whole units (``cpu=1`` is one CPU) or as quantity
strings (``memory="1Gi"``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from quota.config import (
    ClusterQueueConfig,
    CohortConfig,
    FlavorConfig,
    LocalQueueConfig,
    PreemptionConfig,
    ResourceGroupConfig,
)
from quota.resources import FlavorResource, parse_amount
from quota.tree import CellQuota
from quota.workload import NodeRequirement, PodSetInfo, WorkloadInfo


class MatchAll:
    def matches(self, labels: Any) -> bool:
        return True


class MatchLabels:
    def __init__(self, **labels: str) -> None:
        self.labels = labels

    def matches(self, labels: Any) -> bool:
        return all(labels.get(k) == v for k, v in self.labels.items())


def amount(value: int | str) -> int:
    return parse_amount(value)


class ClusterQueueBuilder:
    def __init__(self, name: str) -> None:
        self._cq = ClusterQueueConfig(name, namespace_selector=MatchAll())
        self._groups: list[tuple[list[str], list[str]]] = []
        self._quotas: dict[FlavorResource, CellQuota] = {}

    def cohort(self, name: str) -> ClusterQueueBuilder:
        self._cq = replace(self._cq, cohort=name)
        return self

    def flavor(self, name: str, nominal: dict[str, int | str], *, group: int | None = None,
               borrowing: dict[str, int | str] | None = None,
               lending: dict[str, int | str] | None = None) -> ClusterQueueBuilder:
        """Add a flavor with nominal quotas, in a new resource group unless ``group`` is given."""
        if group is None:
            self._groups.append((list(nominal), [name]))
        else:
            self._groups[group][1].append(name)
        for resource, value in nominal.items():
            b = (borrowing or {}).get(resource)
            lend = (lending or {}).get(resource)
            self._quotas[FlavorResource(name, resource)] = CellQuota(
                amount(value), None if b is None else amount(b),
                None if lend is None else amount(lend))
        return self

    def set(self, **fields: Any) -> ClusterQueueBuilder:
        self._cq = replace(self._cq, **fields)
        return self

    def preemption(self, **fields: Any) -> ClusterQueueBuilder:
        self._cq = replace(self._cq, preemption=PreemptionConfig(**fields))
        return self

    def obj(self) -> ClusterQueueConfig:
        groups = tuple(ResourceGroupConfig(tuple(r), tuple(f)) for r, f in self._groups)
        return replace(self._cq, resource_groups=groups, quotas=dict(self._quotas))


def cohort(name: str, parent: str | None = None, **nominal: int | str) -> CohortConfig:
    return CohortConfig(name, parent, {FlavorResource("default", r): CellQuota(amount(v))
                                       for r, v in nominal.items()})


def local_queue(cq: str, name: str = "lq", namespace: str = "ns") -> LocalQueueConfig:
    return LocalQueueConfig(namespace, name, cq)


def flavor(name: str, **fields: Any) -> FlavorConfig:
    return FlavorConfig(name, **fields)


class WorkloadBuilder:
    def __init__(self, name: str, namespace: str = "ns", queue: str = "lq") -> None:
        self._wl = WorkloadInfo(namespace, name, queue, ())

    def pod_set(self, name: str = "main", *, count: int = 1, min_count: int | None = None,
                node_selector: dict[str, str] | None = None, tolerations: tuple[Any, ...] = (),
                affinity: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] = (),
                **requests: int | str) -> WorkloadBuilder:
        """``affinity``: required node-affinity terms, each a tuple of (key, operator, values)."""
        resources = {("nvidia.com/gpu" if k == "gpu" else k): amount(v)
                     for k, v in requests.items()}
        terms = tuple(tuple(NodeRequirement(*r) for r in term) for term in affinity)
        ps = PodSetInfo(name, count, resources, min_count, node_selector or {},
                        tolerations=tolerations, affinity_terms=terms)
        self._wl = replace(self._wl, pod_sets=(*self._wl.pod_sets, ps))
        return self

    def priority(self, value: int) -> WorkloadBuilder:
        self._wl = replace(self._wl, priority=value)
        return self

    def created(self, at: float) -> WorkloadBuilder:
        self._wl = replace(self._wl, created=at)
        return self

    def max_execution(self, seconds: float, *, past: float = 0.0) -> WorkloadBuilder:
        """``spec.maximumExecutionTimeSeconds`` (and time admitted before, from status)."""
        self._wl = replace(self._wl, max_execution=seconds, past_execution=past)
        return self

    def gated(self, closed: bool = True) -> WorkloadBuilder:
        """A closed preemption gate (``spec.preemptionGates``, not Open in status)."""
        self._wl = replace(self._wl, preemption_gated=closed)
        return self

    def obj(self) -> WorkloadInfo:
        return replace(self._wl)


def gpu_pool(*, nominal: int = 2, lender: int = 2, borrowing: int | None = 2,
             reclaim: str = "Never", strategy: str = "BestEffortFIFO") -> list[Any]:
    """Two GPU teams in cohort ``co``: ``team-a`` (``nominal`` GPUs, may borrow
    ``borrowing`` more; LocalQueue ``ns/lq``) and ``team-b`` (``lender`` GPUs, reclaims its
    lent quota as ``reclaim`` says; LocalQueue ``ns/lq-b``); flavor ``a100`` covers
    ``nvidia.com/gpu`` and ``cpu``. Config objects for :meth:`Engine.apply_all`."""
    return [
        flavor("a100"), cohort("co"),
        ClusterQueueBuilder("team-a").cohort("co").set(queueing_strategy=strategy)
        .flavor("a100", {"nvidia.com/gpu": nominal, "cpu": 16},
                borrowing=None if borrowing is None else {"nvidia.com/gpu": borrowing}).obj(),
        ClusterQueueBuilder("team-b").cohort("co").preemption(reclaim_within_cohort=reclaim)
        .flavor("a100", {"nvidia.com/gpu": lender, "cpu": 16}).obj(),
        local_queue("team-a"), local_queue("team-b", "lq-b")]
