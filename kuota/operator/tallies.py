"""What each queue holds and what waits in it, counted once for the statuses and metrics.

Every status sync (a second) the operator writes the ClusterQueue and LocalQueue
statuses that changed and sets the queue gauges; the Redis-mode scheduler sets the same
gauges. Both report the same figures — waiting, reserving and admitted workloads, and
per flavor and resource the quota reserved and used — so they are counted once:

* a ClusterQueue's in one pass over the workloads holding its quota
  (:func:`cluster_queue`), its waiting and blocked counts from its pending queue;
* every LocalQueue's in one pass over the engine's records (:func:`local_queues`),
  usage summed as it goes.

With 1,000 ClusterQueues, their LocalQueues and 50,000 workloads, a sync that writes
nothing took 124–132 ms of the operator's event loop when each was counted apart (the
statuses, then the gauges, lists of admissions summed afterwards), and 82–88 ms counted
once. :class:`Tallies` keeps the counts between syncs and counts again only the queues
the engine stamped since (:mod:`admission.changes`): a LocalQueue over its own
workloads, not every record; a sync where nothing changed counts nothing
(``benchmarks/operator_at_scale.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from quota.lifecycle import HOLDS_QUOTA, State
from quota.resources import Amount, FlavorResource

if TYPE_CHECKING:
    from admission.engine import Engine, Record
    from quota.config import ClusterQueueConfig

#: Per quota cell: flavor-resource, reserved, used (by admitted workloads), nominal,
#: borrowing limit, lending limit — in milli-units, as the quota tree counts.
Cell = tuple[FlavorResource, Amount, Amount, Amount, Amount | None, Amount | None]


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """A ClusterQueue's figures (equal figures: nothing to report anew)."""

    waiting: int
    #: Of those waiting, how many are set aside for a reason (Kueue's "inadmissible").
    blocked: int
    reserving: int
    admitted: int
    active: bool
    #: In the order of the queue's quotas.
    cells: tuple[Cell, ...]

    def reserved(self) -> dict[FlavorResource, Amount]:
        return {cell[0]: cell[1] for cell in self.cells}

    def used(self) -> dict[FlavorResource, Amount]:
        return {cell[0]: cell[2] for cell in self.cells}

    def nominal(self) -> dict[FlavorResource, Amount]:
        return {cell[0]: cell[3] for cell in self.cells}


def cluster_queue(engine: Engine, cq: ClusterQueueConfig) -> QueueFigures:
    """``cq``'s figures, from one pass over the workloads holding its quota."""
    return _figures(engine, cq, _holding(engine, cq))


@dataclass(frozen=True, slots=True)
class _Holding:
    """What the workloads holding a ClusterQueue's quota add up to."""

    reserving: int
    admitted: int
    #: In the order of the queue's quotas.
    reserved: tuple[Amount, ...]
    used: tuple[Amount, ...]


def _holding(engine: Engine, cq: ClusterQueueConfig) -> _Holding:
    holding = engine.cache.workloads.get(cq.name, {})
    records = engine.records
    admitted = 0
    reserved: dict[FlavorResource, Amount] = dict.fromkeys(cq.quotas, 0)
    used = dict(reserved)
    for key, entry in holding.items():
        record = records.get(key)
        is_admitted = record is not None and record.state is State.ADMITTED
        admitted += is_admitted
        for fr, amount in entry.admission.usage().items():
            if fr in reserved:
                reserved[fr] += amount
                if is_admitted:
                    used[fr] += amount
    return _Holding(len(holding), admitted, tuple(reserved.values()), tuple(used.values()))


def _waiting(engine: Engine, cq: ClusterQueueConfig) -> tuple[int, int, bool]:
    """``cq``'s waiting and blocked workloads, and whether it is active: each one lookup."""
    queue = engine.queues.queues.get(cq.name)
    if queue is None:
        return 0, 0, cq.name not in engine.cache.inactive
    return len(queue), queue.blocked_count(), cq.name not in engine.cache.inactive


def _figures(engine: Engine, cq: ClusterQueueConfig, held: _Holding,
             waiting: tuple[int, int, bool] | None = None) -> QueueFigures:
    count, blocked, active = waiting or _waiting(engine, cq)
    return QueueFigures(
        waiting=count, blocked=blocked, reserving=held.reserving, admitted=held.admitted,
        active=active,
        cells=tuple((fr, reserved, used, quota.nominal, quota.borrowing_limit,
                     quota.lending_limit) for (fr, quota), reserved, used in zip(
                         cq.quotas.items(), held.reserved, held.used, strict=True)))


@dataclass
class LocalQueueTally:
    """One LocalQueue's workloads: counts, and the quota they reserve and use."""

    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reserved: dict[FlavorResource, Amount] = field(default_factory=dict)
    used: dict[FlavorResource, Amount] = field(default_factory=dict)


#: The tally of a LocalQueue without workloads (compared with, never changed).
NO_WORKLOADS = LocalQueueTally()


def local_queues(engine: Engine) -> dict[str, LocalQueueTally]:
    """Every LocalQueue's tally (``namespace/name``), from one pass over the records."""
    tallies: dict[str, LocalQueueTally] = {}
    for record in engine.records.values():
        lq = record.info.local_queue_key
        _count(tallies.get(lq) or tallies.setdefault(lq, LocalQueueTally()), record)
    return {key: tally for key, tally in tallies.items() if tally != NO_WORKLOADS}


def _count(tally: LocalQueueTally, record: Record) -> None:
    """Add ``record`` to its LocalQueue's ``tally``: waiting, or holding quota."""
    state, admission = record.state, record.admission
    if state is State.PENDING:
        tally.pending += 1
        return
    if admission is None or state not in HOLDS_QUOTA:
        return  # (finished, inactive, or not holding quota any more)
    tally.reserving += 1
    is_admitted = state is State.ADMITTED
    tally.admitted += is_admitted
    for fr, amount in admission.usage().items():
        tally.reserved[fr] = tally.reserved.get(fr, 0) + amount
        if is_admitted:
            tally.used[fr] = tally.used.get(fr, 0) + amount


class Tallies:
    """Every queue's figures, kept between syncs: a queue is counted again only when the
    engine stamped it since (:mod:`admission.changes`) or its config changed; otherwise
    the very object counted before is returned, so a caller can compare by identity.
    One per reader (the operator's status sync, the Redis scheduler's gauges)."""

    def __init__(self) -> None:
        self._engine: Engine | None = None
        #: ClusterQueue -> (stamp, config, holding, figures) when last counted.
        self._cluster_queues: dict[str, tuple[int, ClusterQueueConfig, _Holding,
                                              QueueFigures]] = {}
        #: LocalQueue key -> (stamp, tally) when last counted.
        self._local_queues: dict[str, tuple[int, LocalQueueTally]] = {}

    def _reading(self, engine: Engine) -> None:
        if engine is not self._engine:  # another engine (a rebuild): its stamps start anew
            self._engine = engine
            self._cluster_queues.clear()
            self._local_queues.clear()

    def cluster_queues(self, engine: Engine) -> dict[str, QueueFigures]:
        """Every ClusterQueue's figures."""
        self._reading(engine)
        stamps, kept = engine.changes.cluster_queues, self._cluster_queues
        out = {}
        for name, cq in engine.cache.cluster_queues.items():
            stamp = stamps.get(name, 0)
            last = kept.get(name)
            waiting = _waiting(engine, cq)  # read afresh: one lookup each
            if last is not None and last[0] == stamp and last[1] is cq:
                figures = last[3]
                if (figures.waiting, figures.blocked, figures.active) != waiting:
                    figures = _figures(engine, cq, last[2], waiting)
                    kept[name] = (stamp, cq, last[2], figures)
            else:
                held = _holding(engine, cq)
                figures = _figures(engine, cq, held, waiting)
                if last is not None and last[3] == figures:
                    figures = last[3]
                kept[name] = (stamp, cq, held, figures)
            out[name] = figures
        for name in [n for n in kept if n not in engine.cache.cluster_queues]:
            del kept[name]
        return out

    def local_queues(self, engine: Engine) -> dict[str, LocalQueueTally]:
        """The tally of every LocalQueue with workloads counted (``namespace/name``); one
        without any is absent."""
        self._reading(engine)
        changes, records, kept = engine.changes, engine.records, self._local_queues
        for lq, stamp in changes.local_queues.items():
            last = kept.get(lq)
            if last is not None and last[0] == stamp:
                continue
            tally = LocalQueueTally()
            for key in changes.members.get(lq, ()):
                record = records.get(key)
                if record is not None:
                    _count(tally, record)
            if last is not None and last[1] == tally:
                tally = last[1]
            kept[lq] = (stamp, tally)
        return {lq: tally for lq, (_, tally) in kept.items() if tally != NO_WORKLOADS}
