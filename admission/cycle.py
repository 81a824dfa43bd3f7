"""One scheduling cycle: values in, decisions out.

``schedule(snapshot, heads, namespace_labels, fair_sharing=...)`` reads as the
numbered script Kueue's scheduler follows:

1. **Nominate** every head (one workload per ClusterQueue): refuse at once
   what its ClusterQueue or LocalQueue refuses (inactive, stopped, namespace
   not selected); otherwise assign flavors against the snapshot, asking the
   preemption oracle where quota is short. A workload that fits neither
   whole nor by preempting, but may shrink (``minCount``), is assigned the
   largest counts that fit (:mod:`admission.partial`). A caller may end the
   nomination early (``enough``): the heads not nominated wait, untouched,
   for the next cycle.
2. **Order** the nominated. Classically (Kueue's classical iterator): a
   preemptor still waiting for its victims first; then by *borrowing
   height* — 0 for a workload that fits in its ClusterQueue's own quota,
   else the height of the lowest cohort subtree that holds it (a cohort of
   ClusterQueues only is 1, each level of cohorts below adds one; Kueue's
   rule, so a queue directly under a deep root borrows "from far") — then
   higher priority, then the older queue-order timestamp (creation, or
   the eviction that sent it to the back of its queue). The height ranks a
   workload that reclaims what its own subtree lent ahead of one that borrows
   from far away, so the closer owner wins contested quota. With fair
   sharing, by a tournament of dominant resource shares
   (:mod:`admission.fairsharing`), preemptors again first.
3. **Admit or preempt** in that order, re-checking each against the snapshot
   as earlier decisions of this cycle change it. A workload that fits is
   admitted and its usage added to the snapshot. One that needs preemption
   evicts the victims chosen at its nomination and is admitted in a later
   cycle, when their quota is free — its usage is held in this cycle's
   snapshot so nothing else takes it meanwhile. Victims already claimed by
   another preemptor in this cycle make it wait, and so does an earlier
   decision that took the room its victims would make: it is tried again
   next cycle rather than given new victims on the changed snapshot, as
   Kueue's scheduler does (fewer evictions; the quota may free by then). Workloads
   already being evicted (``evicting``: still holding quota while their pods
   stop) are chosen first, so a preemptor waits for them rather than
   evicting more. A workload with a closed preemption gate
   (``spec.preemptionGates``) that could be admitted only by preempting preempts
   nothing: it waits (``AdmissionGated``) until the gate opens or it fits as it is.

The cycle never touches the cache, the queues or a store: the engine applies
the result (assume, evict, block, persist). An error while handling one head
is raised as :class:`~admission.errors.WorkloadFailed` naming it; the cycle's
snapshot is then simply dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from admission import fairsharing, flavors, partial, preemption
from admission.errors import blame
from admission.topology import TopologyView
from queueing.manager import Head
from quota import tree as qt
from quota.cache import Snapshot
from quota.config import ClusterQueueConfig
from quota.resources import Amount, FlavorResource, FRVector
from quota.values import value
from quota.workload import Admission, WorkloadInfo

#: Why a workload that would preempt but has a closed preemption gate waits (Kueue's
#: QuotaReserved reason and message for it; its BlockedOnPreemptionGates condition says
#: ``PreemptionGated``).
PREEMPTION_GATED = "AdmissionGated"
GATED_MESSAGE = "Workload requires preemption, but it's gated"


@value
class Verdict:
    """Why a head was not admitted."""

    head: Head
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Preemption:
    """Evict ``target`` so that ``preemptor`` can be admitted."""

    target: preemption.Target
    preemptor: Head


@dataclass(slots=True)
class CycleResult:
    admitted: list[tuple[Head, Admission]] = field(default_factory=list)
    #: Could not be admitted now; steps aside until something changes.
    inadmissible: list[Verdict] = field(default_factory=list)
    #: Fit at nomination, lost out to an earlier decision of this cycle; retried next cycle.
    skipped: list[Verdict] = field(default_factory=list)
    preempted: list[Preemption] = field(default_factory=list)
    #: Heads whose victims were chosen this cycle; they are retried next cycle.
    preempting: list[Head] = field(default_factory=list)
    #: What each preempting head will use once its victims are gone (by workload key).
    claims: dict[str, FRVector] = field(default_factory=dict)
    #: Heads not nominated: the cycle had done ``enough`` (see :func:`schedule`). They are
    #: left as they were, for the next cycle.
    untried: list[Head] = field(default_factory=list)

    @property
    def tried(self) -> int:
        return (len(self.admitted) + len(self.inadmissible) + len(self.skipped)
                + len(self.preempting))


@dataclass(slots=True)
class Entry:
    head: Head
    cq: ClusterQueueConfig
    assignment: flavors.Assignment
    targets: list[preemption.Target] = field(default_factory=list)


@dataclass(slots=True)
class _Oracle:
    snapshot: Snapshot
    fair_sharing: bool
    topology: TopologyView | None = None
    evicting: AbstractSet[str] = frozenset()

    #: Victim searches answered while the tree's usage is unchanged: flavor assignment asks
    #: whether a cell could be freed, then nomination asks for the victims of the same
    #: request (one search, not two).
    _found: dict[tuple[object, ...], tuple[int, list[preemption.Target]]] = field(
        default_factory=dict)

    def targets(self, cq: ClusterQueueConfig, info: WorkloadInfo,
                usage: Mapping[FlavorResource, Amount],
                contested: set[FlavorResource]) -> list[preemption.Target]:
        tree = self.snapshot.tree
        key = (cq.name, info.key, frozenset(usage.items()), frozenset(contested))
        found = self._found.get(key)
        if found is not None and found[0] == tree.version:
            return list(found[1])
        find = fairsharing.fair_targets if self.fair_sharing else preemption.classical_targets
        targets = find(self.snapshot, cq, info, dict(usage), contested, evicting=self.evicting)
        # (the search leaves the usage as it found it: its version after is what it answered)
        self._found[key] = (tree.version, targets)
        return list(targets)

    def can_preempt_for(self, cq: ClusterQueueConfig, info: WorkloadInfo,
                        fr: FlavorResource, amount: Amount) -> tuple[bool, int, bool]:
        targets = self.targets(cq, info, {fr: amount}, {fr})
        tree = self.snapshot.tree
        version, node = tree.version, tree.queues[cq.name]
        for t in targets:
            self.snapshot.remove(t.cluster_queue, t.victim.admission)
        height = qt.borrowing_height(node, fr, amount)
        for t in targets:
            self.snapshot.add(t.cluster_queue, t.victim.admission)
        tree.version = version  # the same usage again
        return bool(targets), height, all(t.cluster_queue != cq.name for t in targets)


def schedule(snapshot: Snapshot, heads: Sequence[Head],
             namespace_labels: Callable[[str], Mapping[str, str]], *,
             fair_sharing: bool = False, topology: TopologyView | None = None,
             evicting: AbstractSet[str] = frozenset(),
             enough: Callable[[], bool] | None = None,
             held: Mapping[str, tuple[str, FRVector]] | None = None) -> CycleResult:
    """One cycle over ``heads`` (module doc).

    ``enough``, asked before each head after the first, ends the nomination early: the
    heads not nominated are left untried (``CycleResult.untried``) and the cycle decides
    on those it has. A wave of preemptions over a thousand queues costs a victim search
    and evictions per head, seconds in one cycle; a caller that must answer in time (a
    leader that also follows its event stream) takes such a wave in several cycles.
    ``held``: the quota claimed by heads whose victims are still stopping (by workload
    key: ClusterQueue, usage). It is not in ``snapshot``, since each such head asks for it
    again; a head left untried keeps its claim, which is added back before any decision.
    """
    result = CycleResult()
    oracle = _Oracle(snapshot, fair_sharing, topology, evicting)
    # 1. Nominate.
    entries: list[Entry] = []
    for index, head in enumerate(heads):
        if index and enough is not None and enough():
            result.untried = list(heads[index:])
            break
        with blame(head.info.key):
            refusal = _refusal(snapshot, head, namespace_labels)
            if refusal is not None:
                result.inadmissible.append(Verdict(head, *refusal))
                continue
            entry = _nominate(head, snapshot.cluster_queues[head.cluster_queue], snapshot,
                              oracle)
        if entry.assignment.mode is flavors.Mode.NO_FIT:
            result.inadmissible.append(Verdict(head, entry.assignment.reason or
                                               flavors.WAITING_FOR_QUOTA,
                                               entry.assignment.message))
            continue
        if entry.assignment.mode is flavors.Mode.PREEMPT and head.info.preemption_gated:
            result.inadmissible.append(Verdict(head, PREEMPTION_GATED, GATED_MESSAGE))
            continue
        entries.append(entry)
    for head in result.untried:
        claim = held.get(head.info.key) if held else None
        if claim is not None and claim[0] in snapshot.tree.queues:
            snapshot.tree.add(*claim)
    # 2. Order.
    if fair_sharing:
        ordered = fairsharing.fair_order(
            snapshot, entries, cluster_queue=lambda e: e.head.cluster_queue,
            usage=lambda e: e.assignment.usage, order=_fifo,
            preempting=lambda e: e.head.preemptor)
    else:
        ordered = iter(sorted(entries, key=classical_order))
    # 3. Admit or preempt.
    claimed: set[str] = set()
    for entry in ordered:
        with blame(entry.head.info.key):
            _decide(entry, snapshot, oracle, claimed, result)
    return result


def _nominate(head: Head, cq: ClusterQueueConfig, snapshot: Snapshot,
              oracle: _Oracle) -> Entry:
    info = head.info

    def assigned(counts: dict[str, int] | None) -> Entry:
        tried = Entry(head, cq, flavors.assign(info, cq, snapshot, counts=counts,
                                                oracle=oracle, topology=oracle.topology))
        if tried.assignment.mode in flavors.PREEMPTING:
            tried.targets = oracle.targets(cq, info, tried.assignment.usage,
                                           tried.assignment.contested)
            if tried.targets:
                tried.assignment.mode = flavors.Mode.PREEMPT
        return tried

    def attempt(counts: dict[str, int]) -> Entry | None:
        """The smaller assignment if it fits or finds victims."""
        tried = assigned(counts)
        return tried if tried.assignment.mode is flavors.Mode.FIT or tried.targets else None

    entry = assigned(None)
    if entry.assignment.mode is flavors.Mode.FIT or entry.targets:
        return entry
    shrunk = partial.search(info, attempt) if partial.can_shrink(info) else None
    if shrunk is not None:
        return shrunk
    if entry.assignment.mode in flavors.PREEMPTING:
        # Kueue's Preempt mode without targets: not admitted, but ordered with the rest
        # (it may hold quota for the cycle, see _decide).
        if entry.assignment.mode is flavors.Mode.PREEMPT:
            entry.assignment.message = ("not enough quota, and no workload may be preempted "
                                        "for it: " + entry.assignment.message)
        entry.assignment.mode = flavors.Mode.NO_CANDIDATES
        entry.assignment.reason = flavors.WAITING_FOR_QUOTA
    return entry


def _decide(entry: Entry, snapshot: Snapshot, oracle: _Oracle, claimed: set[str],
            result: CycleResult) -> None:
    head, assignment = entry.head, entry.assignment
    node = snapshot.tree.queues[head.cluster_queue]
    if assignment.mode is flavors.Mode.NO_CANDIDATES:
        if entry.cq.preemption.reclaim_within_cohort != "Any":
            snapshot.tree.add(head.cluster_queue, reserved(node, entry.cq, assignment))
        result.inadmissible.append(Verdict(head, assignment.reason, assignment.message))
        return
    if assignment.mode is flavors.Mode.PREEMPT:
        if any(t.key in claimed for t in entry.targets):
            result.skipped.append(Verdict(head, flavors.WAITING_FOR_QUOTA,
                                          "Workload has overlapping preemption targets with "
                                          "another workload"))
            return
        # The victims chosen at nomination, never new ones: if earlier decisions of this
        # cycle took what they would free, the head waits for the next cycle (as Kueue's
        # scheduler does) instead of evicting more workloads now on a changed snapshot.
        targets = entry.targets
        for target in targets:
            snapshot.remove(target.cluster_queue, target.victim.admission)
        if not _still_fits(node, assignment.usage):
            for target in targets:
                snapshot.add(target.cluster_queue, target.victim.admission)
            result.skipped.append(Verdict(head, flavors.WAITING_FOR_QUOTA,
                                          "Workload no longer fits after processing another "
                                          "workload"))
            return
        for target in targets:  # (already out of the snapshot)
            claimed.add(target.key)
            result.preempted.append(Preemption(target, head))
        snapshot.tree.add(head.cluster_queue, assignment.usage)
        result.preempting.append(head)
        result.claims[head.info.key] = assignment.usage
        return
    if oracle.topology is not None and any(ps.nodes for ps in assignment.pod_sets):
        # Pods are placed on nodes: an earlier admission of this cycle may have taken them.
        counts = {ps.name: ps.count for ps in assignment.pod_sets}
        assignment = flavors.assign(head.info, entry.cq, snapshot, counts=counts,
                                    topology=oracle.topology)
    if assignment.mode is not flavors.Mode.FIT or not _still_fits(node, assignment.usage):
        result.skipped.append(Verdict(head, flavors.WAITING_FOR_QUOTA,
                                      "Workload no longer fits after processing another "
                                      "workload"))
        return
    admission = Admission(head.cluster_queue, tuple(assignment.pod_sets),
                          borrowing=assignment.borrows)
    snapshot.tree.add(head.cluster_queue, assignment.usage)
    if oracle.topology is not None:
        requests = {ps.name: ps for ps in head.info.pod_sets}
        for placed in admission.pod_sets:
            oracle.topology.take(requests[placed.name], placed)
    result.admitted.append((head, admission))


def reserved(node: qt.QuotaNode, cq: ClusterQueueConfig, assignment: flavors.Assignment
             ) -> FRVector:
    """What a head that needs preemption but found no victim holds for the rest of the
    cycle, so that heads ordered after it cannot take it (Kueue's scheduler does this
    for a ClusterQueue that cannot always reclaim: ``reclaimWithinCohort`` not ``Any``).

    Without borrowing, the part of its request its nominal quota still covers; when it
    must borrow, its request up to what the borrowing limit leaves.
    """
    held: FRVector = {}
    for fr, amount in assignment.usage.items():
        cell = cq.quotas.get(fr)
        nominal = cell.nominal if cell is not None else 0
        used = node.usage.get(fr, 0)
        if not assignment.borrows:
            room = nominal - used
        elif cell is None or cell.borrowing_limit is None:
            room = amount
        else:
            room = nominal + cell.borrowing_limit - used
        held[fr] = max(0, min(amount, room))
    return held


def classical_order(entry: Entry) -> tuple[bool, int, int, float, str]:
    """Kueue's classical iterator: preemptors waiting for their victims first, then
    borrowing height, then priority, then FIFO.

    Putting preemptors first is Kueue's ``PrioritizePreemptorWorkloads`` (alpha there,
    always on here): without it an equal head from another queue can take the quota a
    preemptor's victims just freed, whose own queue then reclaims it, and so on — the
    same workloads evicted and re-admitted forever.
    """
    return (not entry.head.preemptor, entry.assignment.borrow, *_fifo(entry))


def _fifo(entry: Entry) -> tuple[int, float, str]:
    """Higher priority, then older queue-order timestamp; the key makes the order total."""
    return (-entry.head.info.priority, entry.head.timestamp, entry.head.info.key)


def _still_fits(node: qt.QuotaNode, usage: Mapping[FlavorResource, int]) -> bool:
    return all(amount <= qt.available(node, fr) for fr, amount in usage.items())


def _refusal(snapshot: Snapshot, head: Head,
             namespace_labels: Callable[[str], Mapping[str, str]]) -> tuple[str, str] | None:
    name = head.cluster_queue
    inactive = snapshot.inactive.get(name)
    if inactive is not None:
        if inactive.reason == "Stopped":
            return "ClusterQueueStopped", f"ClusterQueue {name} is stopped: {inactive.message}"
        return "Inactive", f"ClusterQueue {name} is inactive: {inactive.message}"
    lq = head.local_queue
    if lq.stop_policy != "None":
        return "LocalQueueStopped", f"LocalQueue {lq.key} is stopped ({lq.stop_policy})"
    cq = snapshot.cluster_queues[name]
    namespace = head.info.namespace
    if cq.namespace_selector is None or not cq.namespace_selector.matches(
            namespace_labels(namespace)):
        hint = (" (it has no namespaceSelector, which selects no namespace; use {} for all)"
                if cq.namespace_selector is None else "")
        return ("NamespaceNotAllowed",
                f"namespace {namespace} doesn't match the namespaceSelector of ClusterQueue "
                f"{name}{hint}")
    return None
