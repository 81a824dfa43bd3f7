"""A Workload's status: its admission, topology assignment, checks and history.

``status.admission`` is what the admission cycle decides: the ClusterQueue and,
per podSet, the flavor of each resource, the pod count, the total usage, and
(for topology-aware placement) the pods per topology domain. The topology
assignment uses Kueue v1beta2's compact encoding — slices of domains with
level values that may share a prefix or suffix, and pod counts that may be
one number for all — which :meth:`TopologyAssignment.domains` expands and
:meth:`TopologyAssignment.from_domains` builds.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Literal

from pydantic import Field

from quota.api.base import ApiModel, StatusModel
from quota.api.meta import Condition, Toleration, find_condition
from quota.api.quantity import Quantity

CheckState = Literal["Pending", "Ready", "Retry", "Rejected"]


class TopologyAssignmentSliceLevelIndividualValues(ApiModel):
    """Per-domain values of one level, with a common prefix and suffix factored out."""

    prefix: str | None = Field(default=None, description="Common prefix of every value.")
    suffix: str | None = Field(default=None, description="Common suffix of every value.")
    roots: tuple[str, ...] = Field(
        default=(), description="Value of each domain, minus prefix and suffix."
    )


class TopologyAssignmentSliceLevelValues(ApiModel):
    """Values of one level for the domains of a slice."""

    universal: str | None = Field(default=None, description="The value shared by every domain.")
    individual: TopologyAssignmentSliceLevelIndividualValues | None = Field(
        default=None, description="One value per domain."
    )


class TopologyAssignmentSlicePodCounts(ApiModel):
    """Pod counts of the domains of a slice."""

    universal: int | None = Field(
        default=None, ge=0, description="The count shared by every domain."
    )
    individual: tuple[int, ...] = Field(default=(), description="One count per domain.")


class TopologyAssignmentSlice(ApiModel):
    """A run of domains with their level values and pod counts."""

    domain_count: int = Field(ge=1, description="Number of domains in this slice.")
    values_per_level: tuple[TopologyAssignmentSliceLevelValues, ...] = Field(
        description="Values per level, in the order of levels."
    )
    pod_counts: TopologyAssignmentSlicePodCounts = Field(description="Pods per domain.")


class TopologyAssignment(ApiModel):
    """Pods per topology domain (Kueue v1beta2's compact encoding)."""

    levels: tuple[str, ...] = Field(description="Node labels identifying a domain.")
    slices: tuple[TopologyAssignmentSlice, ...] = Field(
        default=(), description="Domains and counts."
    )

    def domains(self) -> Iterator[tuple[tuple[str, ...], int]]:
        """Each domain's label values (one per level) and its pod count."""
        for piece in self.slices:
            columns: list[list[str]] = []
            for level in piece.values_per_level:
                if level.universal is not None:
                    columns.append([level.universal] * piece.domain_count)
                else:
                    ind = level.individual or TopologyAssignmentSliceLevelIndividualValues()
                    columns.append(
                        [f"{ind.prefix or ''}{root}{ind.suffix or ''}" for root in ind.roots]
                    )
            counts = piece.pod_counts
            pods = (
                [counts.universal] * piece.domain_count
                if counts.universal is not None
                else list(counts.individual)
            )
            for index in range(piece.domain_count):
                yield tuple(column[index] for column in columns), pods[index]

    @classmethod
    def from_domains(
        cls, levels: tuple[str, ...] | list[str], domains: list[tuple[tuple[str, ...], int]]
    ) -> TopologyAssignment:
        """Encode ``[(values, count), ...]`` as one slice with individual values."""
        if not domains:
            return cls(levels=tuple(levels))
        per_level = tuple(
            TopologyAssignmentSliceLevelValues(
                individual=TopologyAssignmentSliceLevelIndividualValues(
                    roots=tuple(values[i] for values, _ in domains)
                )
            )
            for i in range(len(levels))
        )
        piece = TopologyAssignmentSlice(
            domain_count=len(domains),
            values_per_level=per_level,
            pod_counts=TopologyAssignmentSlicePodCounts(individual=tuple(c for _, c in domains)),
        )
        return cls(levels=tuple(levels), slices=(piece,))


class PodSetAssignment(StatusModel):
    """Admission of one podSet: flavors, count and usage."""

    name: str = Field(default="main", description="Name of the podSet.")
    flavors: dict[str, str] = Field(
        default_factory=dict, description="Flavor assigned to each resource."
    )
    resource_usage: dict[str, Quantity] = Field(
        default_factory=dict, description="Total usage of all admitted pods, per resource."
    )
    count: int | None = Field(default=None, ge=0, description="Pods admitted.")
    topology_assignment: TopologyAssignment | None = Field(
        default=None, description="Pods per topology domain, for topology-aware placement."
    )
    delayed_topology_request: Literal["Pending", "Ready"] | None = Field(
        default=None, description="State of a topology assignment computed after admission."
    )


class Admission(StatusModel):
    """Where and how a workload was admitted."""

    cluster_queue: str = Field(description="ClusterQueue that reserved the quota.")
    pod_set_assignments: tuple[PodSetAssignment, ...] = Field(
        default=(), max_length=18, description="One entry per podSet."
    )


class RequeueState(StatusModel):
    """Backoff state of a requeued workload."""

    count: int | None = Field(default=None, description="Times the workload was requeued.")
    requeue_at: datetime | None = Field(default=None, description="When it may be admitted again.")


class ReclaimablePod(StatusModel):
    """Pods of a podSet that finished and whose quota can be released."""

    name: str = Field(description="PodSet name.")
    count: int = Field(ge=0, description="Number of such pods.")


class PodSetUpdate(StatusModel):
    """Changes an admission check asks for on a podSet's pods."""

    name: str = Field(description="PodSet name.")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels to add.")
    annotations: dict[str, str] = Field(default_factory=dict, description="Annotations to add.")
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels to require."
    )
    tolerations: tuple[Toleration, ...] = Field(default=(), description="Tolerations to add.")


class AdmissionCheckState(StatusModel):
    """State of one admission check for this workload."""

    name: str = Field(description="AdmissionCheck name.")
    state: CheckState = Field(
        default="Pending",
        description="Pending, Ready (passed), Retry (release quota and try again) or Rejected.",
    )
    last_transition_time: datetime | None = Field(default=None, description="When state changed.")
    message: str = Field(default="", description="Details from the check's controller.")
    requeue_after_seconds: int | None = Field(default=None, description="Delay before a retry.")
    retry_count: int | None = Field(default=None, description="Retries so far.")
    pod_set_updates: tuple[PodSetUpdate, ...] = Field(
        default=(), description="Changes to apply to the pods once admitted."
    )


class PodSetRequest(StatusModel):
    """Total requests of a podSet."""

    name: str = Field(description="PodSet name.")
    resources: dict[str, Quantity] = Field(
        default_factory=dict, description="Requests per resource."
    )


class EvictionStats(StatusModel):
    """How often the workload was evicted for one reason."""

    reason: str = Field(description="Eviction reason.")
    underlying_cause: str = Field(default="", description="More specific cause.")
    count: int = Field(default=0, description="Evictions.")


class SchedulingStats(StatusModel):
    """Scheduling history."""

    evictions: tuple[EvictionStats, ...] = Field(default=(), description="Evictions by reason.")


class UnhealthyNode(StatusModel):
    """A node of the workload that failed."""

    name: str = Field(description="Node name.")


class DispatchPluginScore(StatusModel):
    """One score plugin's figure for one member cluster."""

    plugin: str = Field(description="Score plugin name.")
    raw: float = Field(description="The plugin's figure before normalisation (cost, free share).")
    score: int = Field(ge=0, le=100, description="Normalised score, 0 to 100.")
    weight: int = Field(ge=0, description="Weight of the plugin in the MultiClusterConfig.")


class DispatchClusterResult(StatusModel):
    """How one member cluster fared: scored, or filtered out and why."""

    name: str = Field(description="MemberCluster name.")
    total: int = Field(default=0, description="Weighted sum of the scores (feasible clusters).")
    scores: tuple[DispatchPluginScore, ...] = Field(
        default=(), description="Each score plugin's figure (feasible clusters)."
    )
    filtered_by: str | None = Field(
        default=None, description="Filter plugin that rejected the cluster (unset if feasible)."
    )
    reason: str = Field(default="", description="Why the filter rejected the cluster.")


class DispatchDecision(StatusModel):
    """The multi-cluster dispatch decision, explained (shown by ``kuota why``)."""

    workload: str = Field(default="", description="Namespace/name of the workload decided for.")
    cluster: str | None = Field(
        default=None, description="Chosen member cluster; unset when none was feasible."
    )
    config: str = Field(default="", description="MultiClusterConfig the decision used.")
    max_total: int = Field(default=0, description="Highest possible weighted total.")
    clusters: tuple[DispatchClusterResult, ...] = Field(
        default=(), description="Every member considered, best first, then the filtered ones."
    )


class PreemptionGateState(StatusModel):
    """Whether one of ``spec.preemptionGates`` is open."""

    name: str = Field(description="Gate name.")
    position: Literal["Open", "Closed"] = Field(
        default="Closed", description="Open lets the workload preempt; Closed holds it back."
    )
    last_transition_time: datetime | None = Field(
        default=None, description="When the position last changed."
    )


class WorkloadStatus(StatusModel):
    """Observed state of a Workload."""

    conditions: tuple[Condition, ...] = Field(
        default=(),
        max_length=16,
        description="QuotaReserved, Admitted, Finished, Evicted, Preempted, Requeued, PodsReady.",
    )
    admission: Admission | None = Field(
        default=None, description="The admission, once quota is reserved."
    )
    requeue_state: RequeueState | None = Field(default=None, description="Backoff state.")
    reclaimable_pods: tuple[ReclaimablePod, ...] = Field(
        default=(), description="Finished pods whose quota can be released."
    )
    admission_checks: tuple[AdmissionCheckState, ...] = Field(
        default=(), max_length=8, description="State of each admission check."
    )
    resource_requests: tuple[PodSetRequest, ...] = Field(
        default=(), description="Requests per podSet."
    )
    accumulated_past_execution_time_seconds: int | None = Field(
        default=None,
        description="Seconds admitted in earlier admissions (counted against "
        "spec.maximumExecutionTimeSeconds).",
    )
    preemption_gates: tuple[PreemptionGateState, ...] = Field(
        default=(), max_length=8, description="Positions of spec.preemptionGates."
    )
    scheduling_stats: SchedulingStats | None = Field(
        default=None, description="Scheduling history."
    )
    nominated_cluster_names: tuple[str, ...] = Field(
        default=(), description="Member clusters being considered."
    )
    cluster_name: str | None = Field(
        default=None, description="Member cluster the workload runs in."
    )
    unhealthy_nodes: tuple[UnhealthyNode, ...] = Field(default=(), description="Failed nodes.")
    dispatch: DispatchDecision | None = Field(
        default=None,
        description="kuota: the multi-cluster dispatch decision with every member's scores "
        "and filter reasons.",
    )

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def is_true(self, type_: str) -> bool:
        condition = self.condition(type_)
        return condition is not None and condition.is_true
