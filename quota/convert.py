"""From API objects to the core's values: parse quantities once, apply defaults.

Every function here is pure and total over objects that passed the API
models' validation; cross-object problems (a missing flavor, a cohort loop)
are not errors here — the cache reports them as an inactive ClusterQueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from quota import api
from quota.config import (
    AdmissionCheckConfig,
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


def _quotas(groups: Iterable[api.ResourceGroup]) -> dict[FlavorResource, CellQuota]:
    quotas: dict[FlavorResource, CellQuota] = {}
    for group in groups:
        for flavor in group.flavors:
            for res in flavor.resources:
                quotas[FlavorResource(flavor.name, res.name)] = CellQuota(
                    nominal=parse_amount(res.nominal_quota),
                    borrowing_limit=_opt(res.borrowing_limit),
                    lending_limit=_opt(res.lending_limit),
                )
    return quotas


def _opt(value: str | None) -> int | None:
    return None if value is None else parse_amount(value)


def flavor(obj: api.ResourceFlavor) -> FlavorConfig:
    spec = obj.spec
    return FlavorConfig(obj.metadata.name, dict(spec.node_labels), tuple(spec.node_taints),
                        tuple(spec.tolerations), spec.topology_name)


def cluster_queue(obj: api.ClusterQueue) -> ClusterQueueConfig:
    spec = obj.spec
    groups = tuple(ResourceGroupConfig(tuple(g.covered_resources), tuple(f.name for f in g.flavors))
                   for g in spec.resource_groups)
    pre = spec.preemption
    checks: list[tuple[str, tuple[str, ...]]] = []
    if spec.admission_checks_strategy is not None:
        checks = [(rule.name, tuple(rule.on_flavors))
                  for rule in spec.admission_checks_strategy.admission_checks]
    return ClusterQueueConfig(
        name=obj.metadata.name,
        cohort=spec.cohort_name,
        resource_groups=groups,
        quotas=_quotas(spec.resource_groups),
        queueing_strategy=spec.queueing_strategy,
        namespace_selector=spec.namespace_selector,
        when_can_borrow=spec.flavor_fungibility.when_can_borrow,
        when_can_preempt=spec.flavor_fungibility.when_can_preempt,
        preference=spec.flavor_fungibility.preference,
        preemption=PreemptionConfig(
            within_cluster_queue=pre.within_cluster_queue,
            reclaim_within_cohort=pre.reclaim_within_cohort,
            borrow_within_cohort=pre.borrow_within_cohort.policy,
            max_priority_threshold=pre.borrow_within_cohort.max_priority_threshold,
        ),
        stop_policy=spec.stop_policy,
        fair_weight=parse_amount(spec.fair_sharing.weight),
        admission_checks=tuple(checks),
    )


def cohort(obj: api.Cohort) -> CohortConfig:
    spec = obj.spec
    return CohortConfig(obj.metadata.name, spec.parent_name, _quotas(spec.resource_groups),
                        parse_amount(spec.fair_sharing.weight))


def local_queue(obj: api.LocalQueue) -> LocalQueueConfig:
    return LocalQueueConfig(obj.metadata.namespace or "default", obj.metadata.name,
                            obj.spec.cluster_queue, obj.spec.stop_policy)


def admission_check(obj: api.AdmissionCheck) -> AdmissionCheckConfig:
    params = obj.spec.parameters
    parameters = {} if params is None else {
        "apiGroup": params.api_group, "kind": params.kind, "name": params.name}
    return AdmissionCheckConfig(obj.metadata.name, obj.spec.controller_name, parameters)


def config(obj: object) -> (FlavorConfig | ClusterQueueConfig | CohortConfig | LocalQueueConfig
                            | AdmissionCheckConfig):
    """The core config for any queue-shaped API object."""
    if isinstance(obj, api.AdmissionCheck):
        return admission_check(obj)
    if isinstance(obj, api.ResourceFlavor):
        return flavor(obj)
    if isinstance(obj, api.ClusterQueue):
        return cluster_queue(obj)
    if isinstance(obj, api.Cohort):
        return cohort(obj)
    if isinstance(obj, api.LocalQueue):
        return local_queue(obj)
    raise TypeError(f"{type(obj).__name__} is not a queue config object")


#: Pod-template annotations asking for topology-aware placement (kuota's and Kueue's).
REQUIRED_TOPOLOGY = ("kuota.dev/podset-required-topology",
                     "kueue.x-k8s.io/podset-required-topology")
PREFERRED_TOPOLOGY = ("kuota.dev/podset-preferred-topology",
                      "kueue.x-k8s.io/podset-preferred-topology")


def topology_request(annotations: Mapping[str, str]) -> tuple[str, str] | None:
    """("required" | "preferred", level label) from pod-template annotations."""
    for kind, keys in (("required", REQUIRED_TOPOLOGY), ("preferred", PREFERRED_TOPOLOGY)):
        for key in keys:
            if annotations.get(key):
                return (kind, annotations[key])
    return None


def pod_set(ps: api.PodSet) -> PodSetInfo:
    pod = ps.template.spec
    terms: list[tuple[NodeRequirement, ...]] = []
    affinity = pod.affinity
    node_affinity = affinity.node_affinity if affinity is not None else None
    required = (node_affinity.required_during_scheduling_ignored_during_execution
                if node_affinity is not None else None)
    if required is not None:
        for term in required.node_selector_terms:
            terms.append(tuple(NodeRequirement(e.key, e.operator, tuple(e.values))
                               for e in term.match_expressions))
    topology = topology_request(ps.template.metadata.annotations or {})
    if ps.topology_request is not None:
        if ps.topology_request.required:
            topology = ("required", ps.topology_request.required)
        elif ps.topology_request.preferred:
            topology = ("preferred", ps.topology_request.preferred)
    return PodSetInfo(
        name=ps.name, count=ps.count, requests=ps.pod_requests(),
        zero_requests=ps.zero_requests(), min_count=ps.min_count,
        node_selector=dict(pod.node_selector), affinity_terms=tuple(terms),
        tolerations=tuple(pod.tolerations), topology=topology)


def workload(obj: api.Workload, *, priority: int, created: float) -> WorkloadInfo:
    """The core's view of a Workload; ``priority`` already resolved from its class."""
    return WorkloadInfo(
        namespace=obj.metadata.namespace or "default",
        name=obj.metadata.name,
        queue_name=obj.spec.queue_name or "",
        pod_sets=tuple(pod_set(ps) for ps in obj.spec.pod_sets),
        priority=priority,
        created=created,
        priority_class=obj.spec.priority_class_name,
        max_execution=obj.spec.maximum_execution_time_seconds,
        past_execution=float(obj.status.accumulated_past_execution_time_seconds or 0),
        preemption_gated=obj.preemption_gated,
        source=obj,
    )
