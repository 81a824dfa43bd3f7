"""Why a workload waits: one explanation, read from the engine's own state.

``kuota why``, ``kubectl kuota why``, ``describe`` and the dashboard's Why box all
show :func:`render` of :func:`explain`, so they cannot tell different stories.
The engine they read is the one the scheduler runs, or one rebuilt from the
store exactly as a new leader would: every number is the quota tree's own.

For a waiting workload it says, per pod set and resource:

* what the pods need (count × per pod) and, for each flavor the ClusterQueue
  may give, what is free now and the most it could ever get;
* what each level of the cohort tree holds and uses (the ClusterQueue, then
  each Cohort up to the root);
* who holds the part other queues borrow: the borrowing ClusterQueues and
  their workloads (priority and amount);
* whether the ClusterQueue's preemption policy (``reclaimWithinCohort``,
  ``withinClusterQueue``, ``borrowWithinCohort``) lets it take quota back, and
  why not;

then its position (or that it is set aside and blocks no one) and what would
make it fit. A workload that can never fit as configured
(:mod:`admission.inadmissible`) is said so first. Pure: values in, text out.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from admission import inadmissible
from admission.engine import Engine, Record
from quota import tree as qt
from quota.config import ClusterQueueConfig
from quota.lifecycle import State
from quota.resources import FlavorResource, format_amount
from quota.values import value
from quota.workload import PodSetInfo, WorkloadInfo

#: Borrowing workloads named per queue; the rest are counted.
SHOWN_HOLDERS = 5


@value
class Level:
    """One node of the cohort tree for one flavor and resource."""

    kind: str  # ClusterQueue | Cohort
    name: str
    quota: int  # its subtree's quota (a ClusterQueue: its nominal quota)
    used: int


@value
class Holder:
    key: str
    cluster_queue: str
    amount: int
    priority: int


@value
class Borrower:
    cluster_queue: str
    borrowed: int
    holders: tuple[Holder, ...]


@dataclass(frozen=True)
class Cell:
    """What one pod set needs of one resource in one flavor, and what stands in the way."""

    pod_set: str
    resource: str
    flavor: str
    need: int
    free: int
    most: int
    levels: tuple[Level, ...] = ()
    borrowers: tuple[Borrower, ...] = ()
    #: Whether the preemption policy lets it take the missing part, and why (not).
    preemption: str = ""

    @property
    def short(self) -> int:
        return max(0, self.need - max(self.free, 0))


@dataclass(frozen=True)
class Explanation:
    key: str
    state: str
    reason: str = ""
    message: str = ""
    cluster_queue: str = ""
    local_queue: str = ""
    #: (position in the ClusterQueue, in the LocalQueue), 0 is next; None when not queued.
    position: tuple[int, int] | None = None
    waiting: int = 0
    #: Set aside as inadmissible: it blocks no one.
    set_aside: bool = False
    never: inadmissible.Verdict | None = None
    #: Per pod set: its line ("main: 4 pods"), then its cells.
    pod_sets: tuple[tuple[str, tuple[Cell, ...]], ...] = ()
    #: Resources no resourceGroup of the ClusterQueue covers, with close names it covers.
    uncovered: tuple[tuple[str, tuple[str, ...]], ...] = ()
    to_fit: tuple[str, ...] = field(default_factory=tuple)


def explain(engine: Engine, key: str, *, reason: str = "", message: str = "") -> Explanation:
    """The explanation of workload ``key`` in ``engine``; ``reason``/``message``: the
    pending reason its store holds (the leader's), when the engine has not tried it."""
    record = engine.records.get(key)
    if record is None:
        raise KeyError(f"workload {key} is not in the engine")
    info = record.info
    if record.state is not State.PENDING:
        return _not_waiting(engine, record, reason, message)
    own_reason = record.pending_reason if record.pending_reason not in (None, "Pending") \
        else None
    reason, message = (own_reason, record.pending_message or "") if own_reason \
        else (reason or record.pending_reason or "", message or record.pending_message or "")
    never = inadmissible.never_fits(info, engine.cache)
    lq = engine.cache.local_queues.get(info.local_queue_key)
    cq = engine.cache.cluster_queues.get(lq.cluster_queue) if lq is not None else None
    base = Explanation(key, State.PENDING.value, reason, message,
                       lq.cluster_queue if lq is not None else "", info.local_queue_key,
                       never=never, set_aside=engine.queues.set_aside(key) is not None)
    if cq is None:
        return _with_advice(engine, base, info, None)
    position, waiting = _position(engine, cq.name, key)
    pod_sets, uncovered = _pod_sets(engine, info, cq)
    explained = replace(base, position=position, waiting=waiting, pod_sets=pod_sets,
                        uncovered=uncovered)
    return _with_advice(engine, explained, info, cq)


def _not_waiting(engine: Engine, record: Record, reason: str, message: str) -> Explanation:
    admission = record.admission
    if record.state is State.INACTIVE:  # deactivated: the engine's own reason first
        reason = record.pending_reason or reason
        message = record.pending_message or message
    elif record.state is State.EVICTING and record.evictions and not reason:
        last = record.evictions[-1]
        reason, message = last.reason, last.message
    return Explanation(record.info.key, record.state.value, reason, message,
                       admission.cluster_queue if admission is not None else "",
                       record.info.local_queue_key)


def _position(engine: Engine, cq: str, key: str) -> tuple[tuple[int, int] | None, int]:
    found, count = None, 0
    for info, in_cq, in_lq in engine.queues.positions(cq):
        count += 1
        if info.key == key:
            found = (in_cq, in_lq)
    return found, count


def _pod_sets(engine: Engine, info: WorkloadInfo, cq: ClusterQueueConfig
              ) -> tuple[tuple[tuple[str, tuple[Cell, ...]], ...],
                         tuple[tuple[str, tuple[str, ...]], ...]]:
    node = engine.cache.tree.queues.get(cq.name)
    covered = sorted({r for g in cq.resource_groups for r in g.covered})
    out, uncovered = [], []
    for ps in info.pod_sets:
        cells = []
        for resource, need in sorted(_needs(ps).items()):
            group = cq.group_for(resource)
            if group is None:
                uncovered.append((resource, _close(resource, covered)))
                continue
            if node is None:
                continue
            for flavor in group.flavors:
                cells.append(_cell(engine, info, cq, node, ps.name,
                                   FlavorResource(flavor, resource), need))
        head = f"{ps.name}: {ps.count} pod{'s' if ps.count != 1 else ''}" + (
            f" (at least {ps.min_count})" if ps.min_count is not None else "")
        out.append((head, tuple(cells)))
    return tuple(out), tuple(uncovered)


def _close(resource: str, covered: list[str]) -> tuple[str, ...]:
    """Covered names a typo may have meant: ``gpu`` → ``nvidia.com/gpu`` first (the same
    name under a vendor prefix), then names spelled alike."""
    same = [r for r in covered if r.rpartition("/")[2] == resource.rpartition("/")[2]]
    alike = difflib.get_close_matches(resource, covered, n=2, cutoff=0.6)
    return tuple(dict.fromkeys([*same, *alike]))[:2]


def _needs(ps: PodSetInfo) -> dict[str, int]:
    return {r: a for r, a in ps.total(ps.count).items() if a}


def _cell(engine: Engine, info: WorkloadInfo, cq: ClusterQueueConfig, node: qt.QuotaNode,
          pod_set: str, fr: FlavorResource, need: int) -> Cell:
    levels = tuple(Level("Cohort" if n.is_cohort else "ClusterQueue", n.name,
                         n.subtree.get(fr, 0), n.usage.get(fr, 0))
                   for n in (node, *node.ancestors()))
    cell = Cell(pod_set, fr.resource, fr.flavor, need, qt.available(node, fr),
                qt.potential_available(node, fr), levels,
                _borrowers(engine, node, fr) if node.parent is not None else ())
    if cell.short and need <= cell.most:
        return replace(cell, preemption=_preemption(engine, info, cq, cell))
    return cell


def _borrowers(engine: Engine, node: qt.QuotaNode, fr: FlavorResource) -> tuple[Borrower, ...]:
    tree, out = engine.cache.tree, []
    for name in sorted(tree.queue_names(node.root()) - {node.name}):
        other = tree.queues[name]
        quota = other.quotas.get(fr)
        borrowed = other.usage.get(fr, 0) - (quota.nominal if quota is not None else 0)
        if borrowed > 0:
            out.append(Borrower(name, borrowed, tuple(_holders(engine, name, fr))))
    return tuple(out)


def _holders(engine: Engine, cq: str, fr: FlavorResource) -> Iterator[Holder]:
    entries = engine.cache.workloads.get(cq, {}).values()
    held = [(entry.admission.usage().get(fr, 0), entry) for entry in entries]
    for amount, entry in sorted(held, key=lambda h: (-h[0], h[1].info.key)):
        if amount:
            yield Holder(entry.info.key, cq, amount, entry.info.priority)


def _preemption(engine: Engine, info: WorkloadInfo, cq: ClusterQueueConfig, cell: Cell) -> str:
    """Whether ``cq``'s preemption policy lets the workload take what it lacks, and why not."""
    policy, fr = cq.preemption, FlavorResource(cell.flavor, cell.resource)
    quota = cq.quotas.get(fr)
    nominal = quota.nominal if quota is not None else 0
    own = [h for h in _holders(engine, cq.name, fr) if h.key != info.key]
    lines = []
    if cell.borrowers and cell.need <= nominal:
        lower = [h for b in cell.borrowers for h in b.holders if h.priority < info.priority]
        if policy.reclaim_within_cohort == "Never":
            lines.append(f"reclaimWithinCohort is Never on ClusterQueue {cq.name}: it does "
                         "not take back the quota it lent; it waits for the borrowers' "
                         "workloads to end")
        elif policy.reclaim_within_cohort == "LowerPriority" and not lower:
            lines.append(f"reclaimWithinCohort is LowerPriority on ClusterQueue {cq.name}, "
                         f"and no borrowing workload has a priority below {info.priority}")
        else:
            lines.append(f"reclaimWithinCohort is {policy.reclaim_within_cohort} on "
                         f"ClusterQueue {cq.name}: it may take back its lent quota by "
                         "preempting the borrowers' workloads")
    elif cell.need > nominal and policy.borrow_within_cohort == "Never" \
            and not engine.config.fair_sharing:
        lines.append(f"it must borrow (needs {_amount(cell.need, fr)}, nominal "
                     f"{_amount(nominal, fr)}) and borrowWithinCohort is Never on "
                     f"ClusterQueue {cq.name}: it only borrows quota left idle")
    if own:
        lower_own = [h for h in own if h.priority < info.priority]
        if policy.within_cluster_queue == "Never":
            lines.append(f"withinClusterQueue is Never: it does not preempt the {len(own)} "
                         f"workload(s) of its own ClusterQueue holding {cell.resource}")
        elif not lower_own and policy.within_cluster_queue == "LowerPriority":
            lines.append("withinClusterQueue is LowerPriority and none of its own "
                         f"ClusterQueue's workloads has a priority below {info.priority}")
    return "; ".join(lines)


def _with_advice(engine: Engine, expl: Explanation, info: WorkloadInfo,
                 cq: ClusterQueueConfig | None) -> Explanation:
    advice = []
    if expl.never is not None and expl.never.reason == inadmissible.LOCAL_QUEUE_NOT_FOUND:
        known = sorted(k for k in engine.cache.local_queues
                       if k.startswith(f"{info.namespace}/"))
        advice.append(f"create LocalQueue {info.local_queue_key}, or submit to one that exists"
                      f" (in {info.namespace}: {', '.join(known) or 'none'})")
    elif expl.never is not None and expl.never.reason == inadmissible.CLUSTER_QUEUE_NOT_FOUND:
        advice.append(f"create the ClusterQueue LocalQueue {info.local_queue_key} points at")
    for resource, close in expl.uncovered:
        covered = sorted({r for g in cq.resource_groups for r in g.covered}) if cq else []
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        advice.append(f"request only resources ClusterQueue {expl.cluster_queue} covers "
                      f"({', '.join(covered)}): {resource} is not one{hint}")
    for _, cells in expl.pod_sets:
        for cell in cells:
            fr = FlavorResource(cell.flavor, cell.resource)
            if cell.need > cell.most:
                advice.append(
                    f"flavor {cell.flavor}: ask for at most {_amount(cell.most, fr)} "
                    f"{cell.resource} in pod set {cell.pod_set}, or raise the quota "
                    f"(nominalQuota, borrowingLimit, the cohort's) by "
                    f"{_amount(cell.need - cell.most, fr)}")
            elif cell.short and expl.never is None:
                holders = [h.key for b in cell.borrowers for h in b.holders]
                advice.append(
                    f"flavor {cell.flavor}: {_amount(cell.short, fr)} more {cell.resource} "
                    "must be free"
                    + (f": borrowers hold it ({_names(holders)}), free once they end or "
                       "are preempted" if holders else ", as the workloads holding it end"))
    if expl.set_aside and expl.position is None:
        advice.append("it is set aside and blocks no one; it is tried again when a queue "
                      "object changes")
    return replace(expl, to_fit=tuple(advice))


def _names(keys: list[str]) -> str:
    shown = keys[:SHOWN_HOLDERS]
    more = len(keys) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _amount(amount: int, fr: FlavorResource) -> str:
    return format_amount(amount, fr.resource)


# -- text ---------------------------------------------------------------------------------

def render(expl: Explanation) -> str:
    """The explanation as the text every surface shows."""
    where = (f" in ClusterQueue {expl.cluster_queue}" if expl.cluster_queue else "") + (
        f" (LocalQueue {expl.local_queue})" if expl.local_queue else "")
    lines = [f"Workload {expl.key} is {expl.state}{where}."]
    if expl.never is not None:
        lines.append(f"It can never be admitted as the queues are configured: "
                     f"{expl.never.text()}")
    if (expl.reason or expl.message) and (expl.never is None
                                          or expl.never.reason != expl.reason):
        label = "Waiting" if expl.state == State.PENDING.value else "Reason"
        lines.append(f"{label}: " + ": ".join(p for p in (expl.reason, expl.message) if p))
    if expl.state != State.PENDING.value:
        return "\n".join(lines) + "\n"
    if expl.position is not None:
        cq_pos, lq_pos = expl.position
        lines.append(f"Position: {cq_pos} of {expl.waiting} in ClusterQueue "
                     f"{expl.cluster_queue}, {lq_pos} in LocalQueue {expl.local_queue} (0 is "
                     "next)" + ("; set aside as inadmissible: it blocks no one, and is "
                                "tried again when a queue object changes"
                                if expl.set_aside else ""))
    for head, cells in expl.pod_sets:
        lines.append(f"Pod set {head}")
        for cell in cells:
            lines.extend(f"  {line}" for line in _cell_lines(cell))
    for resource, _ in expl.uncovered:
        lines.append(f"  {resource}: no resourceGroup of ClusterQueue {expl.cluster_queue} "
                     "covers it")
    if expl.to_fit:
        lines.append("To fit:")
        lines.extend(f"  - {advice}" for advice in expl.to_fit)
    return "\n".join(lines) + "\n"


def _cell_lines(cell: Cell) -> Iterator[str]:
    fr = FlavorResource(cell.flavor, cell.resource)
    yield (f"{cell.resource} in flavor {cell.flavor}: needs {_amount(cell.need, fr)}, "
           f"free {_amount(max(cell.free, 0), fr)}, at most {_amount(cell.most, fr)} ever")
    for level in cell.levels:
        over = level.used - level.quota
        yield (f"  {level.kind} {level.name}: uses {_amount(level.used, fr)} of "
               f"{_amount(level.quota, fr)}"
               + (f" (borrows {_amount(over, fr)})" if over > 0 and level.kind ==
                  "ClusterQueue" else ""))
    for borrower in cell.borrowers:
        named = ", ".join(f"{h.key} ({_amount(h.amount, fr)}, priority {h.priority})"
                          for h in borrower.holders[:SHOWN_HOLDERS])
        more = len(borrower.holders) - SHOWN_HOLDERS
        yield (f"  borrowed by ClusterQueue {borrower.cluster_queue} "
               f"({_amount(borrower.borrowed, fr)} above its nominal quota): {named}"
               + (f" and {more} more" if more > 0 else ""))
    if cell.preemption:
        yield f"  preemption: {cell.preemption}"
