"""The core's own view of the queue objects: plain frozen values, amounts parsed.

The API models in :mod:`quota.api` describe what users write; these configs
hold what the scheduler reads on every decision, with quantities already
turned into milli-unit integers and defaults already applied, so the hot path
never parses or checks for ``None``. :mod:`quota.convert` builds them from the
API objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from quota.resources import MILLI, FlavorResource
from quota.tree import CellQuota


class Selector(Protocol):
    def matches(self, labels: Mapping[str, str]) -> bool: ...


@dataclass(frozen=True, slots=True)
class FlavorConfig:
    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Any, ...] = ()
    tolerations: tuple[Any, ...] = ()
    topology_name: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceGroupConfig:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PreemptionConfig:
    within_cluster_queue: str = "Never"  # Never | LowerPriority | LowerOrNewerEqualPriority
    reclaim_within_cohort: str = "Never"  # Never | LowerPriority | Any
    borrow_within_cohort: str = "Never"  # Never | LowerPriority
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueueConfig:
    name: str
    cohort: str | None = None
    resource_groups: tuple[ResourceGroupConfig, ...] = ()
    quotas: Mapping[FlavorResource, CellQuota] = field(default_factory=dict)
    queueing_strategy: str = "BestEffortFIFO"
    #: ``None`` selects no namespace, as in Kueue; an empty selector selects all.
    namespace_selector: Selector | None = None
    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    preference: str | None = None
    preemption: PreemptionConfig = PreemptionConfig()
    stop_policy: str = "None"
    fair_weight: int = MILLI
    #: AdmissionCheck names, each with the flavors it applies to (empty = all).
    admission_checks: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def group_for(self, resource: str) -> ResourceGroupConfig | None:
        for group in self.resource_groups:
            if resource in group.covered:
                return group
        return None

    def flavor_names(self) -> set[str]:
        return {name for group in self.resource_groups for name in group.flavors}


@dataclass(frozen=True, slots=True)
class CohortConfig:
    name: str
    parent: str | None = None
    quotas: Mapping[FlavorResource, CellQuota] = field(default_factory=dict)
    fair_weight: int = MILLI


@dataclass(frozen=True, slots=True)
class LocalQueueConfig:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = "None"

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class AdmissionCheckConfig:
    """An AdmissionCheck: a named gate run by the controller ``controller_name``."""

    name: str
    controller_name: str
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RequeuingStrategy:
    """How workloads evicted for pod readiness wait before their next try (Kueue's)."""

    timestamp: str = "Eviction"  # Eviction | Creation: the FIFO key after requeue
    backoff_limit_count: int | None = None  # None = requeue forever
    backoff_base_seconds: float = 60.0
    backoff_max_seconds: float = 3600.0


@dataclass(frozen=True, slots=True)
class PodsReadyConfig:
    """``waitForPodsReady``: evict admitted workloads whose pods are not ready in time."""

    timeout: float = 300.0
    block_admission: bool = False
    requeuing: RequeuingStrategy = RequeuingStrategy()


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Deployment-wide settings (Kueue's Configuration)."""

    fair_sharing: bool = False
    wait_for_pods_ready: PodsReadyConfig | None = None
    #: Relative jitter applied to requeue backoff delays.
    backoff_jitter: float = 0.1
