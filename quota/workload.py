"""Workloads as the core sees them: what they ask for and what they were given.

A :class:`WorkloadInfo` is built once from a Workload object (or a scenario
entry) and never changes while it waits; the core reads only these values.
The pod requests are per pod; :meth:`PodSetInfo.total` multiplies by a count.

Two workloads with the same :attr:`WorkloadInfo.equivalence` ask for the same
thing in the same way (pod sets, requests, node constraints, priority): if one
cannot be admitted at some moment, neither can the other. The queues use this
to set aside whole groups of equal workloads after one try, which keeps the
cost of a scheduling decision independent of how many workloads wait.

An :class:`Admission` is the decision: the ClusterQueue, the flavor chosen for
every resource of every pod set, the admitted counts, the per-cell usage it
reserves, and whether it borrows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from quota.labels import requirement_matches
from quota.resources import Amount, FlavorResource, FRVector, ResourceVector
from quota.values import value


class Taint(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str | None: ...
    @property
    def effect(self) -> str: ...


class Toleration(Protocol):
    def tolerates(self, taint: Any) -> bool: ...


@dataclass(frozen=True, slots=True)
class NodeRequirement:
    """One ``matchExpressions`` item of a required node-affinity term."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return requirement_matches(self.key, self.operator, self.values, labels)


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    name: str
    count: int
    requests: ResourceVector  # per pod
    min_count: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: Required node-affinity terms: OR of terms, each an AND of requirements.
    affinity_terms: tuple[tuple[NodeRequirement, ...], ...] = ()
    tolerations: tuple[Any, ...] = ()
    #: Topology request: ("required" | "preferred", level label) or None.
    topology: tuple[str, str] | None = None
    #: Resources a pod asks for at zero (not in ``requests``): no quota, but a flavor.
    zero_requests: tuple[str, ...] = ()

    #: Hash of what makes two pod sets ask the same (computed once: the pod sets of a job
    #: array's workloads are one object, shared).
    shape_hash: int = field(default=0, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape_hash", hash((
            self.name, self.count, self.min_count, tuple(sorted(self.requests.items())),
            tuple(sorted(self.node_selector.items())), self.affinity_terms,
            tuple(repr(t) for t in self.tolerations), self.topology, self.zero_requests)))

    def total(self, count: int | None = None) -> ResourceVector:
        n = self.count if count is None else count
        return {name: amount * n for name, amount in self.requests.items()}


@value
class WorkloadInfo:
    """A workload's request, immutable while it waits."""

    namespace: str
    name: str
    queue_name: str
    pod_sets: tuple[PodSetInfo, ...]
    priority: int = 0
    #: Seconds since the epoch (or virtual seconds); the FIFO key.
    created: float = 0.0
    priority_class: str | None = None
    #: ``spec.maximumExecutionTimeSeconds``: deactivated once admitted this long in total.
    max_execution: float | None = None
    #: Seconds admitted in earlier admissions (``status.accumulatedPastExecutionTimeSeconds``).
    past_execution: float = 0.0
    #: A preemption gate is closed: admitted only where it fits without preempting.
    preemption_gated: bool = False
    #: Opaque reference for adapters (the API object; in Redis mode the checked object of
    #: the workload's manifest shape, shared, whose name may be another workload's: the
    #: identity is :attr:`key`); never read by the core.
    source: Any = field(default=None, compare=False, hash=False)
    equivalence: int = field(default=0, init=False, compare=False, hash=False)
    #: ``namespace/name``, the workload's identity everywhere.
    key: str = field(default="", init=False, compare=False, hash=False)
    #: ``namespace/queue_name``: the LocalQueue's key.
    local_queue_key: str = field(default="", init=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        shapes = tuple(ps.shape_hash for ps in self.pod_sets)
        object.__setattr__(self, "equivalence",
                           hash((self.namespace, self.queue_name, self.priority, shapes,
                                 self.preemption_gated)))
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")
        object.__setattr__(self, "local_queue_key", f"{self.namespace}/{self.queue_name}")

    def total_requests(self) -> ResourceVector:
        total: ResourceVector = {}
        for ps in self.pod_sets:
            for name, amount in ps.total().items():
                total[name] = total.get(name, 0) + amount
        return total


@value
class PodSetAdmission:
    """The decision for one pod set."""

    name: str
    count: int
    flavors: Mapping[str, str]  # resource -> flavor
    usage: ResourceVector  # total for ``count`` pods
    #: Topology-aware placement: the topology's levels down to the asked one,
    #: pods per domain (label values for those levels, count) and pods per node.
    topology_levels: tuple[str, ...] = ()
    topology: tuple[tuple[tuple[str, ...], int], ...] = ()
    nodes: tuple[tuple[str, int], ...] = ()


@value
class Admission:
    cluster_queue: str
    pod_sets: tuple[PodSetAdmission, ...]
    borrowing: bool = False
    #: Member cluster chosen by multi-cluster dispatch, if any.
    cluster: str | None = None
    _usage: FRVector = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        total: dict[FlavorResource, Amount] = {}
        for ps in self.pod_sets:
            for resource, amount in ps.usage.items():
                if not amount:  # a zero request: its flavor is recorded, it takes nothing
                    continue
                fr = FlavorResource(ps.flavors[resource], resource)
                total[fr] = total.get(fr, 0) + amount
        object.__setattr__(self, "_usage", total)

    def usage(self) -> FRVector:
        """Quota taken per flavor-resource cell (shared: do not modify)."""
        return self._usage

    def flavor_summary(self) -> dict[str, dict[str, str]]:
        return {ps.name: dict(ps.flavors) for ps in self.pod_sets}
