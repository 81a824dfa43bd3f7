"""Workload: the unit of admission — a gang of podSets admitted whole or not at all.

A workload has one or more podSets, each ``count`` identical pods described by
a pod template. It waits in the ClusterQueue behind its LocalQueue
(``queueName``) until every podSet fits at once, then ``status.admission``
records the ClusterQueue and, per podSet, the flavor chosen for each resource,
the pod count, and the total usage. With ``minCount`` (on at most one
podSet) a gang may be admitted smaller.

Priority: ``spec.priority`` is the number the queue orders by;
``priorityClassRef`` says where it came from (a WorkloadPriorityClass or a
pod PriorityClass). Kueue v1beta1's ``priorityClassName`` and
``priorityClassSource`` are read-only properties here, and files in v1beta1
are converted on read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Final, Literal, Self

from pydantic import Field, model_validator

from quota.api import unimplemented
from quota.api.base import ApiModel, Rules, join_path
from quota.api.meta import ApiObject, Toleration
from quota.api.names import LabelName, SubdomainName
from quota.api.podtemplate import (
    Container,
    PodSpec,
    PodTemplateSpec,
    ResourceRequirements,
    pod_requests,
)
from quota.api.priorityclass import INT32_MAX, INT32_MIN
from quota.api.quantity import amount
from quota.api.workload_status import WorkloadStatus
from quota.resources import ResourceVector, scale

#: ``priorityClassSource`` values of Kueue v1beta1, kept for the read-only property.
WORKLOAD_PRIORITY_CLASS_SOURCE: Final = "kuota.dev/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE: Final = "scheduling.k8s.io/priorityclass"
#: Resource name Kueue reserves for pod counting.
PODS_RESOURCE: Final = "pods"


class PriorityClassRef(ApiModel):
    """The priority class a workload's priority came from."""

    group: Literal["kuota.dev", "scheduling.k8s.io"] = Field(
        description="kuota.dev for a WorkloadPriorityClass, scheduling.k8s.io for a pod "
        "PriorityClass."
    )
    kind: Literal["WorkloadPriorityClass", "PriorityClass"] = Field(
        description="WorkloadPriorityClass or PriorityClass, matching the group."
    )
    name: SubdomainName = Field(description="Name of the priority class.")

    @classmethod
    def workload(cls, name: str) -> PriorityClassRef:
        return cls(group="kuota.dev", kind="WorkloadPriorityClass", name=name)

    @classmethod
    def pod(cls, name: str) -> PriorityClassRef:
        return cls(group="scheduling.k8s.io", kind="PriorityClass", name=name)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        want = "WorkloadPriorityClass" if self.group == "kuota.dev" else "PriorityClass"
        rules.check(self.kind == want, "kind", f"must be {want} for group {self.group}")
        rules.raise_if_any()
        return self


class PodsetSliceRequiredTopologyConstraint(ApiModel):
    """One layer of slice topology constraints."""

    topology: str = Field(min_length=1, max_length=63, description="Topology level of the layer.")
    size: int = Field(ge=1, description="Pods per group at this layer.")


class PodSetTopologyRequest(ApiModel):
    """Where the pods of a podSet should be placed relative to each other."""

    required: str | None = Field(
        default=None,
        max_length=63,
        description="Topology level (node label) within one domain of which all pods must run.",
    )
    preferred: str | None = Field(
        default=None,
        max_length=63,
        description="Topology level within one domain of which the pods should run if possible; "
        "otherwise as few domains as possible.",
    )
    unconstrained: bool | None = Field(
        default=None, description="Place anywhere there is capacity, with no compactness goal."
    )
    pod_index_label: str | None = Field(
        default=None, max_length=317, description="Label holding each pod's index."
    )
    sub_group_index_label: str | None = Field(
        default=None, max_length=317, description="Label holding the index of a replicated group."
    )
    sub_group_count: int | None = Field(
        default=None, ge=0, description="Number of replicated groups."
    )
    pod_set_group_name: str | None = Field(
        default=None,
        max_length=256,
        description="PodSets with the same group name get the same flavor.",
    )
    pod_set_slice_required_topology: str | None = Field(
        default=None,
        max_length=63,
        description="Topology level within one domain of which each slice of pods must run.",
    )
    pod_set_slice_size: int | None = Field(default=None, ge=1, description="Pods per slice.")
    podset_slice_required_topology_constraints: tuple[
        PodsetSliceRequiredTopologyConstraint, ...
    ] = Field(default=(), max_length=3, description="Layered slice constraints, widest first.")

    def rules(self) -> list[tuple[str, str]]:
        """``required`` and ``preferred`` are implemented; the rest is refused by name."""
        rules = Rules()
        unimplemented.refuse(rules, "unconstrained", self.unconstrained,
                             unimplemented.UNCONSTRAINED_TOPOLOGY)
        for name, given in (
            ("podIndexLabel", self.pod_index_label),
            ("subGroupIndexLabel", self.sub_group_index_label),
            ("subGroupCount", self.sub_group_count),
            ("podSetGroupName", self.pod_set_group_name),
            ("podSetSliceRequiredTopology", self.pod_set_slice_required_topology),
            ("podSetSliceSize", self.pod_set_slice_size),
            ("podsetSliceRequiredTopologyConstraints",
             self.podset_slice_required_topology_constraints or None),
        ):
            unimplemented.refuse(rules, name, given, unimplemented.TOPOLOGY_SLICES)
        return rules.problems


class PodSet(ApiModel):
    """A group of identical pods: a template and a count."""

    name: LabelName = Field(default="main", description="PodSet name, unique in the workload.")
    template: PodTemplateSpec = Field(
        description="Pod template. Requests (limits when requests are absent) of containers, "
        "init containers and overhead give the per-pod request; nodeSelector, "
        "required node affinity and tolerations limit the flavors it can get."
    )
    count: int = Field(default=1, ge=0, le=INT32_MAX, description="Number of pods.")
    min_count: int | None = Field(
        default=None,
        ge=1,
        le=INT32_MAX,
        description="Fewest pods acceptable if the whole count does not fit (partial "
        "admission). At most one podSet of a workload may set it.",
    )
    topology_request: PodSetTopologyRequest | None = Field(
        default=None, description="Topology constraints for placing the pods."
    )

    def rules(self) -> list[tuple[str, str]]:
        """minCount ≤ count; the ``pods`` resource is reserved."""
        rules = Rules()
        if self.min_count is not None:
            rules.check(
                self.min_count <= self.count,
                "minCount",
                f"{self.min_count} must not exceed count {self.count}",
            )
        spec = self.template.spec
        for kind, containers in (
            ("containers", spec.containers),
            ("initContainers", spec.init_containers),
        ):
            for i, container in enumerate(containers):
                for part in ("requests", "limits"):
                    if PODS_RESOURCE in getattr(container.resources, part):
                        rules.add(
                            join_path(f"template.spec.{kind}[{i}].resources.{part}", PODS_RESOURCE),
                            "the resource name 'pods' is reserved for kuota's own use",
                        )
        if self.topology_request is not None:
            rules.extend("topologyRequest", self.topology_request.rules())
        return rules.problems

    @cached_property
    def _requests(self) -> ResourceVector:
        return pod_requests(self.template.spec)

    def pod_requests(self) -> ResourceVector:
        """Effective request of one pod, in milli-units (see :mod:`quota.api.podtemplate`)."""
        return dict(self._requests)

    def zero_requests(self) -> tuple[str, ...]:
        """The resources a pod asks for at zero (sorted): they take no quota, but Kueue
        still gives each one its ClusterQueue covers a flavor in the admission."""
        return tuple(sorted(name for name, value in
                            pod_requests(self.template.spec, keep_zero=True).items()
                            if not value))

    def total_requests(self, count: int | None = None) -> ResourceVector:
        """Requests of ``count`` pods (default: the podSet's count)."""
        return scale(self._requests, self.count if count is None else count)

    @property
    def node_selector(self) -> dict[str, str]:
        return self.template.spec.node_selector

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        return self.template.spec.tolerations

    @classmethod
    def from_requests(
        cls,
        name: str,
        count: int,
        requests: Mapping[str, str | int | float],
        *,
        min_count: int | None = None,
        node_selector: Mapping[str, str] | None = None,
        tolerations: tuple[Toleration, ...] | list[Toleration] | None = None,
    ) -> PodSet:
        """A podSet of one container requesting ``requests`` per pod (used by the simulator)."""
        container = Container(
            name="main",
            resources=ResourceRequirements(requests={k: str(v) for k, v in requests.items()}),
        )
        spec = PodSpec(
            containers=(container,),
            node_selector=dict(node_selector or {}),
            tolerations=tuple(tolerations or ()),
        )
        return cls(name=name, count=count, min_count=min_count, template=PodTemplateSpec(spec=spec))


class PreemptionGate(ApiModel):
    """A gate that must be opened before the workload may trigger preemption."""

    name: str = Field(min_length=1, max_length=63, description="Gate name.")


class WorkloadSpec(ApiModel):
    """What a workload needs and where it queues."""

    pod_sets: tuple[PodSet, ...] = Field(
        min_length=1,
        max_length=18,
        description="Groups of identical pods (1 to 18), admitted together as one gang.",
    )
    queue_name: SubdomainName | None = Field(
        default=None, description="LocalQueue, in the workload's namespace, it is submitted to."
    )
    priority_class_ref: PriorityClassRef | None = Field(
        default=None, description="Priority class the priority comes from."
    )
    priority: int | None = Field(
        default=None,
        ge=INT32_MIN,
        le=INT32_MAX,
        description="Priority in the queue; higher is admitted first. Absent: taken from the "
        "priority class, else 0.",
    )
    active: bool = Field(
        default=True,
        description="False keeps the workload from being admitted and evicts it if running.",
    )
    maximum_execution_time_seconds: int | None = Field(
        default=None,
        ge=1,
        le=INT32_MAX,
        description="Deactivate the workload (reason MaximumExecutionTimeExceeded) once it "
        "has been admitted this long in total, over all its admissions.",
    )
    preemption_gates: tuple[PreemptionGate, ...] = Field(
        default=(),
        max_length=8,
        description="Gates that hold back preemption by this workload, closed until "
        "status.preemptionGates says Open. While one is closed the workload is admitted only "
        "where it fits without preempting.",
    )

    @property
    def priority_class_name(self) -> str | None:
        return self.priority_class_ref.name if self.priority_class_ref else None

    @property
    def priority_class_source(self) -> str:
        """Kueue v1beta1 spelling of the class's origin ("" when there is none)."""
        if self.priority_class_ref is None:
            return ""
        if self.priority_class_ref.kind == "WorkloadPriorityClass":
            return WORKLOAD_PRIORITY_CLASS_SOURCE
        return POD_PRIORITY_CLASS_SOURCE

    def pod_set(self, name: str) -> PodSet | None:
        return next((ps for ps in self.pod_sets if ps.name == name), None)

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        gates = [gate.name for gate in self.preemption_gates]
        rules.check(len(set(gates)) == len(gates), "preemptionGates",
                    f"gate names must be unique (got {', '.join(gates)})")
        seen: set[str] = set()
        for i, pod_set in enumerate(self.pod_sets):
            rules.extend(f"podSets[{i}]", pod_set.rules())
            rules.check(
                pod_set.name not in seen,
                f"podSets[{i}].name",
                f"duplicate podSet name {pod_set.name}",
            )
            seen.add(pod_set.name)
        partial = [i for i, ps in enumerate(self.pod_sets) if ps.min_count is not None]
        rules.check(
            len(partial) <= 1,
            "podSets",
            f"at most one podSet may set minCount (podSets {partial} do)",
        )
        rules.raise_if_any()
        return self


class Workload(ApiObject):
    """A gang of pods admitted as a whole: the unit kuota queues and admits."""

    plural = "workloads"
    namespaced = True
    short_names = ("kwl",)

    kind: Literal["Workload"] = Field(default="Workload", description="Workload.")
    spec: WorkloadSpec = Field(description="PodSets, queue and priority.")
    status: WorkloadStatus = Field(
        default_factory=WorkloadStatus, description="Observed state, written by kuota."
    )

    @property
    def has_quota_reservation(self) -> bool:
        return self.status.is_true("QuotaReserved")

    @property
    def is_admitted(self) -> bool:
        return self.status.is_true("Admitted")

    @property
    def is_finished(self) -> bool:
        return self.status.is_true("Finished")

    @property
    def preemption_gated(self) -> bool:
        """A gate of ``spec.preemptionGates`` is closed: not Open in ``status`` (a gate
        only in the spec is closed, so a workload can be created gated)."""
        opened = {g.name for g in self.status.preemption_gates if g.position == "Open"}
        return any(gate.name not in opened for gate in self.spec.preemption_gates)

    def check_rules(self, rules: Rules) -> None:
        names = [ps.name for ps in self.spec.pod_sets]
        counts = {ps.name: ps.count for ps in self.spec.pod_sets}
        admission = self.status.admission
        if self.has_quota_reservation and admission is None:
            rules.add("status.admission", "must be set while the QuotaReserved condition is True")
        if admission is not None:
            if self.has_quota_reservation:
                rules.check(
                    len(admission.pod_set_assignments) == len(names),
                    "status.admission.podSetAssignments",
                    f"must have one entry per podSet ({len(names)}), "
                    f"got {len(admission.pod_set_assignments)}",
                )
            for i, psa in enumerate(admission.pod_set_assignments):
                at = f"status.admission.podSetAssignments[{i}]"
                rules.check(
                    psa.name in counts,
                    f"{at}.name",
                    f"no podSet named {psa.name} (podSets: {', '.join(names)})",
                )
                if psa.count:
                    for resource, quantity in psa.resource_usage.items():
                        rules.check(
                            _divisible(quantity, psa.count),
                            join_path(f"{at}.resourceUsage", resource),
                            f"{quantity} is not a multiple of count {psa.count}",
                        )
        for i, reclaimable in enumerate(self.status.reclaimable_pods):
            at = f"status.reclaimablePods[{i}]"
            if reclaimable.name not in counts:
                rules.add(f"{at}.name", f"no podSet named {reclaimable.name}")
            elif reclaimable.count > counts[reclaimable.name]:
                rules.add(
                    f"{at}.count",
                    f"{reclaimable.count} exceeds the podSet's count {counts[reclaimable.name]}",
                )
        for i, check in enumerate(self.status.admission_checks):
            for j, update in enumerate(check.pod_set_updates):
                rules.check(
                    update.name in counts,
                    f"status.admissionChecks[{i}].podSetUpdates[{j}].name",
                    f"no podSet named {update.name}",
                )


def _divisible(quantity: str, count: int) -> bool:
    return amount(quantity) % count == 0
