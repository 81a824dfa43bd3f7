"""Flavor assignment: which ResourceFlavor serves each resource of each pod set.

For every pod set and every resource group it needs, the flavors are tried
in the order the ClusterQueue lists them:

1. A flavor is skipped when the pods could never run on its nodes: one of its
   ``nodeTaints`` (NoSchedule/NoExecute) is not tolerated by the pod's
   tolerations plus the flavor's own, or the pod's nodeSelector / required
   node affinity contradicts the flavor's ``nodeLabels``. Only the label keys
   this flavor itself defines are compared (as Kueue does): a selector on a
   key that only another flavor of the group sets says nothing about this
   flavor's nodes, and the rest is left to the node scheduler.
2. Each covered resource is checked against quota: above what the
   ClusterQueue could *ever* get (potential available) is ``ExceedsMaxQuota``,
   and so is a request too large to count (a pod's request saturated at
   :data:`~quota.resources.MAX_AMOUNT`, or pod sets adding up past it: Kueue's
   saturating arithmetic);
   within what is free now is a fit, with Kueue's *borrowing height* (0 =
   within the ClusterQueue's own quota, else the height of the lowest cohort
   subtree holding the request, :func:`quota.tree.borrowing_height`); anything
   else waits for quota (or, with preemption, asks the preemption oracle).
3. ``flavorFungibility`` decides whether to stop at this flavor:
   ``whenCanBorrow: MayStopSearch`` takes a borrowing fit, ``TryNextFlavor``
   looks further for a fit without borrowing; ``whenCanPreempt`` does the
   same for fits that need preemption. When the search runs past every flavor
   the best one seen wins: by Kueue's preemption modes (a fit, then reclaiming
   quota other queues borrow, then preempting in the own queue), then less
   borrowing — or borrowing first with ``preference: PreemptionOverBorrowing``.
   Either way a flavor that needs preemption but has no candidate ranks below
   every flavor that could admit now, a borrowing fit included.

A ClusterQueue that covers the ``pods`` resource charges one per pod, so a
quota on ``pods`` caps how many pods it runs at once.

Pod sets are assigned one after another, each seeing the usage the previous
ones of the same workload will add: the whole gang must fit at once.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from admission.topology import TopologyView, annotate
from placement.domains import DomainAssignment, DomainUnfit
from quota import tree as qt
from quota.cache import Snapshot
from quota.config import ClusterQueueConfig, FlavorConfig, ResourceGroupConfig
from quota.resources import (
    MAX_AMOUNT,
    Amount,
    FlavorResource,
    FRVector,
    ResourceVector,
    format_amount,
    parse_amount,
)
from quota.values import value
from quota.workload import PodSetAdmission, PodSetInfo, WorkloadInfo


class Mode(enum.IntEnum):
    """How a flavor fits; higher is better."""

    NO_FIT = 0
    #: Would fit by preempting, but no workload may be preempted for it now (Kueue's
    #: Preempt mode without candidates): not admitted, but it may hold quota for the
    #: rest of the cycle (see :mod:`admission.cycle`).
    NO_CANDIDATES = 1
    PREEMPT = 2
    FIT = 3


#: Modes that need preemption, whether or not a victim was found.
PREEMPTING = frozenset({Mode.PREEMPT, Mode.NO_CANDIDATES})

#: The resource a ClusterQueue may cover to count pods rather than what they request.
PODS = "pods"

# Pending reasons, from "may fit later" to "can never fit".
WAITING_FOR_QUOTA = "WaitingForQuota"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
_SEVERITY = {WAITING_FOR_QUOTA: 0, EXCEEDS_MAX_QUOTA: 1, NO_MATCHING_FLAVOR: 2}


class PreemptionOracle(Protocol):
    """Answers whether ``amount`` of ``fr`` could be had by preempting, the borrowing
    height left after those preemptions, and whether every victim is in another
    ClusterQueue (reclaiming lent quota rather than preempting in the own queue)."""

    #: Whether the cycle runs under fair sharing (which lets borrowers preempt).
    fair_sharing: bool

    def can_preempt_for(self, cq: ClusterQueueConfig, info: WorkloadInfo,
                        fr: FlavorResource, amount: Amount) -> tuple[bool, int, bool]: ...


@value
class FlavorChoice:
    mode: Mode
    borrow: int
    #: Cells that fit only by preempting.
    contested: frozenset[FlavorResource] = frozenset()
    #: Where the pods go, for a topology-aware flavor.
    placed: DomainAssignment | None = None
    #: Mode PREEMPT only by reclaiming from other queues (no victim in the own queue).
    reclaims: bool = False

    def rank(self) -> int:
        """Kueue's preemption modes, best last: no fit, preemption without candidates,
        preempt in the own queue, reclaim from borrowers, fit."""
        if self.mode is Mode.PREEMPT:
            return 3 if self.reclaims else 2
        return {Mode.NO_FIT: 0, Mode.NO_CANDIDATES: 1, Mode.FIT: 4}[self.mode]


@dataclass(slots=True)
class Assignment:
    """The outcome for a whole workload."""

    mode: Mode
    pod_sets: list[PodSetAdmission] = field(default_factory=list)
    borrow: int = 0
    usage: FRVector = field(default_factory=dict)
    #: Cells that fit only by preempting (mode PREEMPT).
    contested: set[FlavorResource] = field(default_factory=set)
    reason: str = ""
    message: str = ""

    @property
    def borrows(self) -> bool:
        return self.borrow > 0


def assign(info: WorkloadInfo, cq: ClusterQueueConfig, snapshot: Snapshot, *,
           counts: Mapping[str, int] | None = None,
           oracle: PreemptionOracle | None = None,
           topology: TopologyView | None = None) -> Assignment:
    """Choose flavors for every pod set of ``info`` in ``cq`` (``counts`` overrides pod counts);
    with ``topology``, pod sets that ask for it are also placed in topology domains."""
    node = snapshot.tree.queues[cq.name]
    usage: FRVector = {}
    result = Assignment(Mode.FIT)
    for ps in info.pod_sets:
        count = ps.count if counts is None else counts.get(ps.name, ps.count)
        flavors: dict[str, str] = {}
        ps_usage = _charged(cq, ps, count)
        placed: DomainAssignment | None = None
        for group in _groups_needed(cq, ps_usage, result):
            if result.mode is Mode.NO_FIT:
                return result
            chosen = _pick_flavor(info, ps, count, group, ps_usage, cq, snapshot, node, usage,
                                  result, oracle, topology)
            if chosen is None:
                result.mode = Mode.NO_FIT
                return result
            name, choice = chosen
            for resource in group.covered:
                if resource in ps_usage:
                    flavors[resource] = name
                    if ps_usage[resource]:
                        fr = FlavorResource(name, resource)
                        usage[fr] = usage.get(fr, 0) + ps_usage[resource]
            result.mode = min(result.mode, choice.mode)
            result.borrow = max(result.borrow, choice.borrow)
            result.contested |= choice.contested
            placed = choice.placed or placed
        if result.mode is Mode.NO_FIT:
            return result
        admitted = PodSetAdmission(ps.name, count, flavors, ps_usage)
        result.pod_sets.append(annotate(admitted, placed) if placed else admitted)
    result.usage = usage
    return result


def _charged(cq: ClusterQueueConfig, ps: PodSetInfo, count: int) -> ResourceVector:
    """What ``count`` pods of ``ps`` are charged in ``cq``: their requests, plus one
    ``pods`` per pod when the ClusterQueue covers ``pods``. A zero request of a covered
    resource is charged zero: it still gets a flavor, so the admission says where those
    pods go for that resource (Kueue's rule); a zero request of a resource no group
    covers is dropped (nothing to account it against)."""
    charged: ResourceVector = {r: 0 for r in ps.zero_requests if cq.group_for(r) is not None}
    charged.update({r: a for r, a in ps.total(count).items()
                    if a or cq.group_for(r) is not None})
    if cq.group_for(PODS) is not None:
        charged[PODS] = count * parse_amount(1)
    return charged


def _groups_needed(cq: ClusterQueueConfig, requests: Mapping[str, Amount],
                   result: Assignment) -> list[ResourceGroupConfig]:
    groups: list[ResourceGroupConfig] = []
    for resource in requests:
        group = cq.group_for(resource)
        if group is None:
            result.mode = Mode.NO_FIT
            result.reason = NO_MATCHING_FLAVOR
            result.message = (f"resource {resource} is not covered by any resourceGroup of "
                              f"ClusterQueue {cq.name}")
            return groups
        if group not in groups:
            groups.append(group)
    return groups


def _pick_flavor(info: WorkloadInfo, ps: PodSetInfo, count: int, group: ResourceGroupConfig,
                 requests: Mapping[str, Amount], cq: ClusterQueueConfig, snapshot: Snapshot,
                 node: qt.QuotaNode, assumed: FRVector, result: Assignment,
                 oracle: PreemptionOracle | None,
                 topology: TopologyView | None) -> tuple[str, FlavorChoice] | None:
    best: tuple[str, FlavorChoice] | None = None
    reasons: list[tuple[str, str]] = []
    for name in group.flavors:
        flavor = snapshot.flavors[name]
        mismatch = _constraint_mismatch(ps, flavor)
        if mismatch:
            reasons.append((NO_MATCHING_FLAVOR, f"flavor {name} {mismatch}"))
            continue
        choice = FlavorChoice(Mode.FIT, 0, reclaims=True)
        for resource in group.covered:
            amount = requests.get(resource, 0)
            if not amount:
                continue
            fr = FlavorResource(name, resource)
            mode, borrow, why, reclaims = _fit_cell(info, cq, node, fr,
                                                    assumed.get(fr, 0) + amount, oracle)
            if why:
                reasons.append(why)
            contested = choice.contested | {fr} if mode in PREEMPTING else choice.contested
            choice = FlavorChoice(min(choice.mode, mode), max(choice.borrow, borrow), contested,
                                  reclaims=choice.reclaims and reclaims)
            if mode is Mode.NO_FIT:
                break
        if choice.mode is Mode.NO_FIT:
            continue
        if choice.mode is Mode.FIT and topology is not None:
            placed = topology.place(ps, flavor, count)
            if isinstance(placed, DomainUnfit):
                reasons.append((WAITING_FOR_QUOTA, f"flavor {name}: {placed.reason}"))
                continue
            if placed is not None:
                choice = replace(choice, placed=placed)
        if not _try_next(choice, cq):
            return name, choice
        if best is None or _preferred(choice, best[1], cq):
            best = (name, choice)
    if best is None or best[1].mode is Mode.NO_CANDIDATES:
        reason = min((r for r, _ in reasons), key=_SEVERITY.__getitem__,
                     default=NO_MATCHING_FLAVOR)
        result.reason = WAITING_FOR_QUOTA if best is not None else reason
        result.message = (f"couldn't assign flavors to pod set {ps.name}: "
                          + "; ".join(m for _, m in reasons) if reasons else
                          f"couldn't assign flavors to pod set {ps.name}")
    return best


def _fit_cell(info: WorkloadInfo, cq: ClusterQueueConfig, node: qt.QuotaNode,
              fr: FlavorResource, amount: Amount, oracle: PreemptionOracle | None,
              ) -> tuple[Mode, int, tuple[str, str] | None, bool]:
    """How ``amount`` of ``fr`` fits: mode, borrowing height, why not (reason, message),
    and for PREEMPT whether only other queues' workloads would go."""
    most = qt.potential_available(node, fr)
    if amount >= MAX_AMOUNT:
        return Mode.NO_FIT, 0, (EXCEEDS_MAX_QUOTA, (
            f"{fr.resource} in flavor {fr.flavor}: request is too large to count (at least "
            f"{format_amount(MAX_AMOUNT, fr.resource)}), more than ClusterQueue {cq.name} "
            f"can ever get ({format_amount(most, fr.resource)})")), False
    if amount > most:
        return Mode.NO_FIT, 0, (EXCEEDS_MAX_QUOTA, (
            f"{fr.resource} in flavor {fr.flavor}: request {format_amount(amount, fr.resource)} "
            f"exceeds the most ClusterQueue {cq.name} can ever get "
            f"({format_amount(most, fr.resource)}) by {format_amount(amount - most, fr.resource)}"
        )), False
    borrow = qt.borrowing_height(node, fr, amount)
    free = qt.available(node, fr)
    if amount <= free:
        return Mode.FIT, borrow, None, False
    short = (WAITING_FOR_QUOTA,
             f"insufficient unused quota for {fr.resource} in flavor {fr.flavor}, "
             f"{format_amount(amount - max(free, 0), fr.resource)} more needed")
    if oracle is not None and _may_preempt(cq, node, fr, amount, oracle.fair_sharing):
        possible, borrow_after, reclaims = oracle.can_preempt_for(cq, info, fr, amount)
        if possible:
            return Mode.PREEMPT, borrow_after, short, reclaims
        return Mode.NO_CANDIDATES, borrow, short, False
    return Mode.NO_FIT, borrow, short, False


def _may_preempt(cq: ClusterQueueConfig, node: qt.QuotaNode, fr: FlavorResource,
                 amount: Amount, fair_sharing: bool) -> bool:
    """Whether preempting could make room, as Kueue decides before it simulates.

    A request within the ClusterQueue's nominal quota, or one a subtree below the
    cohort root holds, may reclaim from borrowers. Anything else means borrowing from
    the whole tree, and a workload that must borrow preempts only as
    ``borrowWithinCohort`` allows (or, under fair sharing, as ``reclaimWithinCohort``
    does: there the shares decide who yields). Whether the policies let it evict
    anyone is the oracle's answer: when they do not, the cell needs preemption
    without candidates (:attr:`Mode.NO_CANDIDATES`), not no fit.
    """
    pre = cq.preemption
    cell = cq.quotas.get(fr)
    if cell is not None and amount <= cell.nominal:
        return True
    if qt.fits_below_root(node, fr, amount):
        return True
    return pre.borrow_within_cohort != "Never" or (
        fair_sharing and pre.reclaim_within_cohort != "Never")


def _try_next(choice: FlavorChoice, cq: ClusterQueueConfig) -> bool:
    if choice.mode is Mode.NO_CANDIDATES:
        return True
    if choice.mode is Mode.PREEMPT and cq.when_can_preempt == "TryNextFlavor":
        return True
    return choice.borrow > 0 and cq.when_can_borrow == "TryNextFlavor"


def _preferred(a: FlavorChoice, b: FlavorChoice, cq: ClusterQueueConfig) -> bool:
    """Whether ``a`` beats ``b`` when the search ran on past both.

    A flavor that needs preemption but found no candidate admits nothing this cycle: it
    ranks below every other (the preference only orders the viable ones)."""
    if (a.mode is Mode.NO_CANDIDATES) != (b.mode is Mode.NO_CANDIDATES):
        return b.mode is Mode.NO_CANDIDATES
    if cq.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.rank() > b.rank()
    if a.rank() != b.rank():
        return a.rank() > b.rank()
    return a.borrow < b.borrow


def _constraint_mismatch(ps: PodSetInfo, flavor: FlavorConfig) -> str:
    """Why pods of ``ps`` could not run on ``flavor``'s nodes; empty when they could."""
    labels = flavor.node_labels
    if not (flavor.node_taints or (labels and (ps.node_selector or ps.affinity_terms))):
        return ""
    tolerations = (*ps.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
                t.tolerates(taint) for t in tolerations):
            spelled = f"{taint.key}={taint.value or ''}:{taint.effect}"
            return f"has taint {spelled} the pods don't tolerate"
    for key, wanted in ps.node_selector.items():
        if key in labels and labels[key] != wanted:
            return f"doesn't match nodeSelector {key}={wanted}"
    if ps.affinity_terms:
        relevant = [[r for r in term if r.key in labels] for term in ps.affinity_terms]
        if not any(all(r.matches(labels) for r in term) for term in relevant):
            return "doesn't match the pods' required node affinity"
    return ""
