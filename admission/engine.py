"""The engine: the quota cache, the queues and the lifecycle, driven by events.

Adapters (the simulator, the Redis scheduler service, the Kubernetes
operator) feed it events — configs applied or deleted, workloads submitted,
finished, pods ready, admission-check verdicts — and call
:meth:`Engine.schedule` to run a cycle. It never reads a clock: every call
carries ``now``; randomness (requeue jitter) comes from an injected
``random.Random``.

Every lifecycle change is also appended to :attr:`Engine.outbox` as a
:class:`~admission.events.WorkloadEvent`; adapters drain it and apply each
event to their store.

* **Assume.** A cycle's admissions are counted in the cache at once; an
  adapter that fails to persist one calls :meth:`Engine.forget`.
* **Evict.** Preemption victims, workloads whose pods are not ready in time
  (``waitForPodsReady``), workloads of a draining queue (``HoldAndDrain``)
  and admission checks asking to retry release their quota and wait again.
  Pods-ready evictions back off exponentially; past ``backoffLimitCount``
  the workload is deactivated (``RequeuingLimitExceeded``).
* **Stopping takes time.** With ``wait_for_stop`` (the Kubernetes operator and
  the Redis scheduler: pods terminate gracefully) an eviction or a deactivation of a workload
  holding quota only marks it *Evicting* (event ``EVICTING``): its quota
  stays counted — a preemptor waits for it — until the adapter reports its
  pods gone with :meth:`Engine.stopped`; then it is released and requeued
  (``EVICTED``) or deactivated (``DEACTIVATED``). Preemption prefers victims
  already being evicted, and evicting one again changes nothing.
* **Admission checks.** When a ClusterQueue lists AdmissionChecks, a
  workload holding quota stays *QuotaReserved* until every check that
  applies to its flavors is Ready; ``Retry`` releases the quota and requeues
  it, ``Rejected`` deactivates it. Controllers plug in through
  :class:`CheckController`.
* **Maximum execution time.** A workload admitted, over all its admissions, for its
  ``maximumExecutionTimeSeconds`` is deactivated (``MaximumExecutionTimeExceeded``;
  :mod:`admission.execution`).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from admission import backoff, execution
from admission.changes import Changes
from admission.claims import Claims
from admission.cycle import CycleResult, schedule
from admission.errors import blame
from admission.events import Kind, WorkloadEvent
from admission.inadmissible import NeverFits, Verdict
from admission.topology import TopologyState
from queueing.manager import QueueManager
from quota import lifecycle
from quota.cache import QuotaCache
from quota.config import (
    AdmissionCheckConfig,
    ClusterQueueConfig,
    CohortConfig,
    EngineConfig,
    FlavorConfig,
    LocalQueueConfig,
)
from quota.lifecycle import HOLDS_QUOTA, Event, State
from quota.workload import Admission, WorkloadInfo

ConfigObject = (FlavorConfig | ClusterQueueConfig | CohortConfig | LocalQueueConfig
                | AdmissionCheckConfig)

# Admission check states, as in Kueue.
PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"
#: The pending reason of a workload queued but not tried yet: it tells nothing a status or
#: a record does not say already (the operator and the Redis leader write none for it).
UNTRIED = "Pending"


class CheckController(Protocol):
    """Runs one kind of AdmissionCheck (selected by the check's controllerName).

    ``reserved`` is called when a workload reserves quota in a ClusterQueue that
    requires the check; it may answer at once (Ready/Retry/Rejected) or return
    None and report later through :meth:`Engine.set_check`.
    """

    def reserved(self, record: Record, check: AdmissionCheckConfig,
                 now: float) -> tuple[str, str] | None: ...


@dataclass(slots=True)
class Eviction:
    at: float
    reason: str
    detail: str = ""
    message: str = ""


@dataclass(slots=True)
class Record:
    """Everything the engine knows about one workload."""

    info: WorkloadInfo
    state: State = State.PENDING
    admission: Admission | None = None
    admitted_at: float | None = None
    pending_reason: str | None = None
    pending_message: str | None = None
    evictions: list[Eviction] = field(default_factory=list)
    #: Pods-ready evictions so far (drives the backoff).
    requeue_count: int = 0
    #: While backing off: when the workload may be tried again.
    requeue_at: float | None = None
    pods_ready: bool = False
    #: Admission check name -> (state, message), while quota is reserved.
    checks: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: While Evicting because of a deactivation: its (reason, message), applied once stopped.
    deactivation: tuple[str, str] | None = None
    #: Evicting because it ended (:meth:`Engine.finishing`): finished once its pods are gone.
    ending: bool = False
    #: Its place in line when not its creation: the time of an eviction that sends it to
    #: the back (see :meth:`Engine._requeue_evicted`).
    queue_order: float | None = None


@dataclass(eq=False)
class Engine:
    config: EngineConfig = field(default_factory=EngineConfig)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    cache: QuotaCache = field(default_factory=QuotaCache)
    queues: QueueManager = field(default_factory=QueueManager)
    records: dict[str, Record] = field(default_factory=dict)
    controllers: dict[str, CheckController] = field(default_factory=dict)
    outbox: list[WorkloadEvent] = field(default_factory=list)
    #: Which queues' workloads changed, for the statuses and gauges (:mod:`admission.changes`).
    changes: Changes = field(default_factory=Changes)
    #: Nodes and topologies for topology-aware flavors.
    topology: TopologyState = field(default_factory=TopologyState)
    #: Admitted workloads whose pods are not ready yet -> deadline (waitForPodsReady).
    _unready: dict[str, float] = field(default_factory=dict)
    #: Workloads backing off after a pods-ready eviction -> when they requeue.
    _backing_off: dict[str, float] = field(default_factory=dict)
    #: Keep an evicted workload's quota until :meth:`stopped` (see the module docstring).
    wait_for_stop: bool = False
    #: Workloads in state Evicting.
    _evicting: set[str] = field(default_factory=set)
    #: With ``wait_for_stop``: what preemptors waiting for their victims will take
    #: (:mod:`admission.claims`).
    _claims: Claims = field(default_factory=Claims)
    #: The ClusterQueue whose head the last cycle, cut short, left untried: the next cycle
    #: nominates from it (:meth:`schedule`'s ``enough``).
    _resume_at: str | None = None
    #: Open :meth:`configuring` blocks: the queues are reconfigured when the last closes.
    _configuring: int = 0
    #: The ClusterQueues and LocalQueues whose stopPolicy is HoldAndDrain, and the config
    #: generation they were found at (every cycle used to look through them all).
    _draining: tuple[int, tuple[str, ...], frozenset[str]] = (-1, (), frozenset())
    #: Which workloads can never fit as configured (:mod:`admission.inadmissible`).
    _never_fits: NeverFits = field(default_factory=NeverFits)
    #: Time admitted, for the workloads with a maximum execution time.
    _executions: execution.ExecutionTimes = field(default_factory=execution.ExecutionTimes)

    # -- configuration -------------------------------------------------------
    def apply(self, obj: ConfigObject) -> None:
        self._set(obj)
        if not self._configuring:
            self._reconfigure()

    def apply_all(self, objects: Iterable[ConfigObject]) -> None:
        """Apply many objects with one tree rebuild and one queue reconfiguration."""
        with self.configuring():
            for obj in objects:
                self._set(obj)

    @contextmanager
    def configuring(self) -> Iterator[None]:
        """Within it, :meth:`apply` and :meth:`delete` take effect at its end, with one tree
        rebuild and one queue reconfiguration: N objects cost O(N), not N rebuilds of
        everything (an operator leading anew with 1,000 ClusterQueues took 3.6 CPU s)."""
        self._configuring += 1
        try:
            with self.cache.deferred():
                yield
        finally:
            self._configuring -= 1
            if not self._configuring:
                self._reconfigure()

    def _set(self, obj: ConfigObject) -> None:
        if isinstance(obj, FlavorConfig):
            self.cache.set_flavor(obj)
        elif isinstance(obj, ClusterQueueConfig):
            self.cache.set_cluster_queue(obj)
        elif isinstance(obj, CohortConfig):
            self.cache.set_cohort(obj)
        elif isinstance(obj, AdmissionCheckConfig):
            self.cache.set_admission_check(obj)
        else:
            self.cache.set_local_queue(obj)

    def delete(self, kind: str, name: str) -> None:
        """Delete a config by kind and name (``namespace/name`` for LocalQueues)."""
        deleters = {"ResourceFlavor": self.cache.delete_flavor,
                    "ClusterQueue": self.cache.delete_cluster_queue,
                    "Cohort": self.cache.delete_cohort,
                    "LocalQueue": self.cache.delete_local_queue,
                    "AdmissionCheck": self.cache.delete_admission_check}
        if kind not in deleters:
            raise ValueError(f"cannot delete unknown kind {kind!r}")
        deleters[kind](name)
        if not self._configuring:
            self._reconfigure()

    def set_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self.cache.set_namespace(name, labels)
        self._reconfigure()

    def _reconfigure(self) -> None:
        self.queues.configure(self.cache.cluster_queues.values(),
                              self.cache.local_queues.values())
        for key, why in self.queues.parked.items():
            record = self.records.get(key)
            if record is not None:
                record.pending_reason, record.pending_message = why
                self.changes.reasons += 1
        # What can never fit as now configured is set aside again at once (the queues
        # unblocked everything): one check per class of equal workloads, not per workload.
        for info in list(self.queues.classes()):
            never = self.never_fits(info)
            if never is None:
                continue
            self.queues.set_aside_class(info.key, never.reason, never.message)
            for key in self.queues.members(info.key):
                self._note(key, never.reason, never.message)

    # -- workloads -----------------------------------------------------------
    def never_fits(self, info: WorkloadInfo) -> Verdict | None:
        """Why ``info`` could never be admitted as the queues are configured now, or None:
        the same verdict (and its per-configuration cache) a submitted workload gets."""
        return self._never_fits.check(info, self.cache)

    def submit(self, info: WorkloadInfo) -> Record:
        """A new workload waits in its queue, ordered by ``info.created``."""
        if info.key in self.records and self.records[info.key].state is not State.FINISHED:
            raise ValueError(f"workload {info.key} already exists")
        record = self.records[info.key] = Record(info)
        self.changes.entered(info)
        self._enqueue(record)
        return record

    def finish(self, key: str, now: float, message: str = "") -> Record:
        """The workload ended (or was cancelled): release its quota."""
        record = self._record(key)
        self._to(record, Event.FINISH)
        self.queues.remove(key)
        self._release(key)
        self._claims.drop(key)
        self.changes.left(record.info)
        self._stop_timers(record, now)
        self._executions.forget(key)
        self._evicting.discard(key)
        record.deactivation = None
        record.pending_reason = record.pending_message = None
        self._emit(now, record, Kind.FINISHED, message=message)
        return record

    def finishing(self, key: str, now: float) -> Record:
        """The workload ended (cancelled, or failed for good) but its pods still stop: with
        ``wait_for_stop`` it stays Evicting, holding its quota, until :meth:`finish`. No
        event: the adapter reports the finish. Others are left as they are."""
        record = self._record(key)
        if not self.wait_for_stop or record.state not in HOLDS_QUOTA \
                or record.state is State.EVICTING:
            return record
        self._to(record, Event.STOP)
        self._evicting.add(key)
        self._stop_timers(record, now)
        record.pods_ready = False
        record.ending = True
        return record

    def restore(self, info: WorkloadInfo, admission: Admission, at: float, *,
                admitted: bool = True, checks: Mapping[str, tuple[str, str]] | None = None,
                now: float | None = None, admitted_at: float | None = None) -> Record:
        """Re-enter a workload that already holds quota in a store (after a restart or a
        takeover): usage counted, no decision made.

        The reserve step without the decision: the lifecycle is walked through the
        table to QuotaReserved (and Admitted when ``admitted``). A workload restored
        in QuotaReserved still waits for its admission checks: their stored states
        (``checks``: name -> (state, message); missing ones are Pending) are kept,
        and the controllers of the Pending ones are asked again — the verdict they
        had not given yet was lost with the previous process. If every check is
        already Ready (the admission was decided but not stored), it is admitted now.
        ``admitted_at``: when the admission began (its time counts against a maximum
        execution time), if not ``at``.
        """
        record = self.records.get(info.key)
        if record is None or record.state is State.FINISHED:
            record = self.submit(info)
        self.queues.remove(info.key)
        self.cache.assume(info, admission, at)
        self.topology.assume(info.pod_sets, admission)
        self._to(record, Event.RESERVE)
        record.admission, record.admitted_at = admission, at
        self.changes.touch_cluster_queue(admission.cluster_queue)
        record.pending_reason = record.pending_message = None
        if admitted:
            self._to(record, Event.ADMIT)
            self._executions.started(info, at if admitted_at is None else admitted_at)
            return record
        now = at if now is None else now
        stored = checks or {}
        required = self._checks_for(admission)
        record.checks = {c.name: stored[c.name] if stored.get(c.name, ("",))[0] == READY
                         else (PENDING, "") for c in required}
        if all(state == READY for state, _ in record.checks.values()):
            self._admit(record, now)
            return record
        for check in required:
            state, message = stored.get(check.name, (PENDING, ""))
            if state in (RETRY, REJECTED) and record.state is State.QUOTA_RESERVED:
                # decided, but the eviction was not stored
                self.set_check(info.key, check.name, state, now, message)
        self._ask_pending(record, now)
        return record

    def ask_pending_checks(self, now: float) -> None:
        """Ask the controllers again for every Pending check of every reserved workload:
        for an adapter that registers a controller after restoring workloads."""
        for record in list(self.records.values()):
            if record.state is State.QUOTA_RESERVED:
                self._ask_pending(record, now)

    def _ask_pending(self, record: Record, now: float) -> None:
        if record.admission is None:
            return
        for check in self._checks_for(record.admission):
            if record.state is not State.QUOTA_RESERVED:
                return
            if record.checks.get(check.name, (PENDING, ""))[0] != PENDING:
                continue
            controller = self.controllers.get(check.controller_name)
            verdict = controller.reserved(record, check, now) if controller else None
            if verdict is not None and record.state is State.QUOTA_RESERVED:
                self.set_check(record.info.key, check.name, verdict[0], now, verdict[1])

    def forget(self, key: str, now: float) -> Record:
        """A reservation could not be persisted: give the quota back and requeue."""
        record = self._record(key)
        self._to(record, Event.RELEASE)
        self._executions.stopped(key, now)
        self._release(key)
        record.admission = record.admitted_at = None
        record.checks = {}
        self._enqueue(record)
        return record

    def evict(self, key: str, now: float, reason: str, detail: str = "",
              message: str = "") -> Record:
        """Stop a workload holding quota and put it back in its queue.

        Pods-ready timeouts back off before the next try; other evictions
        requeue at once, keeping the workload's place in line. With
        ``wait_for_stop`` the workload only becomes Evicting, holding its quota
        until :meth:`stopped`; one already Evicting is left as it is.
        """
        record = self._record(key)
        if record.state is State.EVICTING:
            return record
        record.evictions.append(Eviction(now, reason, detail, message))
        if self.wait_for_stop:
            self._stop(record, now, reason, detail, message)
            return record
        self._to(record, Event.EVICT)
        self._release(key)
        return self._requeue_evicted(record, now)

    def stopped(self, key: str, now: float) -> Record:
        """The pods of an Evicting workload are gone: release its quota, then requeue it
        (or deactivate it, when its eviction was a deactivation; or finish it, when it was
        stopping because it ended). Others are left alone."""
        record = self._record(key)
        if record.state is not State.EVICTING:
            return record
        if record.ending:  # its pods stopped because it ended: nothing to requeue
            return self.finish(key, now)
        self._evicting.discard(key)
        if record.deactivation is not None:
            reason, message = record.deactivation
            record.deactivation = None
            self._to(record, Event.DEACTIVATE)
            self._deactivated(record, now, reason, message)
            return record
        self._to(record, Event.STOPPED)
        self._release(key)
        return self._requeue_evicted(record, now)

    def _stop(self, record: Record, now: float, reason: str, detail: str,
              message: str) -> None:
        """Begin an eviction that waits for the workload's pods: quota kept, timers off."""
        key = record.info.key
        self._to(record, Event.STOP)
        self._evicting.add(key)
        self._stop_timers(record, now)
        record.pods_ready = False
        self._emit(now, record, Kind.EVICTING, reason, detail, message, record.admission)

    def _requeue_evicted(self, record: Record, now: float) -> Record:
        """The rest of an eviction once the quota is released (its last Eviction)."""
        key = record.info.key
        eviction = record.evictions[-1]
        reason, detail, message = eviction.reason, eviction.detail, eviction.message
        self._stop_timers(record, now)
        record.admission = record.admitted_at = None
        record.pods_ready = False
        record.checks = {}
        self._emit(now, record, Kind.EVICTED, reason, detail, message)
        if reason == "AdmissionCheck":
            # As in Kueue, a check's Retry always sends the workload behind those that
            # waited meanwhile; a preempted one keeps its creation time (its place).
            record.queue_order = now
        ready = self.config.wait_for_pods_ready
        if reason == "PodsReadyTimeout" and ready is not None:
            record.requeue_count += 1
            strategy = ready.requeuing
            if backoff.exhausted(strategy, record.requeue_count):
                self.deactivate(key, now, "RequeuingLimitExceeded",
                                f"evicted {record.requeue_count} times for pods not ready; "
                                f"backoffLimitCount is {strategy.backoff_limit_count}")
                return record
            if strategy.timestamp == "Eviction":
                record.queue_order = now
            wait = backoff.delay(strategy, record.requeue_count, self.rng,
                                 self.config.backoff_jitter)
            record.requeue_at = self._backing_off[key] = now + wait
            self._note(key, "Backoff",
                       f"evicted: {message or reason}; requeued after {wait:.0f}s backoff")
            return record
        self._enqueue(record)
        return record

    def deactivate(self, key: str, now: float, reason: str, message: str = "") -> Record:
        """Take a workload out of scheduling (``spec.active: false``). With
        ``wait_for_stop``, one holding quota is first Evicting (reason ``Deactivated``)."""
        record = self._record(key)
        if self.wait_for_stop and record.state in HOLDS_QUOTA:
            if record.state is not State.EVICTING:
                record.evictions.append(Eviction(now, "Deactivated", reason, message))
                self._stop(record, now, "Deactivated", reason, message)
            record.deactivation = (reason, message)
            return record
        self._to(record, Event.DEACTIVATE)
        self._deactivated(record, now, reason, message)
        return record

    def _deactivated(self, record: Record, now: float, reason: str, message: str) -> None:
        key = record.info.key
        self.queues.remove(key)
        self._release(key)
        self._stop_timers(record, now)
        record.admission = record.admitted_at = None
        record.pending_reason, record.pending_message = reason, message
        self._emit(now, record, Kind.DEACTIVATED, reason, message=message)

    def activate(self, key: str, now: float) -> Record:
        record = self._record(key)
        if record.state is State.EVICTING:
            record.deactivation = None  # stopping anyway; it is requeued once stopped
            return record
        self._to(record, Event.ACTIVATE)
        record.requeue_count = 0
        self._enqueue(record)
        return record

    def update(self, info: WorkloadInfo) -> Record:
        """A workload's gates or execution limit changed (``info``: the same queue and pod
        sets). A pending one is queued again with it (an opened preemption gate may let it
        preempt now); others keep it for when they wait again."""
        record = self._record(info.key)
        if (info.queue_name, info.pod_sets) != (record.info.queue_name, record.info.pod_sets):
            raise ValueError(f"workload {info.key}: only its gates and execution limit may "
                             f"change, not its queue or pod sets")
        record.info = info
        self._executions.changed(info)
        if record.state is State.PENDING and record.requeue_at is None:
            self.queues.remove(info.key)
            self._enqueue(record)
        return record

    def pods_ready(self, key: str, now: float) -> None:
        """All pods of an admitted workload are running (PodsReady=True)."""
        record = self._record(key)
        if record.state in (State.QUOTA_RESERVED, State.ADMITTED):
            record.pods_ready = True
            self._unready.pop(key, None)

    def set_check(self, key: str, check: str, state: str, now: float,
                  message: str = "") -> None:
        """An admission check controller's verdict for a workload holding quota."""
        if state not in (PENDING, READY, RETRY, REJECTED):
            raise ValueError(f"admission check {check}: unknown state {state!r}")
        record = self._record(key)
        if record.state is not State.QUOTA_RESERVED or check not in record.checks:
            return
        record.checks[check] = (state, message)
        if state == RETRY:
            self.evict(key, now, "AdmissionCheck", f"{check}: Retry", message)
        elif state == REJECTED:
            self.deactivate(key, now, "AdmissionCheck",
                            f"admission check {check} rejected the workload: {message}")
        elif all(s == READY for s, _ in record.checks.values()):
            self._admit(record, now)

    def assign_cluster(self, key: str, cluster: str) -> None:
        """Record the member cluster multi-cluster dispatch chose for a workload holding quota.

        Call it before the check's Ready verdict, so the ADMITTED event carries the cluster.
        """
        record = self._record(key)
        if record.admission is None or record.state not in HOLDS_QUOTA:
            raise ValueError(f"workload {key} holds no quota: cannot assign cluster {cluster}")
        record.admission = dataclasses.replace(record.admission, cluster=cluster)
        entry = self.cache.holding(key)
        if entry is not None:
            # Same usage, so the quota tree's counts stay right.
            entries = self.cache.workloads[entry.admission.cluster_queue]
            entries[key] = dataclasses.replace(entry, admission=record.admission)

    # -- scheduling ----------------------------------------------------------
    def schedule(self, now: float, *, enough: Callable[[], bool] | None = None) -> CycleResult:
        """Do what is due at ``now``, then run one cycle and apply its result.

        ``enough``: asked between nominations, ends the cycle's nomination early
        (:func:`admission.cycle.schedule`); the next cycle then nominates first the heads
        this one left untried, so that every ClusterQueue has its turn however often
        cycles are cut short. Without it every head is tried, as in Kueue."""
        self.tick(now)
        if self._admission_blocked():
            return CycleResult()
        heads = self.queues.heads(first=self._resume_at)
        if not heads:
            return CycleResult()
        view = self.topology.view() if self.topology.nodes else None
        # (only the cohort trees of the heads: nothing else is read or changed)
        snapshot = self.cache.snapshot(queues={head.cluster_queue for head in heads})
        held = self._claims.for_cycle(snapshot.tree, {head.info.key for head in heads},
                                      waiting=self._waiting)
        try:
            result = schedule(snapshot, heads, self.cache.namespace_labels,
                              fair_sharing=self.config.fair_sharing, topology=view,
                              evicting=frozenset(self._evicting), enough=enough, held=held)
        finally:
            snapshot.tree.dismantle()  # the cycle's copy is done with: no cyclic garbage
        self._claims.keep_untried(result.untried, held)
        self._resume_at = result.untried[0].cluster_queue if result.untried else None
        for preemption in result.preempted:  # (a victim already Evicting stays as it is)
            target, preemptor = preemption.target, preemption.preemptor
            self.evict(target.key, now, "Preempted", target.reason,
                       f"preempted to admit {preemptor.info.key} "
                       f"(ClusterQueue {preemptor.cluster_queue})")
        for head, admission in result.admitted:
            with blame(head.info.key):
                self._reserve(head.info.key, admission, now)
        for verdict in result.inadmissible:
            self.queues.block(verdict.head, verdict.reason, verdict.message)
            self._note(verdict.head.info.key, verdict.reason, verdict.message)
        for verdict in result.skipped:
            self._note(verdict.head.info.key, verdict.reason, verdict.message)
        for head in result.preempting:
            self._note(head.info.key, "Preempting", "waiting for preempted workloads to stop")
            if self.wait_for_stop:
                # Its victims keep their quota until they stop; their release unblocks it.
                self.queues.block(head, "Preempting", "waiting for preempted workloads to stop")
                self._claims.claim(head.info.key, head.cluster_queue,
                                   result.claims[head.info.key])
            # It keeps its turn: the quota its victims free is for it, not for an older
            # head that the release wakes up (see queueing.pending).
            self.queues.pin(head)
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

    def tick(self, now: float) -> None:
        """Apply what time brings: drains, pods-ready timeouts, ends of backoff."""
        self._drain_stopped(now)
        ready = self.config.wait_for_pods_ready
        for key in [k for k, deadline in self._unready.items() if now >= deadline]:
            timeout = ready.timeout if ready is not None else 0.0
            self.evict(key, now, "PodsReadyTimeout", "",
                       f"pods were not ready within {timeout:g}s")
        for key in self._executions.due(now):
            self._executions.reset(key)  # (Kueue clears the accumulated time)
            self.deactivate(key, now, execution.REASON, execution.MESSAGE)
        for key in [k for k, at in self._backing_off.items() if now >= at]:
            record = self.records[key]
            del self._backing_off[key]
            record.requeue_at = None
            self._enqueue(record)
            self._emit(now, record, Kind.REQUEUED, "BackoffFinished")

    def next_wakeup(self) -> float | None:
        """The earliest time :meth:`tick` has something to do, for a virtual clock."""
        deadline = self._executions.next_deadline()
        return min([*self._backing_off.values(), *self._unready.values(),
                    *([] if deadline is None else [deadline])], default=None)

    def drain_outbox(self) -> list[WorkloadEvent]:
        events, self.outbox = self.outbox, []
        return events

    # -- internals -----------------------------------------------------------
    def _reserve(self, key: str, admission: Admission, now: float) -> None:
        record = self.records[key]
        self.queues.remove(key)
        self.cache.assume(record.info, admission, now)
        self.topology.assume(record.info.pod_sets, admission)
        self._to(record, Event.RESERVE)
        record.admission, record.admitted_at = admission, now
        self.changes.touch_cluster_queue(admission.cluster_queue)
        record.pending_reason = record.pending_message = None
        record.pods_ready = False
        checks = self._checks_for(admission)
        record.checks = {c.name: (PENDING, "") for c in checks}
        if not checks:
            self._admit(record, now)
            return
        self._emit(now, record, Kind.QUOTA_RESERVED, admission=admission)
        for check in checks:
            controller = self.controllers.get(check.controller_name)
            verdict = controller.reserved(record, check, now) if controller else None
            if verdict is not None and record.state is State.QUOTA_RESERVED:
                self.set_check(key, check.name, verdict[0], now, verdict[1])

    def _admit(self, record: Record, now: float) -> None:
        self._to(record, Event.ADMIT)
        self._executions.started(record.info, now)
        ready = self.config.wait_for_pods_ready
        if ready is not None:
            self._unready[record.info.key] = now + ready.timeout
        self._emit(now, record, Kind.ADMITTED, admission=record.admission)

    def _to(self, record: Record, event: Event) -> None:
        """Move ``record`` through the lifecycle. Every state change passes here, so its
        queues are stamped for the statuses (:mod:`admission.changes`): the ClusterQueue
        too, as a transition that gives quota back comes before the admission is cleared."""
        record.state = lifecycle.transition(record.info.key, record.state, event)
        self.changes.touch(record.info, record.admission)

    def _stop_timers(self, record: Record, now: float) -> None:
        """Its admission (if any) ended at ``now``: no timer runs for it any more."""
        self._executions.stopped(record.info.key, now)
        self._unready.pop(record.info.key, None)
        self._backing_off.pop(record.info.key, None)
        record.requeue_at = None

    def _checks_for(self, admission: Admission) -> list[AdmissionCheckConfig]:
        cq = self.cache.cluster_queues.get(admission.cluster_queue)
        if cq is None:
            return []
        used = {f for ps in admission.pod_sets for f in ps.flavors.values()}
        return [self.cache.admission_checks[name] for name, on in cq.admission_checks
                if name in self.cache.admission_checks and (not on or used & set(on))]

    def _admission_blocked(self) -> bool:
        ready = self.config.wait_for_pods_ready
        return bool(ready and ready.block_admission and self._unready)

    def _drain_stopped(self, now: float) -> None:
        cache = self.cache
        if self._draining[0] != cache.generation:
            self._draining = (
                cache.generation,
                tuple(n for n, cq in cache.cluster_queues.items()
                      if cq.stop_policy == "HoldAndDrain"),
                frozenset(k for k, lq in cache.local_queues.items()
                          if lq.stop_policy == "HoldAndDrain"))
        _, stopped, draining = self._draining
        for cq_name in stopped:
            for key in list(cache.workloads.get(cq_name, {})):
                self.evict(key, now, "ClusterQueueStopped", "",
                           f"ClusterQueue {cq_name} is stopped (HoldAndDrain)")
        if draining:
            for entry in list(self.cache.all_holding()):
                lq = entry.info.local_queue_key
                if lq in draining:
                    self.evict(entry.info.key, now, "LocalQueueStopped", "",
                               f"LocalQueue {lq} is stopped (HoldAndDrain)")

    def _release(self, key: str) -> None:
        entry = self.cache.forget(key)
        if entry is None:
            return
        self.topology.release(entry.info.pod_sets, entry.admission)
        node = self.cache.tree.queues.get(entry.admission.cluster_queue)
        if node is None:
            return
        self.queues.unblock(self.cache.tree.queue_names(node.root()), quota_freed=True)

    def _enqueue(self, record: Record) -> None:
        queued = record.info.created if record.queue_order is None else record.queue_order
        self.queues.push(record.info, queued)
        why = self.queues.why_waiting(record.info.key)
        if why is None and (never := self.never_fits(record.info)):
            # Told at once, not after its first try; set aside so it blocks no one.
            self.queues.set_aside_class(record.info.key, never.reason, never.message)
            why = (never.reason, never.message)
        if why is not None:
            record.pending_reason, record.pending_message = why
        else:
            record.pending_reason, record.pending_message = UNTRIED, "waiting for a try"
        self.changes.reasons += 1

    def _note(self, key: str, reason: str, message: str) -> None:
        record = self.records[key]
        record.pending_reason, record.pending_message = reason, message
        self.changes.reasons += 1

    def _emit(self, now: float, record: Record, kind: Kind, reason: str = "",
              detail: str = "", message: str = "", admission: Admission | None = None) -> None:
        executed = self._executions.past(record.info.key) if kind in (
            Kind.EVICTING, Kind.EVICTED, Kind.DEACTIVATED) else None
        self.outbox.append(WorkloadEvent(now, record.info.key, kind, reason, detail, message,
                                         admission, executed))

    def _record(self, key: str) -> Record:
        try:
            return self.records[key]
        except KeyError:
            raise KeyError(f"unknown workload {key}") from None

    def _waiting(self, key: str) -> bool:
        """Workload ``key`` is known and Pending (a preemptor so keeps its claim)."""
        record = self.records.get(key)
        return record is not None and record.state is State.PENDING
