"""The engine: the quota cache, the queues and the lifecycle, driven by events.

Adapters (the simulator, the Redis scheduler service, the Kubernetes
operator) feed it events — configs applied or deleted, workloads submitted,
finished or cancelled — and call :meth:`Engine.schedule` to run a cycle. It
never reads a clock: every call carries ``now``.

A cycle's admissions are *assumed* at once (usage counted in the cache, the
workload's state moved to QuotaReserved/Admitted); an adapter that then
fails to persist one calls :meth:`Engine.forget` to put it back in its queue.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from admission.cycle import CycleResult, schedule
from queueing.manager import QueueManager
from quota import lifecycle
from quota.cache import QuotaCache
from quota.config import ClusterQueueConfig, CohortConfig, FlavorConfig, LocalQueueConfig
from quota.lifecycle import Event, State
from quota.workload import Admission, WorkloadInfo

ConfigObject = FlavorConfig | ClusterQueueConfig | CohortConfig | LocalQueueConfig


@dataclass(slots=True)
class Record:
    """Everything the engine knows about one workload."""

    info: WorkloadInfo
    state: State = State.PENDING
    admission: Admission | None = None
    admitted_at: float | None = None
    pending_reason: str | None = None
    pending_message: str | None = None


@dataclass(eq=False)
class Engine:
    cache: QuotaCache = field(default_factory=QuotaCache)
    queues: QueueManager = field(default_factory=QueueManager)
    records: dict[str, Record] = field(default_factory=dict)

    # -- configuration -------------------------------------------------------
    def apply(self, obj: ConfigObject) -> None:
        if isinstance(obj, FlavorConfig):
            self.cache.set_flavor(obj)
        elif isinstance(obj, ClusterQueueConfig):
            self.cache.set_cluster_queue(obj)
        elif isinstance(obj, CohortConfig):
            self.cache.set_cohort(obj)
        else:
            self.cache.set_local_queue(obj)
        self._reconfigure()

    def apply_all(self, objects: Iterable[ConfigObject]) -> None:
        for obj in objects:
            self.apply(obj)

    def delete(self, kind: str, name: str) -> None:
        """Delete a config by kind and name (``namespace/name`` for LocalQueues)."""
        deleters = {"ResourceFlavor": self.cache.delete_flavor,
                    "ClusterQueue": self.cache.delete_cluster_queue,
                    "Cohort": self.cache.delete_cohort,
                    "LocalQueue": self.cache.delete_local_queue}
        if kind not in deleters:
            raise ValueError(f"cannot delete unknown kind {kind!r}")
        deleters[kind](name)
        self._reconfigure()

    def set_namespace(self, name: str, labels: dict[str, str]) -> None:
        self.cache.set_namespace(name, labels)
        self._reconfigure()

    def _reconfigure(self) -> None:
        self.queues.configure(self.cache.cluster_queues.values(),
                              self.cache.local_queues.values())
        self._refresh_parked()

    # -- workloads -----------------------------------------------------------
    def submit(self, info: WorkloadInfo) -> Record:
        """A new workload waits in its queue, ordered by ``info.created``."""
        if info.key in self.records and self.records[info.key].state is not State.FINISHED:
            raise ValueError(f"workload {info.key} already exists")
        record = self.records[info.key] = Record(info)
        self.queues.push(info, info.created)
        self._note_waiting(record)
        return record

    def finish(self, key: str, now: float) -> Record:
        """The workload ended (or was cancelled): release its quota."""
        record = self._record(key)
        record.state = lifecycle.transition(key, record.state, Event.FINISH)
        self.queues.remove(key)
        self._release(key)
        record.pending_reason = record.pending_message = None
        return record

    def forget(self, key: str, now: float) -> Record:
        """A reservation could not be persisted: give the quota back and requeue."""
        record = self._record(key)
        record.state = lifecycle.transition(key, record.state, Event.RELEASE)
        self._release(key)
        record.admission = None
        record.admitted_at = None
        self.queues.push(record.info, record.info.created)
        self._note_waiting(record)
        return record

    def _release(self, key: str) -> None:
        entry = self.cache.forget(key)
        if entry is None:
            return
        node = self.cache.tree.queues.get(entry.admission.cluster_queue)
        if node is None:
            return
        root = node.root()
        self.queues.unblock(n.name for n in self.cache.tree.members(root) if not n.is_cohort)

    # -- scheduling ----------------------------------------------------------
    def schedule(self, now: float) -> CycleResult:
        """Run one cycle and apply its result to the cache and the queues."""
        heads = self.queues.heads()
        if not heads:
            return CycleResult()
        result = schedule(self.cache.snapshot(), heads, self.cache.namespace_labels)
        for head, admission in result.admitted:
            record = self.records[head.info.key]
            self.queues.remove(head.info.key)
            self.cache.assume(head.info, admission, now)
            record.state = lifecycle.transition(head.info.key, record.state, Event.RESERVE)
            record.state = lifecycle.transition(head.info.key, record.state, Event.ADMIT)
            record.admission = admission
            record.admitted_at = now
            record.pending_reason = record.pending_message = None
        for verdict in result.inadmissible:
            self.queues.block(verdict.head, verdict.reason, verdict.message)
            record = self.records[verdict.head.info.key]
            record.pending_reason, record.pending_message = verdict.reason, verdict.message
        for verdict in result.skipped:
            record = self.records[verdict.head.info.key]
            record.pending_reason, record.pending_message = verdict.reason, verdict.message
        return result

    def run_until_idle(self, now: float, max_cycles: int = 1_000_000) -> list[CycleResult]:
        """Cycle until no head is left to try; returns the cycles that did something."""
        results = []
        for _ in range(max_cycles):
            result = self.schedule(now)
            if result.tried == 0:
                break
            results.append(result)
        return results

    # -- queries -------------------------------------------------------------
    def pending(self) -> list[Record]:
        return [r for r in self.records.values() if r.state is State.PENDING]

    def _record(self, key: str) -> Record:
        try:
            return self.records[key]
        except KeyError:
            raise KeyError(f"unknown workload {key}") from None

    def _note_waiting(self, record: Record) -> None:
        why = self.queues.why_waiting(record.info.key)
        if why is not None:
            record.pending_reason, record.pending_message = why
        elif record.pending_reason is None:
            record.pending_reason, record.pending_message = "Pending", "waiting for a try"

    def _refresh_parked(self) -> None:
        for key, why in self.queues.parked.items():
            record = self.records.get(key)
            if record is not None:
                record.pending_reason, record.pending_message = why


def with_timestamp(info: WorkloadInfo, created: float) -> WorkloadInfo:
    """A copy of ``info`` ordered by ``created`` (requeue by eviction time)."""
    return dataclasses.replace(info, created=created)
