"""The live quota state: queue configs, the quota tree and the workloads holding quota.

The cache is the single place where usage is counted. Admitting a workload
*assumes* it here at once (its usage enters the tree) so the next decision
sees it, even before any store has been written; a failed write calls
:meth:`QuotaCache.forget` to undo exactly that. Config changes rebuild the
tree from scratch and re-add every workload's usage, so the tree never drifts
from the sum of what is admitted.

A ClusterQueue is *inactive* — it admits nothing and lends nothing new —
while its spec points at a flavor that does not exist, its cohort hangs in a
parent loop, or its ``stopPolicy`` is not ``None``. :attr:`QuotaCache.inactive`
holds the reason and a message for each, in Kueue's words.

:meth:`QuotaCache.snapshot` gives one scheduling cycle a private copy of the
usage with shared, immutable configs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from quota.config import (
    AdmissionCheckConfig,
    ClusterQueueConfig,
    CohortConfig,
    FlavorConfig,
    LocalQueueConfig,
)
from quota.resources import Amount, FlavorResource
from quota.tree import CellQuota, QuotaNode, QuotaTree
from quota.workload import Admission, WorkloadInfo


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    info: WorkloadInfo
    admission: Admission
    #: When the quota was reserved (virtual or real seconds).
    at: float


@dataclass(frozen=True, slots=True)
class Inactive:
    reason: str
    message: str


@dataclass(eq=False)
class Snapshot:
    """One cycle's view: private usage in ``tree``, everything else shared."""

    tree: QuotaTree
    cluster_queues: Mapping[str, ClusterQueueConfig]
    cohorts: Mapping[str, CohortConfig]
    flavors: Mapping[str, FlavorConfig]
    inactive: Mapping[str, Inactive]
    #: Workloads holding quota, per ClusterQueue (what preemption may pick from).
    workloads: Mapping[str, Mapping[str, AdmittedWorkload]]
    def add(self, cq: str, admission: Admission) -> None:
        self.tree.add(cq, admission.usage())

    def remove(self, cq: str, admission: Admission) -> None:
        self.tree.remove(cq, admission.usage())


@dataclass(eq=False)
class QuotaCache:
    flavors: dict[str, FlavorConfig] = field(default_factory=dict)
    cluster_queues: dict[str, ClusterQueueConfig] = field(default_factory=dict)
    cohorts: dict[str, CohortConfig] = field(default_factory=dict)
    local_queues: dict[str, LocalQueueConfig] = field(default_factory=dict)
    admission_checks: dict[str, AdmissionCheckConfig] = field(default_factory=dict)
    #: Namespace labels, for ClusterQueue namespaceSelectors.
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    tree: QuotaTree = field(default_factory=QuotaTree)
    inactive: dict[str, Inactive] = field(default_factory=dict)
    #: Workloads holding quota, per ClusterQueue, by key.
    workloads: dict[str, dict[str, AdmittedWorkload]] = field(default_factory=dict)
    #: Bumped on every config change (the queues use it to retry what waits).
    generation: int = 0
    #: Workload key -> the ClusterQueue it holds quota in.
    _where: dict[str, str] = field(default_factory=dict)
    #: Per ClusterQueue, the usage of the workloads holding its quota, summed (a rebuild adds
    #: each queue's once).
    _totals: dict[str, dict[FlavorResource, Amount]] = field(default_factory=dict)
    #: Inside :meth:`deferred`: config changes mark the tree stale instead of rebuilding it.
    _deferring: int = 0
    _stale: bool = False

    # -- configuration -------------------------------------------------------
    def set_flavor(self, flavor: FlavorConfig) -> None:
        self.flavors[flavor.name] = flavor
        self._changed()

    def delete_flavor(self, name: str) -> None:
        self.flavors.pop(name, None)
        self._changed()

    def set_cluster_queue(self, cq: ClusterQueueConfig) -> None:
        old = self.cluster_queues.get(cq.name)
        self.cluster_queues[cq.name] = cq
        if old is not None and old.cohort == cq.cohort \
                and self._requota(self.tree.queues.get(cq.name), cq.quotas):
            # (a new mapping, as a rebuild makes one: snapshots taken share the old)
            self.inactive = {k: v for k, v in self.inactive.items() if k != cq.name}
            if (reason := self._why_inactive(cq)) is not None:
                self.inactive[cq.name] = reason
        else:
            self._changed()

    def delete_cluster_queue(self, name: str) -> None:
        self.cluster_queues.pop(name, None)
        self._changed()

    def set_cohort(self, cohort: CohortConfig) -> None:
        old = self.cohorts.get(cohort.name)
        self.cohorts[cohort.name] = cohort
        if not (old is not None and old.parent == cohort.parent
                and self._requota(self.tree.cohorts.get(cohort.name), cohort.quotas)):
            self._changed()

    def delete_cohort(self, name: str) -> None:
        self.cohorts.pop(name, None)
        self._changed()

    def set_admission_check(self, check: AdmissionCheckConfig) -> None:
        self.admission_checks[check.name] = check
        self._changed()

    def delete_admission_check(self, name: str) -> None:
        self.admission_checks.pop(name, None)
        self._changed()

    def set_local_queue(self, lq: LocalQueueConfig) -> None:
        self.local_queues[lq.key] = lq
        self.generation += 1

    def delete_local_queue(self, key: str) -> None:
        self.local_queues.pop(key, None)
        self.generation += 1

    def set_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self.namespaces[name] = {**labels, "kubernetes.io/metadata.name": name}
        self.generation += 1

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        return self.namespaces.get(name) or {"kubernetes.io/metadata.name": name}

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Apply many config changes with one rebuild at the end: applying N objects
        costs one pass over the tree, not N (a Redis leader's start, a scenario's setup)."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if not self._deferring and self._stale:
                self.rebuild()

    def _requota(self, node: QuotaNode | None, quotas: Mapping[FlavorResource, CellQuota]
                 ) -> bool:
        """A ClusterQueue's or Cohort's own quota changed and nothing else of the tree's
        shape: recount only its cohort tree (:meth:`QuotaTree.set_quotas`), in O(that
        tree) — with 1,000 queues in cohorts of 100, a tenth of a rebuild. False when a
        rebuild is due anyway (deferred, or a cohort loop somewhere: rebuilt whole)."""
        if node is None or self._deferring or self._stale or self.tree.broken:
            return False
        self.generation += 1
        for name in self.tree.set_quotas(node, quotas):
            total = self._totals.get(name)
            if total:
                self.tree.add(name, total)
        return True

    def _changed(self) -> None:
        if self._deferring:
            self._stale = True
        else:
            self.rebuild()

    def rebuild(self) -> None:
        """Relink the tree from the configs and recount every workload's usage."""
        self._stale = False
        self.generation += 1
        self.tree = QuotaTree.build(
            queues={n: (cq.cohort, cq.quotas) for n, cq in self.cluster_queues.items()},
            cohorts={n: (co.parent, co.quotas) for n, co in self.cohorts.items()},
        )
        # Each queue's usage added once, as kept summed: what spills to a cohort depends only
        # on the sum (a cell's local part takes what it can, the rest goes up), and 20,000
        # workloads added one by one made every config change cost 35 ms.
        for name, total in self._totals.items():
            if name in self.tree.queues:
                self.tree.add(name, total)
        self.inactive = {name: reason for name, cq in self.cluster_queues.items()
                         if (reason := self._why_inactive(cq)) is not None}

    def _why_inactive(self, cq: ClusterQueueConfig) -> Inactive | None:
        missing = sorted(cq.flavor_names() - self.flavors.keys())
        if missing:
            return Inactive("FlavorNotFound",
                            f"Can't admit new workloads: references missing ResourceFlavor(s): "
                            f"{', '.join(missing)}")
        unknown = sorted({name for name, _ in cq.admission_checks} - self.admission_checks.keys())
        if unknown:
            return Inactive("AdmissionCheckNotFound",
                            f"Can't admit new workloads: references missing AdmissionCheck(s): "
                            f"{', '.join(unknown)}")
        loop = self.tree.in_broken_tree(cq.name)
        if loop:
            return Inactive("CohortCycle", f"Can't admit new workloads: {loop}")
        if cq.stop_policy != "None":
            return Inactive("Stopped", f"Can't admit new workloads: stopPolicy is {cq.stop_policy}")
        return None

    # -- workloads -----------------------------------------------------------
    def assume(self, info: WorkloadInfo, admission: Admission, at: float) -> None:
        """Count ``info``'s usage at once; :meth:`forget` undoes it."""
        cq = admission.cluster_queue
        entries = self.workloads.setdefault(cq, {})
        if info.key in entries:
            raise ValueError(f"workload {info.key} already holds quota in ClusterQueue {cq}")
        entries[info.key] = AdmittedWorkload(info, admission, at)
        self._where[info.key] = cq
        usage = admission.usage()
        total = self._totals.setdefault(cq, {})
        for fr, amount in usage.items():
            total[fr] = total.get(fr, 0) + amount
        if cq in self.tree.queues:
            self.tree.add(cq, usage)

    def forget(self, key: str) -> AdmittedWorkload | None:
        """Release a workload's quota; returns what it held, or None if nothing."""
        cq = self._where.pop(key, None)
        if cq is None:
            return None
        entry = self.workloads[cq].pop(key)
        usage = entry.admission.usage()
        total = self._totals[cq]
        for fr, amount in usage.items():
            total[fr] -= amount
        if cq in self.tree.queues:
            self.tree.remove(cq, usage)
        return entry

    def holding(self, key: str) -> AdmittedWorkload | None:
        cq = self._where.get(key)
        return None if cq is None else self.workloads[cq][key]

    def all_holding(self) -> Iterator[AdmittedWorkload]:
        for entries in self.workloads.values():
            yield from entries.values()

    def snapshot(self, queues: Iterable[str] | None = None) -> Snapshot:
        """One cycle's view; with ``queues``, its tree holds only their cohort trees
        (:meth:`QuotaTree.clone`)."""
        return Snapshot(
            tree=self.tree.clone(queues),
            cluster_queues=self.cluster_queues,
            cohorts=self.cohorts,
            flavors=self.flavors,
            inactive=self.inactive,
            workloads=self.workloads,
        )
