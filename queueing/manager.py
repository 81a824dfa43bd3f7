"""Routing waiting workloads to their ClusterQueue's pending queue.

A workload names a LocalQueue in its namespace; the LocalQueue names a
ClusterQueue. A workload whose LocalQueue or ClusterQueue does not exist (yet)
is *parked* with the reason, and routed as soon as a config change makes the
route exist — objects may arrive in any order.

After a workload holding quota releases it, everything blocked in the same
cohort tree may now fit: :meth:`QueueManager.quota_freed` unblocks the queues
of every ClusterQueue in that tree. Config changes unblock everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from queueing.pending import PendingQueue
from quota.config import ClusterQueueConfig, LocalQueueConfig
from quota.values import value
from quota.workload import WorkloadInfo


@value
class Head:
    info: WorkloadInfo
    cluster_queue: str
    local_queue: LocalQueueConfig
    #: The queue-order timestamp: creation, or the last eviction when the requeuing
    #: strategy says so (Kueue's ``GetQueueOrderTimestamp``). FIFO among heads uses it.
    timestamp: float = 0.0
    #: It evicted workloads to make room and waits for them to stop (its queue pinned it).
    preemptor: bool = False


@dataclass(slots=True)
class _Waiting:
    info: WorkloadInfo
    timestamp: float
    cluster_queue: str | None = None


@dataclass(eq=False)
class QueueManager:
    queues: dict[str, PendingQueue] = field(default_factory=dict)
    local_queues: dict[str, LocalQueueConfig] = field(default_factory=dict)
    #: Every waiting workload, routed or parked.
    waiting: dict[str, _Waiting] = field(default_factory=dict)
    #: Parked workloads → (reason, message).
    parked: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: ClusterQueues that may have something blocked (a superset): a release wakes only
    #: these, not every queue of the cohort tree.
    _blocked: set[str] = field(default_factory=set)
    #: Waiting workloads by LocalQueue key: a config change routes again only those its
    #: change may concern.
    _by_local_queue: dict[str, set[str]] = field(default_factory=dict)
    #: ClusterQueues that may have a head to try (a superset: one found without is
    #: dropped, one given a workload or an unblock is added — a pin is of a head just
    #: found): a cycle looks at these only, not at every queue — with 1,000 ClusterQueues,
    #: most are blocked or empty.
    _ready: set[str] = field(default_factory=set)
    #: Each ClusterQueue's place in :attr:`queues`: heads come in that order.
    _order: dict[str, int] = field(default_factory=dict)

    def configure(self, cluster_queues: Iterable[ClusterQueueConfig],
                  local_queues: Iterable[LocalQueueConfig]) -> None:
        """Adopt new queue configs, unblock all, and route again the waiting workloads whose
        route may have changed: those of a LocalQueue added, removed or pointed elsewhere, or
        of one whose ClusterQueue's pending queue is new (a queue added, made again, or given
        another strategy: an old queue's workloads move into the new one). A change of quota
        alone routes nothing again: 20,000 waiting workloads cost each such change 13 ms."""
        wanted = {cq.name: cq.queueing_strategy for cq in cluster_queues}
        renewed: set[str] = set()
        for name in list(self.queues):
            if name not in wanted or self.queues[name].strategy != wanted[name]:
                del self.queues[name]
                renewed.add(name)
        for name, strategy in wanted.items():
            if name not in self.queues:
                self.queues[name] = PendingQueue(name, strategy)
                renewed.add(name)
        self._order = {name: i for i, name in enumerate(self.queues)}
        self._ready = set(self.queues)
        before, self.local_queues = self.local_queues, {lq.key: lq for lq in local_queues}
        # (the configs kept are the same objects: compared by identity first, as 1,000
        # LocalQueues compared field by field took a third of a quota change's time)
        moved = {key for key in before.keys() | self.local_queues.keys()
                 if (old := before.get(key)) is not (new := self.local_queues.get(key))
                 and old != new}
        if renewed:
            moved |= {key for key, lq in (before | self.local_queues).items()
                      if lq.cluster_queue in renewed}
        self.unblock(set(self._blocked))  # (only queues that may hold something blocked)
        for lq_key in moved:
            for key in list(self._by_local_queue.get(lq_key, ())):
                self._route(self.waiting[key])

    def push(self, info: WorkloadInfo, timestamp: float) -> None:
        if info.key in self.waiting:
            self.remove(info.key)
        entry = self.waiting[info.key] = _Waiting(info, timestamp)
        self._by_local_queue.setdefault(info.local_queue_key, set()).add(info.key)
        self._route(entry)

    def remove(self, key: str) -> WorkloadInfo | None:
        entry = self.waiting.pop(key, None)
        self.parked.pop(key, None)
        if entry is None:
            return None
        lq_key = entry.info.local_queue_key
        keys = self._by_local_queue[lq_key]
        keys.discard(key)
        if not keys:
            del self._by_local_queue[lq_key]
        if entry.cluster_queue in self.queues:
            self.queues[entry.cluster_queue].remove(key)
        return entry.info

    def heads(self, first: str | None = None) -> list[Head]:
        """One head per ClusterQueue that has one to try, in the queues' order; from
        ClusterQueue ``first`` on, then round, if given (a cycle cut short goes on where
        it stopped, whether or not that queue has a head now)."""
        order = self._order
        start = order.get(first, 0) if first is not None else 0
        # (the queues' order by itself unless rotated: a key per queue costs every cycle)
        key = order.__getitem__ if not start else lambda n: (order[n] < start, order[n])
        heads = []
        for name in sorted(self._ready, key=key):
            queue = self.queues[name]
            info = queue.head() if queue else None
            if info is None:
                self._ready.discard(name)  # (until a workload or an unblock comes)
                continue
            heads.append(Head(info, name, self.local_queues[info.local_queue_key],
                              self.waiting[info.key].timestamp,
                              preemptor=queue.pinned == info.key))
        return heads

    def block(self, head: Head, reason: str, message: str) -> None:
        self.queues[head.cluster_queue].block(head.info, reason, message)
        self._blocked.add(head.cluster_queue)

    def pin(self, head: Head) -> None:
        """``head`` preempted to make room: it is its queue's next head (see PendingQueue)."""
        queue = self.queues.get(head.cluster_queue)
        if queue is not None:
            queue.pin(head.info.key)

    def unblock(self, cluster_queues: Iterable[str], *, quota_freed: bool = False) -> None:
        wanted = cluster_queues if isinstance(cluster_queues, AbstractSet) else set(cluster_queues)
        for name in self._blocked & wanted:
            queue = self.queues.get(name)
            if queue is not None:
                queue.unblock(quota_freed=quota_freed)
                self._ready.add(name)
            if queue is None or not queue.stuck:
                self._blocked.discard(name)

    def why_waiting(self, key: str) -> tuple[str, str] | None:
        """(reason, message) for a parked or blocked workload; None if it is up for a try."""
        if key in self.parked:
            return self.parked[key]
        queued = self._queued(key)
        return queued[0].why_blocked(queued[1]) if queued is not None else None

    def set_aside(self, key: str) -> tuple[str, str] | None:
        """(reason, message) when waiting workload ``key`` is inadmissible and blocks no one:
        parked (no route to a ClusterQueue) or refused for a reason no freed quota cures
        (:meth:`PendingQueue.set_aside`); None when it is in line to run."""
        if key in self.parked:
            return self.parked[key]
        queued = self._queued(key)
        return queued[0].set_aside(queued[1]) if queued is not None else None

    def set_aside_class(self, key: str, reason: str, message: str) -> None:
        """Set the class of waiting workload ``key`` aside before it is tried: it can never
        fit as configured (:mod:`admission.inadmissible`). Only a BestEffortFIFO queue steps
        a class aside; a StrictFIFO queue keeps it in line (its head holds the queue)."""
        queued = self._queued(key)
        if queued is None or queued[0].strategy == "StrictFIFO":
            return
        queued[0].block(queued[1], reason, message)
        self._blocked.add(queued[0].name)

    def classes(self) -> Iterator[WorkloadInfo]:
        """One waiting member of each class of equal workloads not blocked, in the
        BestEffortFIFO queues only (those that may set a class aside)."""
        for queue in self.queues.values():
            if queue.strategy != "StrictFIFO":
                yield from queue.classes()

    def members(self, key: str) -> list[str]:
        """The keys of the waiting workloads of the same class as waiting workload ``key``."""
        queued = self._queued(key)
        return queued[0].members(queued[1]) if queued is not None else []

    def _queued(self, key: str) -> tuple[PendingQueue, WorkloadInfo] | None:
        """The pending queue waiting workload ``key`` is routed to, and its info."""
        entry = self.waiting.get(key)
        if entry is None or entry.cluster_queue not in self.queues:
            return None
        return self.queues[entry.cluster_queue], entry.info

    def positions(self, cluster_queue: str) -> Iterator[tuple[WorkloadInfo, int, int]]:
        """Waiting workloads of a ClusterQueue in admission order, each with its
        0-based position in the ClusterQueue and in its LocalQueue (for visibility): those
        set aside as inadmissible (:meth:`set_aside`) come last."""
        queue = self.queues.get(cluster_queue)
        if queue is None:
            return
        in_local: dict[str, int] = {}
        for position, info in enumerate(queue.ordered()):
            lq = info.local_queue_key
            yield info, position, in_local.get(lq, 0)
            in_local[lq] = in_local.get(lq, 0) + 1

    def cluster_queue_of(self, key: str) -> str | None:
        entry = self.waiting.get(key)
        return entry.cluster_queue if entry else None

    def _route(self, entry: _Waiting) -> None:
        """Put a waiting workload in its ClusterQueue's pending queue, or park it with why."""
        info = entry.info
        lq = self.local_queues.get(info.local_queue_key)
        target = lq.cluster_queue if lq is not None and lq.cluster_queue in self.queues \
            else None
        if entry.cluster_queue is not None:
            current = self.queues.get(entry.cluster_queue)
            if entry.cluster_queue == target and current is not None and info.key in current:
                return  # where it belongs already
            if current is not None:
                current.remove(info.key)
            entry.cluster_queue = None
        if lq is None:
            self.parked[info.key] = ("LocalQueueNotFound",
                                     f"LocalQueue {info.queue_name} doesn't exist in namespace "
                                     f"{info.namespace}")
            return
        if target is None:
            self.parked[info.key] = ("ClusterQueueNotFound",
                                     f"ClusterQueue {lq.cluster_queue} (of LocalQueue "
                                     f"{info.local_queue_key}) doesn't exist")
            return
        self.parked.pop(info.key, None)
        entry.cluster_queue = target
        self.queues[target].push(info, entry.timestamp)
        self._ready.add(target)
