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
``reclaimWithinCohort``). Queues are visited from the root of the cohort tree
down, always into the child with the highest share, so the most unfair subtree
gives first at every level. Shares are compared where the two paths meet:
between the children of their lowest common ancestor. A preemptor whose queue
stays within its nominal quota on the contested cells (its usage counted)
reclaims without comparing shares (``InCohortReclamation``, as Kueue's
``FairSharingPreemptWithinNominal``). Otherwise a victim in another queue may be
taken (``InCohortFairSharing``) when

1. the preemptor's share after admission ≤ the target's share after the
   victim is removed; else, on a second pass, one victim per queue when
2. the preemptor's share after admission < the target's share before.

As in classical preemption, unneeded victims are put back at the end.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Generic, TypeVar

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


def fair_order(snapshot: Snapshot, entries: Sequence[E], *, cluster_queue: Callable[[E], str],
               usage: Callable[[E], FRVector], order: Callable[[E], tuple[int, float, str]],
               preempting: Callable[[E], bool] = lambda _: False) -> Iterator[E]:
    """Yield entries one by one in tournament order; the caller admits between yields.
    ``order`` ranks equal shares: (-priority, queue-order timestamp, key). Entries still
    waiting for their victims to stop (``preempting``) win before any share is compared,
    so the quota their victims free is not taken from under them.

    Each yield runs the tournament of the cohort tree holding the best-ranked entry left.
    Only the parts of it that can have changed since the last are run again
    (:class:`_Tournament`), so a cycle over a cohort of hundreds of queues costs per
    admission about the length of one path, not a share for every queue."""
    def rank(e: E) -> tuple[bool, int, float, str]:
        return (not preempting(e), *order(e))

    queues = snapshot.tree.queues
    tournament = _Tournament(snapshot, entries, cluster_queue, usage, rank)
    # The best-ranked entry left, first among equals in ``entries`` order; entries already
    # yielded are dropped when they come to the top.
    heap = [(rank(e), i, e) for i, e in enumerate(entries)]
    heapq.heapify(heap)
    while heap:
        first = heap[0][2]
        if tournament.yielded(first):
            heapq.heappop(heap)
            continue
        node = queues[cluster_queue(first)]
        winner = first if node.parent is None else tournament.winner(node.root())
        assert winner is not None  # the root holds at least ``first``
        tournament.remove(winner)
        yield winner


class _Tournament(Generic[E]):
    """The tournaments of one cycle, kept between its admissions.

    Under a Cohort, each child's candidate (the winner below it, or a ClusterQueue's
    last entry left) competes by the child's share with that candidate admitted. That
    key depends on the usage in the child's subtree and on the candidate alone, and the
    winner under a Cohort on the usage and the entries left in its subtree. A usage
    change marks the subtrees holding it (:attr:`quota.tree.QuotaNode.stamp`) and an
    entry yielded is counted against the cohorts above its queue, so a key or a winner
    computed before holds while both marks are as they were then."""

    def __init__(self, snapshot: Snapshot, entries: Sequence[E],
                 cluster_queue: Callable[[E], str], usage: Callable[[E], FRVector],
                 rank: Callable[[E], tuple[bool, int, float, str]]) -> None:
        self._snapshot = snapshot
        self._cluster_queue, self._usage, self._rank = cluster_queue, usage, rank
        #: Per ClusterQueue its entries not yielded, in order: the last one competes.
        self._left: dict[str, list[E]] = {}
        for e in entries:
            self._left.setdefault(cluster_queue(e), []).append(e)
        self._yielded: set[int] = set()
        #: Entries yielded under each cohort (by id).
        self._taken: dict[int, int] = {}
        #: Cohort (by id) -> (its stamp, entries yielded under it, its winner) when computed.
        self._winners: dict[int, tuple[int, int, E | None]] = {}
        #: Child (by id) -> (its stamp, its candidate, the candidate's key at its parent).
        self._keys: dict[int, tuple[int, E, tuple[bool, Share, int, float, str]]] = {}

    def yielded(self, e: E) -> bool:
        return id(e) in self._yielded

    def remove(self, e: E) -> None:
        self._yielded.add(id(e))
        left = self._left[self._cluster_queue(e)]
        for i in range(len(left) - 1, -1, -1):  # (the competing one: the last, mostly)
            if left[i] is e:
                del left[i]
                break
        node = self._snapshot.tree.queues[self._cluster_queue(e)].parent
        while node is not None:
            self._taken[id(node)] = self._taken.get(id(node), 0) + 1
            node = node.parent

    def winner(self, cohort: qt.QuotaNode) -> E | None:
        """The winner under ``cohort``: children's candidates compete by their share at
        this level (a preemptor waiting for its victims before any share); ties go to the
        earlier child."""
        taken = self._taken.get(id(cohort), 0)
        known = self._winners.get(id(cohort))
        if known is not None and known[0] == cohort.stamp and known[1] == taken:
            return known[2]
        best: E | None = None
        best_key: tuple[bool, Share, int, float, str] | None = None
        for child in cohort.children:
            if child.is_cohort:
                candidate = self.winner(child)
            else:
                left = self._left.get(child.name)
                candidate = left[-1] if left else None
            if candidate is None:
                continue
            key = self._key(child, candidate)
            if best_key is None or key < best_key:
                best, best_key = candidate, key
        self._winners[id(cohort)] = (cohort.stamp, taken, best)
        return best

    def _key(self, child: qt.QuotaNode, candidate: E) -> tuple[bool, Share, int, float, str]:
        known = self._keys.get(id(child))
        if known is not None and known[0] == child.stamp and known[1] is candidate:
            return known[2]
        waits, priority, timestamp, name = self._rank(candidate)
        queue = self._snapshot.tree.queues[self._cluster_queue(candidate)]
        key = (waits, _share_with(self._snapshot, queue, self._usage(candidate), child),
               priority, timestamp, name)
        self._keys[id(child)] = (child.stamp, candidate, key)
        return key


def _share_with(snapshot: Snapshot, queue: qt.QuotaNode, usage: FRVector,
                node: qt.QuotaNode) -> Share:
    """The share of ``node`` (``queue`` or a cohort above it) were ``usage`` admitted at
    ``queue``. The usage is added for the computation and taken back: unmarked, since
    the tree is then as it was."""
    for fr, amount in usage.items():
        qt.add_usage(queue, fr, amount)
    try:
        return share(snapshot, node)
    finally:
        for fr, amount in usage.items():
            qt.remove_usage(queue, fr, amount)


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
    order = candidate_order(cq.name, evicting)
    candidates.sort(key=order)
    by_queue: dict[str, list[AdmittedWorkload]] = {}
    for entry in candidates:
        by_queue.setdefault(entry.admission.cluster_queue, []).append(entry)

    snapshot.tree.add(cq.name, usage)
    chosen: list[Target] = []
    try:
        # Judged with the preemptor's usage in: a queue that stays within its nominal
        # quota on every contested cell is owed that quota, whatever the shares say.
        reclaiming = within_nominal(node, contested)
        search = _Search(snapshot, node, contested, order, usage, chosen)
        retry = search.first_pass(by_queue, reclaiming)
        done = retry is None or search.second_pass(retry)
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


def _borrows(node: qt.QuotaNode) -> bool:
    return any(used > node.subtree.get(fr, 0) for fr, used in node.usage.items())


def _queue_share(snapshot: Snapshot, preemptor: qt.QuotaNode, target: qt.QuotaNode
                 ) -> tuple[Share, Share, qt.QuotaNode]:
    mine, theirs = _meeting_nodes(preemptor, target)
    return share(snapshot, mine), share(snapshot, theirs), theirs


class _Search:
    """One fair-sharing victim search: which queue to take from next, and the passes.

    Queues are visited as Kueue's target ordering does: start at the root of the
    cohort tree and step down into the child with the highest share until a
    ClusterQueue is reached — so the most unfair subtree gives first, at every level.
    Subtrees that do not borrow are skipped (except those on the preemptor's own path:
    its own queue may hold victims), as are queues with no candidates left. A tie
    between ClusterQueues goes to the one whose next candidate goes first; a tie
    between a Cohort and a ClusterQueue to the Cohort, whose most unfair member is
    then found.
    """

    def __init__(self, snapshot: Snapshot, node: qt.QuotaNode,
                 contested: set[FlavorResource],
                 order: Callable[[AdmittedWorkload], tuple[bool, bool, int, float, str]],
                 usage: FRVector, chosen: list[Target]) -> None:
        self.snapshot, self.node, self.contested = snapshot, node, contested
        self.order, self.usage, self.chosen = order, usage, chosen
        self.on_path = {id(n) for n in node.ancestors()}

    def _fits(self) -> bool:
        # The preemptor's usage is simulated in the tree while shares are computed;
        # take it out to ask whether it would fit.
        tree = self.snapshot.tree
        tree.remove(self.node.name, self.usage)
        try:
            return fits(self.node, self.usage, allow_borrowing=True)
        finally:
            tree.add(self.node.name, self.usage)

    def _take(self, entry: AdmittedWorkload, reason: str) -> bool:
        """Take ``entry``; whether the preemptor fits now."""
        self.snapshot.remove(entry.admission.cluster_queue, entry.admission)
        self.chosen.append(Target(entry, reason))
        return self._fits()

    def _queues(self, pending: dict[str, list[AdmittedWorkload]]) -> Iterator[str]:
        """Target queues in Kueue's order; re-evaluated after every step, so the same
        queue comes again while it stays the most unfair."""
        dropped: set[str] = set()
        pruned: set[int] = set()
        if self.node.parent is None:
            while pending.get(self.node.name) and self.node.name not in dropped:
                yield self.node.name
            return
        root = self.node.root()
        while id(root) not in pruned:
            name = self._descend(root, pending, dropped, pruned)
            if name is not None:
                yield name
                if not pending.get(name):
                    dropped.add(name)

    def _descend(self, cohort: qt.QuotaNode, pending: Mapping[str, list[AdmittedWorkload]],
                 dropped: set[str], pruned: set[int]) -> str | None:
        best_cq: tuple[Share, qt.QuotaNode] | None = None
        best_cohort: tuple[Share, qt.QuotaNode] | None = None
        for child in cohort.children:
            if child.is_cohort:
                if id(child) in pruned:
                    continue
                if not _borrows(child) and id(child) not in self.on_path:
                    pruned.add(id(child))
                    continue
                s = share(self.snapshot, child)
                if best_cohort is None or s > best_cohort[0]:
                    best_cohort = (s, child)
                continue
            if child.name in dropped:
                continue
            if not pending.get(child.name) or (child is not self.node and not _borrows(child)):
                dropped.add(child.name)
                continue
            s = share(self.snapshot, child)
            if best_cq is None or s > best_cq[0] or (s == best_cq[0] and self.order(
                    pending[child.name][0]) < self.order(pending[best_cq[1].name][0])):
                best_cq = (s, child)
        if best_cohort is None and best_cq is None:
            pruned.add(id(cohort))
            return None
        if best_cohort is not None and (best_cq is None or best_cohort[0] >= best_cq[0]):
            return self._descend(best_cohort[1], pending, dropped, pruned)
        assert best_cq is not None
        return best_cq[1].name

    def first_pass(self, by_queue: Mapping[str, list[AdmittedWorkload]],
                   reclaiming: bool) -> dict[str, list[AdmittedWorkload]] | None:
        """Take victims the fair-sharing rule allows; None when the preemptor fits, else
        the candidates left for the second pass."""
        pending = {k: list(v) for k, v in by_queue.items()}
        retry: dict[str, list[AdmittedWorkload]] = {}
        for name in self._queues(pending):
            queue = pending[name]
            target = self.snapshot.tree.queues[name]
            if target is self.node:
                if self._take(queue.pop(0), "InClusterQueue"):
                    return None
                continue
            if within_nominal(target, self.contested):
                queue.clear()
                continue
            if reclaiming:
                if self._take(queue.pop(0), "InCohortReclamation"):
                    return None
                continue
            mine, theirs_before, theirs = _queue_share(self.snapshot, self.node, target)
            if mine > theirs_before:  # no victim here can bring their share below mine
                retry.setdefault(name, []).extend(queue)
                queue.clear()
                continue
            while queue:
                entry = queue.pop(0)
                self.snapshot.remove(name, entry.admission)
                theirs_after = share(self.snapshot, theirs)
                self.snapshot.add(name, entry.admission)
                if mine <= theirs_after:
                    if self._take(entry, "InCohortFairSharing"):
                        return None
                    break  # shares changed: choose the queue again
                retry.setdefault(name, []).append(entry)
        return retry

    def second_pass(self, retry: dict[str, list[AdmittedWorkload]]) -> bool:
        """At most one victim per queue, taken when the preemptor's share stays below the
        queue's share before the preemption."""
        pending = {k: list(v) for k, v in retry.items() if v}
        for name in self._queues(pending):
            target = self.snapshot.tree.queues[name]
            entry = pending[name][0]
            pending[name] = []  # one try per queue
            if within_nominal(target, self.contested):
                continue
            mine, theirs_before, _ = _queue_share(self.snapshot, self.node, target)
            if mine < theirs_before and self._take(entry, "InCohortFairSharing"):
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
