"""Fair sharing: weighted dominant resource shares, the admission tournament,
and fair-sharing preemption.

**Share.** A node (ClusterQueue or Cohort) that uses more than its subtree
quota borrows. Per resource, what it borrows (summed over flavors) is divided
by what its parent could lend it at most (its potential available); the
largest of these ratios — the *dominant resource share*, in thousandths — is
divided by the node's ``fairSharing.weight``. A node that borrows with weight
0 has an infinite share. A node that does not borrow has share 0.

**Ordering.** With fair sharing on, a cycle no longer sorts its heads
globally. Each cohort tree runs a tournament: at every Cohort the candidates
coming from its children compete by the share the child *would* have after
admitting its candidate; lower share wins, then higher priority, then older.
The winner is tried, the snapshot changes, and the next tournament runs.

**Preemption.** Candidates are workloads of the preemptor's own queue (by
``withinClusterQueue``) and of queues that borrow on a contested cell (by
``reclaimWithinCohort``). The queue with the highest share is picked first.
Shares are compared where the two paths meet: between the children of their
lowest common ancestor. A victim in another queue may be taken when

1. the preemptor's share after admission ≤ the target's share after the
   victim is removed; else, on a second pass,
2. the preemptor's share after admission < the target's share before.

As in classical preemption, unneeded victims are put back at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

from admission.preemption import (
    Target,
    candidate_order,
    fits,
    satisfies_policy,
    uses,
    within_nominal,
)
from quota import tree as qt
from quota.cache import AdmittedWorkload, Snapshot
from quota.config import ClusterQueueConfig
from quota.resources import MILLI, FlavorResource, FRVector
from quota.workload import WorkloadInfo

#: (borrows with zero weight, weighted share): compares like Kueue's DRS.
Share = tuple[bool, float]
ZERO: Share = (False, 0.0)

E = TypeVar("E")


def weight(snapshot: Snapshot, node: qt.QuotaNode) -> int:
    if node.is_cohort:
        cohort = snapshot.cohorts.get(node.name)
        return cohort.fair_weight if cohort is not None else MILLI
    return snapshot.cluster_queues[node.name].fair_weight


def share(snapshot: Snapshot, node: qt.QuotaNode) -> Share:
    """The node's weighted dominant resource share now."""
    if node.parent is None:
        return ZERO
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        over = node.usage.get(fr, 0) - quota
        if over > 0:
            borrowed[fr.resource] = borrowed.get(fr.resource, 0) + over
    if not borrowed:
        return ZERO
    lendable: dict[str, int] = {}
    for fr in node.root().subtree:
        if fr.resource in borrowed:
            lendable[fr.resource] = (lendable.get(fr.resource, 0)
                                     + qt.potential_available(node.parent, fr))
    ratio = max((amount * 1000 / lendable[res] for res, amount in borrowed.items()
                 if lendable.get(res, 0) > 0), default=0.0)
    w = weight(snapshot, node)
    if w == 0:
        return (ratio > 0, ratio)
    return (False, ratio * MILLI / w)


def _path_shares(snapshot: Snapshot, cq: str, usage: FRVector) -> dict[str, Share]:
    """Share of each node on the path up from ``cq``, keyed by its parent's name,
    as it would be with ``usage`` admitted."""
    snapshot.tree.add(cq, usage)
    try:
        shares: dict[str, Share] = {}
        node = snapshot.tree.queues[cq]
        while node.parent is not None:
            shares[node.parent.name] = share(snapshot, node)
            node = node.parent
        return shares
    finally:
        snapshot.tree.remove(cq, usage)


def fair_order(snapshot: Snapshot, entries: Sequence[E], *, cluster_queue: Callable[[E], str],
               usage: Callable[[E], FRVector], order: Callable[[E], tuple[int, float, str]]
               ) -> Iterator[E]:
    """Yield entries one by one in tournament order; the caller admits between yields.
    ``order`` ranks equal shares: (-priority, queue-order timestamp, key)."""
    remaining = list(entries)
    while remaining:
        first = min(remaining, key=order)
        node = snapshot.tree.queues[cluster_queue(first)]
        if node.parent is None:
            remaining.remove(first)
            yield first
            continue
        root = node.root()
        contenders = {cluster_queue(e): e for e in remaining
                      if snapshot.tree.queues[cluster_queue(e)].root() is root}
        shares = {cq: _path_shares(snapshot, cq, usage(e)) for cq, e in contenders.items()}

        winner = _tournament(root, contenders, shares, cluster_queue, order)
        assert winner is not None  # the root holds at least ``first``
        remaining.remove(winner)
        yield winner


def _tournament(cohort: qt.QuotaNode, contenders: Mapping[str, E],
                shares: Mapping[str, Mapping[str, Share]], cluster_queue: Callable[[E], str],
                order: Callable[[E], tuple[int, float, str]]) -> E | None:
    """The winner under ``cohort``: children's winners compete by their share at this level."""
    best: E | None = None
    best_key: tuple[Share, int, float, str] | None = None
    for child in cohort.children:
        winner = (_tournament(child, contenders, shares, cluster_queue, order) if child.is_cohort
                  else contenders.get(child.name))
        if winner is None:
            continue
        key = (shares[cluster_queue(winner)][cohort.name], *order(winner))
        if best_key is None or key < best_key:
            best, best_key = winner, key
    return best


def _meeting_nodes(a: qt.QuotaNode, b: qt.QuotaNode) -> tuple[qt.QuotaNode, qt.QuotaNode]:
    """The children of the lowest common ancestor on ``a``'s and ``b``'s paths."""
    path_a = [a, *a.ancestors()]
    index = {id(n): i for i, n in enumerate(path_a)}
    prev_b = b
    for node in b.ancestors():
        if id(node) in index:
            return path_a[index[id(node)] - 1], prev_b
        prev_b = node
    return path_a[-1], prev_b


def fair_targets(snapshot: Snapshot, cq: ClusterQueueConfig, preemptor: WorkloadInfo,
                 usage: FRVector, contested: set[FlavorResource], *,
                 evicting: AbstractSet[str] = frozenset()) -> list[Target]:
    node = snapshot.tree.queues[cq.name]
    candidates = _candidates(snapshot, cq, preemptor, contested)
    if not candidates:
        return []
    candidates.sort(key=candidate_order(cq.name, evicting))
    by_queue: dict[str, list[AdmittedWorkload]] = {}
    for entry in candidates:
        by_queue.setdefault(entry.admission.cluster_queue, []).append(entry)

    snapshot.tree.add(cq.name, usage)
    chosen: list[Target] = []
    try:
        done = _first_pass(snapshot, node, usage, by_queue, contested, chosen)
        if not done:
            done = _second_pass(snapshot, node, usage, by_queue, contested, chosen)
    finally:
        snapshot.tree.remove(cq.name, usage)
    if not done:
        _restore(snapshot, chosen)
        return []
    chosen = _fill_back(snapshot, node, usage, chosen)
    _restore(snapshot, chosen)
    return chosen


def _candidates(snapshot: Snapshot, cq: ClusterQueueConfig, preemptor: WorkloadInfo,
                contested: set[FlavorResource]) -> list[AdmittedWorkload]:
    node = snapshot.tree.queues[cq.name]
    out: list[AdmittedWorkload] = []
    if cq.preemption.within_cluster_queue != "Never":
        out += [e for e in snapshot.workloads.get(cq.name, {}).values()
                if e.info.key != preemptor.key and uses(e, contested)
                and satisfies_policy(cq.preemption.within_cluster_queue, preemptor, e.info)]
    if node.parent is None or cq.preemption.reclaim_within_cohort == "Never":
        return out
    for member in snapshot.tree.members(node.root()):
        if member.is_cohort or member is node or within_nominal(member, contested):
            continue
        out += [e for e in snapshot.workloads.get(member.name, {}).values()
                if uses(e, contested)
                and satisfies_policy(cq.preemption.reclaim_within_cohort, preemptor, e.info)]
    return out


def _fits_fairly(snapshot: Snapshot, node: qt.QuotaNode, usage: FRVector) -> bool:
    # The preemptor's usage is simulated in the tree while shares are computed;
    # take it out to ask whether it would fit.
    snapshot.tree.remove(node.name, usage)
    try:
        return fits(node, usage, allow_borrowing=True)
    finally:
        snapshot.tree.add(node.name, usage)


def _queue_share(snapshot: Snapshot, preemptor: qt.QuotaNode, target: qt.QuotaNode
                 ) -> tuple[Share, Share, qt.QuotaNode]:
    mine, theirs = _meeting_nodes(preemptor, target)
    return share(snapshot, mine), share(snapshot, theirs), theirs


def _pick_queue(snapshot: Snapshot, preemptor: qt.QuotaNode,
                by_queue: Mapping[str, list[AdmittedWorkload]]) -> str:
    """The queue with the highest share (seen from where it meets the preemptor);
    ties go to the first name."""
    def rank(name: str) -> Share:
        target = snapshot.tree.queues[name]
        if target is preemptor:
            return share(snapshot, preemptor)
        return _queue_share(snapshot, preemptor, target)[1]
    return max(sorted(by_queue), key=rank)


def _take(snapshot: Snapshot, entry: AdmittedWorkload, reason: str,
          chosen: list[Target]) -> None:
    snapshot.remove(entry.admission.cluster_queue, entry.admission)
    chosen.append(Target(entry, reason))


def _first_pass(snapshot: Snapshot, node: qt.QuotaNode, usage: FRVector,
                by_queue: dict[str, list[AdmittedWorkload]], contested: set[FlavorResource],
                chosen: list[Target]) -> bool:
    retry: dict[str, list[AdmittedWorkload]] = {}
    pending = {k: list(v) for k, v in by_queue.items()}
    while pending:
        name = _pick_queue(snapshot, node, pending)
        queue = pending[name]
        target_node = snapshot.tree.queues[name]
        if target_node is node:
            _take(snapshot, queue.pop(0), "InClusterQueue", chosen)
            if not queue:
                del pending[name]
            if _fits_fairly(snapshot, node, usage):
                return True
            continue
        if within_nominal(target_node, contested):
            del pending[name]
            continue
        mine, theirs_before, theirs = _queue_share(snapshot, node, target_node)
        if mine > theirs_before:
            retry.setdefault(name, []).extend(queue)
            del pending[name]
            continue
        taken = False
        while queue:
            entry = queue.pop(0)
            snapshot.remove(name, entry.admission)
            theirs_after = share(snapshot, theirs)
            snapshot.add(name, entry.admission)
            if mine <= theirs_after:
                _take(snapshot, entry, "InCohortFairSharing", chosen)
                taken = True
                if _fits_fairly(snapshot, node, usage):
                    return True
                break
            retry.setdefault(name, []).append(entry)
        if not queue or not taken:
            pending.pop(name, None)
    by_queue.clear()
    by_queue.update(retry)
    return False


def _second_pass(snapshot: Snapshot, node: qt.QuotaNode, usage: FRVector,
                 retry: dict[str, list[AdmittedWorkload]], contested: set[FlavorResource],
                 chosen: list[Target]) -> bool:
    pending = {k: list(v) for k, v in retry.items() if v}
    while pending:
        name = _pick_queue(snapshot, node, pending)
        target_node = snapshot.tree.queues[name]
        entry = pending.pop(name)[0]
        if within_nominal(target_node, contested):
            continue
        mine, theirs_before, _ = _queue_share(snapshot, node, target_node)
        if mine < theirs_before:
            _take(snapshot, entry, "InCohortFairSharing", chosen)
            if _fits_fairly(snapshot, node, usage):
                return True
    return False


def _fill_back(snapshot: Snapshot, node: qt.QuotaNode, usage: FRVector,
               chosen: list[Target]) -> list[Target]:
    for i in range(len(chosen) - 2, -1, -1):
        victim = chosen[i].victim
        snapshot.add(victim.admission.cluster_queue, victim.admission)
        if fits(node, usage, allow_borrowing=True):
            chosen.pop(i)
        else:
            snapshot.remove(victim.admission.cluster_queue, victim.admission)
    return chosen


def _restore(snapshot: Snapshot, chosen: list[Target]) -> None:
    for target in chosen:
        snapshot.add(target.victim.admission.cluster_queue, target.victim.admission)
