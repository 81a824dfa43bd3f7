"""Workloads that can never be admitted as the queues are configured: told at once.

A workload *never fits* when, with nothing else running anywhere in its cohort
tree, it still could not be admitted: its LocalQueue or ClusterQueue does not
exist (``LocalQueueNotFound``, ``ClusterQueueNotFound``), a resource it asks
for is covered by no resourceGroup or no flavor's nodes can take its pods
(``NoMatchingFlavor``), or it asks for more than its ClusterQueue could ever
get — nominal quota plus what the cohort tree can lend, capped by every
``borrowingLimit`` on the way up (``ExceedsMaxQuota``).

:func:`never_fits` answers that from configs alone, by running the very flavor
assignment a cycle runs (:func:`admission.flavors.assign`) on a copy of the
quota tree with every usage at zero, and with each pod set at its smallest
admissible count (``minCount``). So it never disagrees with the cycle: what it
calls never-fitting the cycle refuses with the same reason, whatever the usage.

It serves three places: the engine marks such a workload as soon as it is
queued (its reason is written at once; a BestEffortFIFO queue sets it aside so
it blocks no one and is listed after the workloads that can run), the Redis
client warns on submit, and the explanation (:mod:`admission.explain`) says
what would make it fit. Pure: values in, a verdict out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from admission import flavors
from quota.cache import QuotaCache, Snapshot
from quota.tree import QuotaTree
from quota.values import value
from quota.workload import WorkloadInfo

LOCAL_QUEUE_NOT_FOUND: Final = "LocalQueueNotFound"
CLUSTER_QUEUE_NOT_FOUND: Final = "ClusterQueueNotFound"
#: Reasons :func:`never_fits` gives: none of them is cured by any usage freed.
REASONS: Final = frozenset({LOCAL_QUEUE_NOT_FOUND, CLUSTER_QUEUE_NOT_FOUND,
                            flavors.NO_MATCHING_FLAVOR, flavors.EXCEEDS_MAX_QUOTA})


@value
class Verdict:
    """Why a workload can never be admitted as configured."""

    reason: str
    message: str

    def text(self) -> str:
        return f"{self.reason}: {self.message}"


def empty_snapshot(cache: QuotaCache) -> Snapshot:
    """The cache's configs over a quota tree with no usage: what each queue could ever get."""
    tree = QuotaTree.build(
        queues={n: (cq.cohort, cq.quotas) for n, cq in cache.cluster_queues.items()},
        cohorts={n: (co.parent, co.quotas) for n, co in cache.cohorts.items()})
    return Snapshot(tree, cache.cluster_queues, cache.cohorts, cache.flavors, cache.inactive,
                    {})


def never_fits(info: WorkloadInfo, cache: QuotaCache,
               empty: Snapshot | None = None) -> Verdict | None:
    """Why ``info`` can never be admitted in ``cache``'s configuration, or None when it
    could be once enough quota is free. ``empty``: :func:`empty_snapshot` of ``cache``,
    when the caller keeps one."""
    lq = cache.local_queues.get(info.local_queue_key)
    if lq is None:
        return Verdict(LOCAL_QUEUE_NOT_FOUND, f"LocalQueue {info.queue_name} doesn't exist in "
                                              f"namespace {info.namespace}")
    cq = cache.cluster_queues.get(lq.cluster_queue)
    if cq is None:
        return Verdict(CLUSTER_QUEUE_NOT_FOUND, f"ClusterQueue {lq.cluster_queue} (of "
                                                f"LocalQueue {lq.key}) doesn't exist")
    if cq.name in cache.inactive:
        return None  # an inactive queue says why itself; the workload may fit once fixed
    snapshot = empty if empty is not None else empty_snapshot(cache)
    smallest = {ps.name: ps.min_count for ps in info.pod_sets if ps.min_count is not None}
    assignment = flavors.assign(info, cq, snapshot, counts=smallest or None)
    if assignment.mode is flavors.Mode.NO_FIT and assignment.reason in REASONS:
        return Verdict(assignment.reason, assignment.message)
    return None


@dataclass(eq=False)
class NeverFits:
    """:func:`never_fits` for an engine's queue: one empty tree per configuration
    generation, one verdict per class of equal workloads (their equivalence), so
    20,000 equal submissions cost one flavor assignment."""

    _generation: int = -1
    _empty: Snapshot | None = None
    _verdicts: dict[tuple[int, str], Verdict | None] = field(default_factory=dict)

    def check(self, info: WorkloadInfo, cache: QuotaCache) -> Verdict | None:
        if self._generation != cache.generation:
            self._generation, self._empty, self._verdicts = cache.generation, None, {}
        key = (info.equivalence, info.local_queue_key)
        if key not in self._verdicts:
            if self._empty is None:
                self._empty = empty_snapshot(cache)
            self._verdicts[key] = never_fits(info, cache, self._empty)
        return self._verdicts[key]
