"""ClusterQueue: a pool of quota per flavor and resource, and the policies for using it.

A ClusterQueue is a leaf of the quota tree (see DESIGN §2). Its
``resourceGroups`` give nominal quota, borrowing and lending limits per
(flavor, resource); ``cohortName`` joins it to a Cohort whose members borrow
each other's idle quota. The remaining fields are policies the admission
cycle reads: queueing strategy, which namespaces may submit
(``namespaceSelector``: absent admits no namespace, ``{}`` every namespace),
flavor fungibility, preemption, admission checks, stop policy, fair sharing.

Defaults are concrete objects (``spec.flavor_fungibility``,
``spec.preemption``, ``spec.fair_sharing`` are never ``None``) so the core
reads policies without ``None`` checks. Whether the named flavors, cohort or
admission checks exist is not checked here: like Kueue, the core marks such a
ClusterQueue inactive instead of rejecting it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Self

from pydantic import Field, model_validator

from quota.api import unimplemented
from quota.api.base import ApiModel, Rules, StatusModel
from quota.api.meta import ApiObject, Condition, LabelSelector
from quota.api.names import SubdomainName
from quota.api.quotas import (
    FairSharing,
    FairSharingStatus,
    FlavorUsage,
    ResourceGroup,
    resource_groups_rules,
)

QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
FungibilityPolicy = Literal["MayStopSearch", "TryNextFlavor"]
FungibilityPreference = Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"]
ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
WithinClusterQueuePolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
BorrowWithinCohortPolicy = Literal["Never", "LowerPriority"]


class FlavorFungibility(ApiModel):
    """Whether to try the next flavor before borrowing or preempting in the current one."""

    when_can_borrow: FungibilityPolicy = Field(
        default="MayStopSearch",
        description="MayStopSearch: stop at the first flavor where the workload fits, even if it "
        "must borrow. TryNextFlavor: if it must borrow here, look for a later flavor "
        "where it fits without borrowing.",
    )
    when_can_preempt: FungibilityPolicy = Field(
        default="TryNextFlavor",
        description="MayStopSearch: stop at the first flavor where the workload fits by "
        "preempting. TryNextFlavor: if it must preempt here, look at later flavors "
        "first.",
    )
    preference: FungibilityPreference | None = Field(
        default=None,
        description="When every flavor needs borrowing or preemption: BorrowingOverPreemption "
        "prefers borrowing, PreemptionOverBorrowing prefers preempting. Only with "
        "both policies set to TryNextFlavor.",
    )

    def rules(self) -> list[tuple[str, str]]:
        """Kueue's rule: a preference only when both policies are TryNextFlavor."""
        if self.preference is None or (
            self.when_can_borrow == "TryNextFlavor" and self.when_can_preempt == "TryNextFlavor"
        ):
            return []
        return [
            (
                "preference",
                f"{self.preference} requires whenCanBorrow and whenCanPreempt to be TryNextFlavor",
            )
        ]


class BorrowWithinCohort(ApiModel):
    """Preemption in other queues of the cohort by a workload that needs to borrow."""

    policy: BorrowWithinCohortPolicy = Field(
        default="Never",
        description="Never: a borrowing workload never preempts in other queues. LowerPriority: "
        "it may preempt lower-priority workloads there.",
    )
    max_priority_threshold: int | None = Field(
        default=None,
        ge=-(2**31),
        le=2**31 - 1,
        description="Only workloads with priority at most this value may be preempted by a "
        "borrowing workload. Absent: any priority the policy allows.",
    )


class ClusterQueuePreemption(ApiModel):
    """When a pending workload may preempt admitted ones to fit."""

    reclaim_within_cohort: ReclaimPolicy = Field(
        default="Never",
        description="Whether a workload that fits in its queue's nominal quota may preempt "
        "workloads of other queues in the cohort that borrow it. Never, "
        "LowerPriority (only lower-priority ones) or Any.",
    )
    borrow_within_cohort: BorrowWithinCohort = Field(
        default_factory=BorrowWithinCohort,
        description="Whether a workload that needs to borrow may preempt in other queues of the "
        "cohort. Requires reclaimWithinCohort other than Never.",
    )
    within_cluster_queue: WithinClusterQueuePolicy = Field(
        default="Never",
        description="Whether a workload that does not fit in the nominal quota may preempt "
        "workloads of this queue. Never, LowerPriority, or LowerOrNewerEqualPriority "
        "(also equal priority admitted later).",
    )

    def rules(self) -> list[tuple[str, str]]:
        """Kueue's rule: preempting while borrowing needs reclaiming to be allowed."""
        if self.reclaim_within_cohort == "Never" and self.borrow_within_cohort.policy != "Never":
            return [
                (
                    "borrowWithinCohort.policy",
                    f"must be Never while reclaimWithinCohort is Never "
                    f"(got {self.borrow_within_cohort.policy})",
                )
            ]
        return []


class AdmissionCheckStrategyRule(ApiModel):
    """An admission check and the flavors it applies to."""

    name: SubdomainName = Field(description="Name of an AdmissionCheck.")
    on_flavors: tuple[SubdomainName, ...] = Field(
        default=(),
        max_length=64,
        description="Run the check only for workloads assigned one of these flavors. Empty: "
        "for every workload of the queue.",
    )


class AdmissionChecksStrategy(ApiModel):
    """Admission checks every workload of the queue must pass before it is admitted."""

    admission_checks: tuple[AdmissionCheckStrategyRule, ...] = Field(
        min_length=1, max_length=64, description="The checks, each optionally limited to flavors."
    )

    def rules(self, flavors: set[str]) -> list[tuple[str, str]]:
        """Names unique; ``onFlavors`` only names flavors of the queue."""
        problems: list[tuple[str, str]] = []
        seen: set[str] = set()
        for i, check in enumerate(self.admission_checks):
            if check.name in seen:
                problems.append(
                    (f"admissionChecks[{i}].name", f"duplicate admission check {check.name}")
                )
            seen.add(check.name)
            for j, flavor in enumerate(check.on_flavors):
                if flavor not in flavors:
                    problems.append(
                        (
                            f"admissionChecks[{i}].onFlavors[{j}]",
                            f"flavor {flavor} is not in this queue's resourceGroups "
                            f"({', '.join(sorted(flavors)) or 'none'})",
                        )
                    )
        return problems


class AdmissionScope(ApiModel):
    """Admission fair sharing between the LocalQueues of this ClusterQueue."""

    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"] = Field(
        description="UsageBasedAdmissionFairSharing orders workloads by their LocalQueue's "
        "recent usage; NoAdmissionFairSharing turns it off."
    )


class ConcurrentAdmissionConstraints(ApiModel):
    """Limits on where a workload may move under concurrent admission."""

    last_acceptable_flavor_name: SubdomainName | None = Field(
        default=None, description="The last flavor a workload may move to."
    )


class ConcurrentAdmissionMigration(ApiModel):
    """How workloads move between flavors under concurrent admission."""

    mode: Literal["TryPreferredFlavors", "RetainFirstAdmission"] | None = Field(
        default=None, description="TryPreferredFlavors or RetainFirstAdmission."
    )
    constraints: ConcurrentAdmissionConstraints | None = Field(
        default=None, description="Limits on the move."
    )


class ConcurrentAdmissionPolicy(ApiModel):
    """Kueue's concurrent admission (a workload tried in several flavors at once). Not
    implemented by kuota: refused."""

    migration: ConcurrentAdmissionMigration | None = Field(
        default=None, description="How workloads move between flavors."
    )


class ClusterQueueSpec(ApiModel):
    """Quota and policies of a ClusterQueue."""

    resource_groups: tuple[ResourceGroup, ...] = Field(
        default=(),
        max_length=16,
        description="Quota per flavor and resource, in groups of resources assigned together. "
        "Up to 16 groups and 256 flavors in total.",
    )
    cohort_name: SubdomainName | None = Field(
        default=None,
        description="Cohort this queue belongs to. Members of a cohort borrow each other's "
        "unused quota. Absent: this queue neither borrows nor lends.",
    )
    queueing_strategy: QueueingStrategy = Field(
        default="BestEffortFIFO",
        description="Order of pending workloads (by priority, then creation time). StrictFIFO: "
        "the head blocks newer workloads until it is admitted. BestEffortFIFO: "
        "workloads that cannot be admitted step aside for newer ones that fit.",
    )
    namespace_selector: LabelSelector | None = Field(
        default=None,
        description="Namespaces whose workloads may use this queue. Absent: none. {}: all.",
    )
    flavor_fungibility: FlavorFungibility = Field(
        default_factory=FlavorFungibility,
        description="Whether to try the next flavor before borrowing or preempting.",
    )
    preemption: ClusterQueuePreemption = Field(
        default_factory=ClusterQueuePreemption, description="Preemption policies."
    )
    admission_checks_strategy: AdmissionChecksStrategy | None = Field(
        default=None, description="Admission checks workloads must pass before admission."
    )
    stop_policy: StopPolicy = Field(
        default="None",
        description="None: admit normally. Hold: admit nothing new; admitted workloads run on. "
        "HoldAndDrain: admit nothing new and evict admitted workloads.",
    )
    fair_sharing: FairSharing = Field(
        default_factory=FairSharing,
        description="Fair-sharing weight, used when fair sharing is enabled.",
    )
    admission_scope: AdmissionScope | None = Field(
        default=None,
        description="Admission fair sharing between LocalQueues. kuota implements only "
        "NoAdmissionFairSharing (the default); UsageBasedAdmissionFairSharing is refused.",
    )
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = Field(
        default=None, description="Kueue's concurrent admission: not implemented, refused."
    )

    @property
    def admission_checks(self) -> tuple[str, ...]:
        """Names of every admission check of the queue (Kueue v1beta1's ``admissionChecks``)."""
        if self.admission_checks_strategy is None:
            return ()
        return tuple(c.name for c in self.admission_checks_strategy.admission_checks)

    def checks_for_flavors(self, flavors: Iterable[str]) -> tuple[str, ...]:
        """Admission checks that apply to a workload assigned ``flavors``."""
        if self.admission_checks_strategy is None:
            return ()
        assigned = set(flavors)
        return tuple(
            c.name
            for c in self.admission_checks_strategy.admission_checks
            if not c.on_flavors or assigned.intersection(c.on_flavors)
        )

    def flavor_names(self) -> tuple[str, ...]:
        """Every flavor of every resource group, in order."""
        return tuple(f.name for group in self.resource_groups for f in group.flavors)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        rules.extend(
            "resourceGroups",
            resource_groups_rules(
                self.resource_groups,
                has_parent=bool(self.cohort_name),
                parent_field="spec.cohortName",
                check_lending=True,
            ),
        )
        rules.extend("flavorFungibility", self.flavor_fungibility.rules())
        rules.extend("preemption", self.preemption.rules())
        if self.admission_scope is not None and \
                self.admission_scope.admission_mode == "UsageBasedAdmissionFairSharing":
            unimplemented.refuse(rules, "admissionScope.admissionMode",
                                 self.admission_scope.admission_mode,
                                 unimplemented.ADMISSION_FAIR_SHARING)
        unimplemented.refuse(rules, "concurrentAdmissionPolicy",
                             self.concurrent_admission_policy,
                             unimplemented.CONCURRENT_ADMISSION)
        if self.admission_checks_strategy is not None:
            rules.extend(
                "admissionChecksStrategy",
                self.admission_checks_strategy.rules(set(self.flavor_names())),
            )
        rules.raise_if_any()
        return self


class ClusterQueueStatus(StatusModel):
    """Observed state of a ClusterQueue."""

    conditions: tuple[Condition, ...] = Field(
        default=(), max_length=16, description="Conditions, notably Active."
    )
    flavors_reservation: tuple[FlavorUsage, ...] = Field(
        default=(), description="Quota reserved per flavor and resource by workloads in this queue."
    )
    flavors_usage: tuple[FlavorUsage, ...] = Field(
        default=(), description="Quota used per flavor and resource by admitted workloads."
    )
    pending_workloads: int = Field(default=0, description="Workloads waiting for admission.")
    reserving_workloads: int = Field(
        default=0, description="Workloads holding a quota reservation."
    )
    admitted_workloads: int = Field(default=0, description="Admitted workloads not yet finished.")
    fair_sharing: FairSharingStatus | None = Field(
        default=None, description="Fair-sharing state, when fair sharing is enabled."
    )


class ClusterQueue(ApiObject):
    """A cluster-wide pool of quota that LocalQueues submit workloads to."""

    plural = "clusterqueues"
    short_names = ("cq",)

    kind: Literal["ClusterQueue"] = Field(default="ClusterQueue", description="ClusterQueue.")
    spec: ClusterQueueSpec = Field(
        default_factory=ClusterQueueSpec, description="Quota and policies."
    )
    status: ClusterQueueStatus = Field(
        default_factory=ClusterQueueStatus, description="Observed state, written by kuota."
    )
