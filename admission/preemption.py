"""Classical preemption: which admitted workloads to evict so a pending one fits.

Three ClusterQueue policies decide who may be a *candidate*:

* ``withinClusterQueue`` — workloads of the preemptor's own ClusterQueue with
  lower priority (``LowerPriority``), or also equal priority but newer
  (``LowerOrNewerEqualPriority``);
* ``reclaimWithinCohort`` — workloads of other ClusterQueues of the cohort
  tree that use more than their nominal quota on a contested cell
  (``LowerPriority`` or ``Any``). A queue at or below its nominal quota is
  never a candidate: lending is safe because it can always be taken back,
  and taking back never pushes anyone below their guaranteed part;
* ``borrowWithinCohort`` — whether a preemptor that must itself *borrow* may
  still preempt in other queues (only lower priority, at most
  ``maxPriorityThreshold``).

Hierarchical cohorts: walking up from the preemptor's queue, candidates in a
subtree that the preemptor's request fits into "by right" (within that
subtree's quota) are *hierarchical reclaim* candidates; the others compete on
priority.

Victims are tried in order — already being evicted first, other queues
before the preemptor's own, lower priority first, most recently admitted
first — and removed from the snapshot one by one until the preemptor fits.
Then every victim but the last is put back if the preemptor still fits
without it, so the set is minimal. The snapshot is restored before returning:
this module only *answers*, the engine evicts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from quota import tree as qt
from quota.cache import AdmittedWorkload, Snapshot
from quota.config import ClusterQueueConfig
from quota.resources import Amount, FlavorResource, FRVector
from quota.workload import WorkloadInfo


class Variant(enum.Enum):
    WITHIN_CLUSTER_QUEUE = enum.auto()
    HIERARCHICAL_RECLAIM = enum.auto()
    RECLAIM_WITHOUT_BORROWING = enum.auto()
    RECLAIM_WHILE_BORROWING = enum.auto()

    @property
    def reason(self) -> str:
        """Kueue's reason on the victim's Preempted condition."""
        return _REASONS[self]


_REASONS = {
    Variant.WITHIN_CLUSTER_QUEUE: "InClusterQueue",
    Variant.HIERARCHICAL_RECLAIM: "InCohortReclamation",
    Variant.RECLAIM_WITHOUT_BORROWING: "InCohortReclamation",
    Variant.RECLAIM_WHILE_BORROWING: "InCohortReclaimWhileBorrowing",
}


@dataclass(frozen=True, slots=True)
class Target:
    """An admitted workload to evict, and Kueue's reason for it."""

    victim: AdmittedWorkload
    reason: str

    @property
    def key(self) -> str:
        return self.victim.info.key

    @property
    def cluster_queue(self) -> str:
        return self.victim.admission.cluster_queue


@dataclass(slots=True)
class _Candidate:
    entry: AdmittedWorkload
    variant: Variant
    lca: qt.QuotaNode | None  # where the preemptor's and the victim's paths meet


def satisfies_policy(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return candidate.priority < preemptor.priority
    if policy == "LowerOrNewerEqualPriority":
        return candidate.priority < preemptor.priority or (
            candidate.priority == preemptor.priority and preemptor.created < candidate.created)
    return False


def within_nominal(node: qt.QuotaNode, cells: Iterable[FlavorResource]) -> bool:
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in cells)


def fits(node: qt.QuotaNode, usage: Mapping[FlavorResource, Amount], *,
         allow_borrowing: bool) -> bool:
    for fr, amount in usage.items():
        if not allow_borrowing and node.usage.get(fr, 0) + amount > node.subtree.get(fr, 0):
            return False
        if amount > qt.available(node, fr):
            return False
    return True


def candidate_order(preemptor_cq: str, evicting: AbstractSet[str]
                    ) -> Callable[[AdmittedWorkload], tuple[bool, bool, int, float, str]]:
    """Sort key: evicting first, other queues first, lower priority, newer admission."""
    def key(entry: AdmittedWorkload) -> tuple[bool, bool, int, float, str]:
        return (entry.info.key not in evicting, entry.admission.cluster_queue == preemptor_cq,
                entry.info.priority, -entry.at, entry.info.key)
    return key


def classical_targets(snapshot: Snapshot, cq: ClusterQueueConfig, preemptor: WorkloadInfo,
                      usage: FRVector, contested: set[FlavorResource], *,
                      evicting: AbstractSet[str] = frozenset()) -> list[Target]:
    """The minimal victim set that lets ``usage`` fit in ``cq``, or [] if none does."""
    node = snapshot.tree.queues[cq.name]
    forbidden = cq.preemption.borrow_within_cohort == "Never"
    # Over its nominal quota and not allowed to borrow to preempt, the queue may only take
    # victims whose removal it can use while borrowing: a reclaim that works only without
    # borrowing is never chosen, so such candidates are not even collected (most searches
    # of a busy cohort end here, with none).
    only_borrowing = forbidden and not _under_nominal(node, contested)
    same = _same_queue(snapshot, cq, preemptor, contested)
    hierarchy, priority = _cohort_candidates(snapshot, cq, preemptor, usage, contested,
                                             reclaims_without_borrowing=not only_borrowing)
    order = candidate_order(cq.name, evicting)
    ordered: list[_Candidate] = []
    for group in (hierarchy, priority, same):
        group.sort(key=lambda c: order(c.entry))
    for evicted_first in (True, False):
        for group in (hierarchy, priority, same):
            ordered += [c for c in group if (c.entry.info.key in evicting) == evicted_first]

    if (not hierarchy and not priority) or only_borrowing:
        attempts = [True]
    elif forbidden and not hierarchy:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for allow_borrowing in attempts:
        chosen: list[_Candidate] = []
        for cand in ordered:
            if not _still_valid(snapshot, cq, cand, contested, allow_borrowing):
                continue
            snapshot.remove(cand.entry.admission.cluster_queue, cand.entry.admission)
            chosen.append(cand)
            if fits(node, usage, allow_borrowing=allow_borrowing):
                chosen = _fill_back(snapshot, node, usage, chosen, allow_borrowing)
                _restore(snapshot, chosen)
                return [Target(c.entry, c.variant.reason) for c in chosen]
        _restore(snapshot, chosen)
    return []


def _under_nominal(node: qt.QuotaNode, contested: Iterable[FlavorResource]) -> bool:
    cell = node.quotas
    return all(cell[fr].nominal > node.usage.get(fr, 0) if fr in cell else False
               for fr in contested)


def _fill_back(snapshot: Snapshot, node: qt.QuotaNode, usage: FRVector,
               chosen: list[_Candidate], allow_borrowing: bool) -> list[_Candidate]:
    """Put back every victim not needed, newest choice last, keeping the last one."""
    for i in range(len(chosen) - 2, -1, -1):
        cand = chosen[i]
        snapshot.add(cand.entry.admission.cluster_queue, cand.entry.admission)
        if fits(node, usage, allow_borrowing=allow_borrowing):
            chosen.pop(i)
        else:
            snapshot.remove(cand.entry.admission.cluster_queue, cand.entry.admission)
    return chosen


def _restore(snapshot: Snapshot, chosen: list[_Candidate]) -> None:
    for cand in chosen:
        snapshot.add(cand.entry.admission.cluster_queue, cand.entry.admission)


def uses(entry: AdmittedWorkload, contested: Iterable[FlavorResource]) -> bool:
    cells = entry.admission.usage()
    # A loop, not any(<generator>): called for every candidate of every victim search.
    for fr in contested:  # noqa: SIM110
        if cells.get(fr, 0) > 0:
            return True
    return False


def _same_queue(snapshot: Snapshot, cq: ClusterQueueConfig, preemptor: WorkloadInfo,
                contested: set[FlavorResource]) -> list[_Candidate]:
    policy = cq.preemption.within_cluster_queue
    if policy == "Never":
        return []
    return [_Candidate(e, Variant.WITHIN_CLUSTER_QUEUE, None)
            for e in snapshot.workloads.get(cq.name, {}).values()
            if e.info.key != preemptor.key and uses(e, contested)
            and satisfies_policy(policy, preemptor, e.info)]


def _fits_in_quota(node: qt.QuotaNode, requests: Mapping[FlavorResource, Amount]
                   ) -> tuple[bool, dict[FlavorResource, Amount]]:
    ok = True
    remaining = {}
    for fr, amount in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + amount:
            ok = False
        remaining[fr] = max(0, amount - node.local_available(fr))
    return ok, remaining


def _cohort_candidates(snapshot: Snapshot, cq: ClusterQueueConfig, preemptor: WorkloadInfo,
                       usage: FRVector, contested: set[FlavorResource], *,
                       reclaims_without_borrowing: bool = True,
                       ) -> tuple[list[_Candidate], list[_Candidate]]:
    """Workloads of borrowing queues in the cohort tree that the preemptor may reclaim:
    hierarchical reclaims (the subtree up to their common ancestor holds the request),
    and the others (priority decides). ``reclaims_without_borrowing=False`` leaves out
    candidates that could only be :attr:`Variant.RECLAIM_WITHOUT_BORROWING`."""
    hierarchy: list[_Candidate] = []
    priority: list[_Candidate] = []
    node = snapshot.tree.queues[cq.name]
    if node.parent is None or cq.preemption.reclaim_within_cohort == "Never":
        return hierarchy, priority
    # Without the advantage of a subtree that holds the request, and with borrowing to
    # preempt forbidden, every candidate would be a reclaim without borrowing.
    skip_without_advantage = not reclaims_without_borrowing and \
        cq.preemption.borrow_within_cohort == "Never"
    advantage, remaining = _fits_in_quota(node, usage)
    previous: qt.QuotaNode | None = None
    for ancestor in node.ancestors():
        target = hierarchy if advantage else priority
        leaves = _borrowing_leaves(ancestor, skip=previous, preemptor=node,
                                   contested=contested) \
            if advantage or not skip_without_advantage else ()
        for leaf in leaves:
            for entry in snapshot.workloads.get(leaf.name, {}).values():
                variant = _classify(cq, preemptor, entry, contested, advantage)
                if variant is not None:
                    target.append(_Candidate(entry, variant, ancestor))
        fit, remaining = _fits_in_quota(ancestor, remaining)
        advantage = advantage or fit
        previous = ancestor
    return hierarchy, priority


def _borrowing_leaves(root: qt.QuotaNode, *, skip: qt.QuotaNode | None, preemptor: qt.QuotaNode,
                      contested: set[FlavorResource]) -> Iterator[qt.QuotaNode]:
    """ClusterQueues under ``root`` (not under ``skip``) that use more than they own."""
    over: dict[qt.QuotaNode, None] = {}
    for fr in contested:
        over.update(root.borrowers.get(fr, {}))
    for child in over:
        if child is skip or child is preemptor:
            continue
        if child.is_cohort:
            yield from _borrowing_leaves(child, skip=skip, preemptor=preemptor,
                                         contested=contested)
        else:
            yield child


def _classify(cq: ClusterQueueConfig, preemptor: WorkloadInfo, entry: AdmittedWorkload,
              contested: set[FlavorResource], advantage: bool) -> Variant | None:
    if not uses(entry, contested):
        return None
    if not satisfies_policy(cq.preemption.reclaim_within_cohort, preemptor, entry.info):
        return None
    if advantage:
        return Variant.HIERARCHICAL_RECLAIM
    if cq.preemption.borrow_within_cohort == "Never":
        return Variant.RECLAIM_WITHOUT_BORROWING
    threshold = cq.preemption.max_priority_threshold
    candidate, incoming = entry.info.priority, preemptor.priority
    if candidate >= incoming or (threshold is not None and candidate > threshold):
        return Variant.RECLAIM_WITHOUT_BORROWING
    return Variant.RECLAIM_WHILE_BORROWING


def _still_valid(snapshot: Snapshot, cq: ClusterQueueConfig, cand: _Candidate,
                 contested: set[FlavorResource], allow_borrowing: bool) -> bool:
    """Re-checked as victims are removed: never push a queue below its nominal quota."""
    owner = cand.entry.admission.cluster_queue
    if owner == cq.name:
        return True
    if allow_borrowing and cand.variant is Variant.RECLAIM_WITHOUT_BORROWING:
        return False
    node = snapshot.tree.queues.get(owner)
    if node is None or within_nominal(node, contested):
        return False
    for ancestor in node.ancestors():
        if ancestor is cand.lca:
            break
        if within_nominal(ancestor, contested):
            return False
    return True
