"""Writing decisions to the API: decide → assume → persist → start, undo on failure.

The engine has already *assumed* each decision (its quota is counted) when
its event reaches :meth:`Writer.persist`. For each event, in order per
workload:

1. the Workload's status is patched with ``metadata.resourceVersion`` set to
   the version last seen, so a write based on a stale read fails with 409
   instead of overwriting; on 409 the Workload is read again and the patch
   rebuilt, up to ``conflict_retries`` times;
2. an admission that cannot be persisted (any other error, or a Workload
   that vanished) is *forgotten*: the engine gives the quota back and
   requeues the workload;
3. only after the admission is stored is the Job started (unsuspended with
   its flavors) and are its pods pinned to their topology domains (the
   ``topologyAssignment`` is written with the admission); after an eviction
   the Job is stopped and restored.

Writes to Jobs and pod groups (:mod:`kuota.operator.owners`) are
*level-based*: a sync compares the object with what its Workload's state
asks for and writes the difference, so duplicate or replayed requests cost
nothing and a Job that someone unsuspended early is suspended again.

Writes run as tasks chained per object (never two at once for one
Workload or Job) under a limit on concurrent requests; Events have their own
smaller limit so they never delay a decision. A write the API server refuses
is tried again later (:meth:`Writer.retry`: 1 s, doubling up to a minute)
and reported once per distinct refusal (:meth:`Writer.report`).

An eviction is written in two steps (see :mod:`quota.lifecycle`):
``EVICTING`` sets ``Evicted=True`` (and ``Preempted``) while the Workload
keeps ``QuotaReserved`` and its admission, and stops its Job or pods; once
the controller sees them gone (:meth:`Controller.check_stopped`) ``EVICTED``
clears the admission and requeues it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from admission.events import Kind, WorkloadEvent
from kuota.operator import names, owners, status, topology, ungater
from kuota.operator.client import ApiError, Client
from kuota.operator.controller import Controller
from kuota.operator.metrics import Metrics
from kuota.operator.objects import key_of
from quota.lifecycle import State
from quota.workload import Admission

log = logging.getLogger(__name__)
Body = dict[str, Any]

#: Engine reasons that say nothing more than "not tried yet": not worth a status write.
_UNINFORMATIVE = {"Pending"}
#: Delays between tries of a refused write: the first, and the longest.
RETRY_FIRST, RETRY_MAX = 1.0, 60.0


class Superseded(Exception):
    """The Workload already holds another admission: ours must not overwrite it."""


def split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


class Writer:
    def __init__(self, controller: Controller, client: Client, metrics: Metrics,
                 *, identity: str = "") -> None:
        self.controller = controller
        self.client = client
        self.metrics = metrics
        self.identity = identity
        options = controller.options
        self._slots = asyncio.Semaphore(options.write_concurrency)
        self._event_slots = asyncio.Semaphore(4)
        self._chains: dict[str, asyncio.Task[None]] = {}
        self._queued_syncs: set[str] = set()
        self._creating: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        #: Workload key -> the admission stored in its status (what a Job may start under).
        self.persisted: dict[str, Admission] = {}
        #: Workload key -> (reason, message) last written for a waiting workload.
        self._pending_written: dict[str, tuple[str, str]] = {}
        #: Refused writes: key -> consecutive refusals, the timer of the next try, and the
        #: refusal last reported.
        self._refusals: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._reported: dict[str, str] = {}

    # -- scheduling writes -------------------------------------------------------------------
    def _chain(self, key: str, make: Callable[[], Awaitable[None]]) -> None:
        """Run ``make`` after the writes already queued for ``key``, within the write limit."""
        previous = self._chains.get(key)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            try:
                async with self._slots:
                    await make()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("write for %s failed", key)

        task = asyncio.get_running_loop().create_task(run())
        self._chains[key] = task
        task.add_done_callback(lambda t: self._chains.pop(key, None)
                               if self._chains.get(key) is t else None)

    def _background(self, coro: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background write failed")

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait for the writes in flight (used on shutdown and by tests)."""
        pending = [*self._chains.values(), *self._tasks]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    def cancel(self) -> None:
        for task in [*self._chains.values(), *self._tasks]:
            task.cancel()
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # -- refused writes ----------------------------------------------------------------------
    def retry(self, key: str, again: Callable[[], None]) -> float:
        """Call ``again`` later; the delay doubles with each refusal of ``key`` in a row.
        Returns the delay."""
        count = self._refusals[key] = self._refusals.get(key, 0) + 1
        delay = min(RETRY_MAX, RETRY_FIRST * 2.0 ** (count - 1))
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self._timers.pop(key, None)
            again()

        self._timers[key] = asyncio.get_running_loop().call_later(delay, fire)
        return delay

    def report(self, key: str, message: str) -> bool:
        """Whether ``message`` is news for ``key`` (so worth an Event): not reported since
        the last success."""
        if self._reported.get(key) == message:
            return False
        self._reported[key] = message
        return True

    def succeeded(self, key: str) -> None:
        """A write for ``key`` went through: the next refusal starts over."""
        self._refusals.pop(key, None)
        self._reported.pop(key, None)

    # -- Actions (what ingestion asks for) ---------------------------------------------------
    def adopt(self, key: str, admission: Admission) -> None:
        self.persisted[key] = admission

    def create_workload(self, job_key: str) -> None:
        self._once(f"job:{job_key}", functools.partial(owners.create_job_workload, self, job_key))

    def sync_job(self, job_key: str) -> None:
        self._coalesced(f"job:{job_key}", functools.partial(owners.sync_job, self, job_key))

    def create_group_workload(self, group_key: str) -> None:
        self._once(f"group:{group_key}",
                   functools.partial(owners.create_group_workload, self, group_key))

    def sync_group(self, group_key: str) -> None:
        self._coalesced(f"group:{group_key}",
                        functools.partial(owners.sync_group, self, group_key))

    def ungate(self, owner: str) -> None:
        self._coalesced(f"ungate:{owner}", functools.partial(ungater.ungate, self, owner))

    def delete_workload(self, key: str) -> None:
        self._once(f"delete:{key}", functools.partial(owners.delete_workload, self, key))

    def _once(self, key: str, make: Callable[[], Awaitable[None]]) -> None:
        """Run ``make`` unless the same creation is already under way."""
        if key in self._creating:
            return
        self._creating.add(key)

        async def create() -> None:
            try:
                await make()
            finally:
                self._creating.discard(key)

        self._chain(key, create)

    def _coalesced(self, key: str, make: Callable[[], Awaitable[None]]) -> None:
        """Queue a level-based sync; one already queued (not started) covers this one."""
        if key in self._queued_syncs:
            return
        self._queued_syncs.add(key)

        async def sync() -> None:
            self._queued_syncs.discard(key)
            await make()

        self._chain(key, sync)

    def pods_ready(self, key: str) -> None:
        async def write() -> None:
            now = self.controller.clock()
            await self._write_status(key, lambda body: status.pods_ready_status(body, now))

        self._chain(key, write)

    def write_status_later(self, key: str, build: Callable[[Body], Body | None]) -> None:
        """Patch a Workload's status after the writes already queued for it (``build`` makes
        the patch from the newest body; None: nothing to write)."""
        async def write() -> None:
            await self._write_status(key, build)

        self._chain(key, write)

    def workload_problem(self, key: str, message: str) -> None:
        self.event(self.controller.objects.get("Workload", key), "Warning", "InvalidWorkload",
                   message)

    # -- decisions ---------------------------------------------------------------------------
    def persist(self, events: list[WorkloadEvent]) -> None:
        for event in events:
            self.metrics.observe_event(event, self.controller)
            self._chain(event.key, functools.partial(self._persist, event))

    async def _persist(self, event: WorkloadEvent) -> None:
        key = event.key
        controller = self.controller
        reads = 0

        def build(body: Body) -> Body | None:
            nonlocal reads
            reads += 1
            stored = (body.get("status") or {}).get("admission")
            if reads > 1 and holds and event.admission is not None and stored \
                    and stored != status.admission_status(event.admission, placed):
                # Re-read after a conflict: another writer stored an admission meanwhile
                # (a late write of a previous leader). Never overwrite it: adopt it.
                raise Superseded(key)
            return self._event_patch(body, event, placed)

        holds = event.kind in (Kind.ADMITTED, Kind.QUOTA_RESERVED)
        # Spelled once per event: node labels may change while conflicts are retried.
        placed = self._topology_assignments(event.admission) if holds else None
        try:
            ok = await self._write_status(key, build)
        except Superseded:
            self._forget(event)
            controller.reconsider(key)
            return
        if holds and not ok:
            self._forget(event)
            return
        if event.kind is Kind.ADMITTED and event.admission is not None:
            self.persisted[key] = event.admission
        elif event.kind in (Kind.EVICTING, Kind.EVICTED, Kind.DEACTIVATED, Kind.FINISHED):
            self.persisted.pop(key, None)
        if event.kind is Kind.DEACTIVATED and event.reason != "InactiveWorkload":
            await self._deactivate(key)
        self._pending_written.pop(key, None)
        job_key = controller.job_of_workload.get(key)
        group_key = controller.group_of_workload.get(key)
        if event.kind is not Kind.FINISHED:
            if job_key is not None:
                self.sync_job(job_key)
            if group_key is not None:
                self.sync_group(group_key)
        if event.kind is Kind.ADMITTED:
            for owner in (f"job:{job_key}" if job_key else None,
                          f"group:{group_key}" if group_key else None):
                if owner is not None and owner in controller.topology_pods:
                    self.ungate(owner)
        elif event.kind is Kind.EVICTING:
            controller.check_stopped(key)  # an owner that never ran is stopped already
        self._announce(event, job_key)

    async def _deactivate(self, key: str) -> None:
        """Record the engine's deactivation in ``spec.active``, so it outlives a restart."""
        body = self.controller.objects.get("Workload", key)
        if body is None or (body.get("spec") or {}).get("active") is False:
            return
        namespace, name = split(key)
        patch = {"metadata": {"resourceVersion": body["metadata"].get("resourceVersion")},
                 "spec": {"active": False}}
        try:
            stored = await self.client.patch(names.WORKLOADS, name, patch, namespace)
        except ApiError as exc:
            log.warning("Workload %s not deactivated: %s", key, exc)
            return
        self.controller.observe("Workload", stored)

    def _topology_assignments(self, admission: Admission | None) -> dict[str, Body] | None:
        """PodSet name -> ``topologyAssignment`` for the pod sets placed on domains."""
        engine = self.controller.engine
        if admission is None or engine is None:
            return None
        out: dict[str, Body] = {}
        for ps in admission.pod_sets:
            known = topology.topology_of(ps.flavors.values(), engine.cache.flavors,
                                         engine.topology.topologies)
            levels = known.levels if known is not None else None
            assignment = topology.assignment_for(ps, levels, engine.topology.nodes)
            if assignment is not None:
                out[ps.name] = assignment.to_dict()
        return out or None

    def _event_patch(self, body: Body, event: WorkloadEvent,
                     placed: dict[str, Body] | None = None) -> Body | None:
        if event.kind is Kind.FINISHED:
            if status.is_true(body, "Finished"):
                return None
            reason = self.controller.finish_reasons.pop(event.key, "Succeeded")
            event = WorkloadEvent(event.at, event.key, event.kind, reason, event.detail,
                                  event.message, event.admission)
        checks = requeue = None
        engine = self.controller.engine
        record = engine.records.get(event.key) if engine is not None else None
        if record is not None:
            requeue = (record.requeue_count, record.requeue_at)
            if record.admission is event.admission:
                checks = record.checks
        return status.workload_status(body, event, checks, requeue, placed)

    def _forget(self, event: WorkloadEvent) -> None:
        engine = self.controller.engine
        record = engine.records.get(event.key) if engine is not None else None
        if engine is None or record is None \
                or record.state not in (State.QUOTA_RESERVED, State.ADMITTED) \
                or record.admission is not event.admission:
            return
        log.warning("could not persist the admission of %s; giving its quota back", event.key)
        engine.forget(event.key, self.controller.clock())
        self.metrics.forgotten.inc()
        self.controller.on_change()

    async def _write_status(self, key: str, build: Callable[[Body], Body | None]) -> bool:
        """Patch a Workload's status guarded by its resourceVersion; re-read on conflict."""
        objects = self.controller.objects
        namespace, name = split(key)
        body = objects.get("Workload", key)
        for _ in range(self.controller.options.conflict_retries + 1):
            if body is None:
                return False
            patch = build(body)
            if patch is None:
                return True
            patch["metadata"] = {"resourceVersion": body["metadata"].get("resourceVersion")}
            try:
                stored = await self.client.patch(names.WORKLOADS, name, patch, namespace,
                                                 subresource="status")
            except ApiError as exc:
                if exc.conflict:
                    self.metrics.conflicts.inc()
                    body = await self.client.find(names.WORKLOADS, name, namespace)
                    if body is not None:
                        self.controller.observe("Workload", body)
                    continue
                log.warning("status of Workload %s not written: %s", key, exc)
                return False
            self.controller.observe("Workload", stored)
            return True
        log.warning("status of Workload %s not written: still conflicting", key)
        return False

    # -- waiting workloads and queues (periodic) ---------------------------------------------
    async def sync_statuses(self) -> None:
        """Write queue statuses and why each waiting workload waits, where they changed."""
        controller, engine = self.controller, self.controller.engine
        if engine is None:
            return
        now = controller.clock()
        writes: list[Awaitable[None]] = []
        for record in list(engine.records.values()):
            key = record.info.key
            why = (record.pending_reason or "", record.pending_message or "")
            if record.state is not State.PENDING or not why[0] or why[0] in _UNINFORMATIVE \
                    or self._pending_written.get(key) == why or key in self._chains:
                continue
            self._pending_written[key] = why
            self._chain(key, functools.partial(self._write_pending, key, why))
        for body in controller.objects.all("ClusterQueue"):
            name = key_of(body)
            patch = status.cluster_queue_status(
                engine, name, body, now, controller.problems.get(f"ClusterQueue/{name}"))
            if status.differs(body, patch):
                writes.append(self._write_queue(names.CLUSTER_QUEUES, "ClusterQueue", body,
                                                patch))
        tallies = status.local_queue_tallies(engine)
        for body in controller.objects.all("LocalQueue"):
            key = key_of(body)
            patch = status.local_queue_status(engine, key, body, now,
                                              tallies.get(key, status.Tally()),
                                              controller.problems.get(f"LocalQueue/{key}"))
            if status.differs(body, patch):
                writes.append(self._write_queue(names.LOCAL_QUEUES, "LocalQueue", body, patch))
        self.metrics.observe_queues(controller)
        if writes:
            await asyncio.gather(*writes)

    async def _write_pending(self, key: str, why: tuple[str, str]) -> None:
        engine = self.controller.engine
        record = engine.records.get(key) if engine else None
        if record is None or record.state is not State.PENDING:
            return
        now = self.controller.clock()
        await self._write_status(key, lambda body: status.pending_status(body, *why, now))
        self.event(self.controller.objects.get("Workload", key), "Normal", "Pending",
                   f"{why[0]}: {why[1]}")

    async def _write_queue(self, res: names.Res, kind: str, body: Body, patch: Body) -> None:
        meta = body["metadata"]
        try:
            async with self._slots:
                stored = await self.client.patch(res, meta["name"], patch,
                                                 meta.get("namespace"), subresource="status")
        except ApiError as exc:
            log.warning("status of %s %s not written: %s", kind, key_of(body), exc)
            return
        self.controller.observe(kind, stored)

    # -- Kubernetes Events -------------------------------------------------------------------
    def _announce(self, event: WorkloadEvent, job_key: str | None) -> None:
        objects = self.controller.objects
        workload = objects.get("Workload", event.key)
        job = objects.get("Job", job_key) if job_key else None
        if event.kind is Kind.ADMITTED and event.admission is not None:
            engine = self.controller.engine
            record = engine.records.get(event.key) if engine is not None else None
            waited = f", wait time since queued was {event.at - record.info.created:.0f}s" \
                if record is not None else ""
            text = f"Admitted by ClusterQueue {event.admission.cluster_queue}{waited}"
            self.event(workload, "Normal", "Admitted", text)
        elif event.kind is Kind.QUOTA_RESERVED and event.admission is not None:
            self.event(workload, "Normal", "QuotaReserved",
                       f"Quota reserved in ClusterQueue {event.admission.cluster_queue}")
        elif event.kind is Kind.EVICTING and event.reason != "Deactivated":
            # Announced when it is decided; Deactivated is announced when it is done.
            reason = "Preempted" if event.reason == "Preempted" else "Evicted"
            text = f"{event.reason}{'/' + event.detail if event.detail else ''}: {event.message}"
            self.event(workload, "Normal", reason, text)
            self.event(job, "Normal", reason, text)
        elif event.kind is Kind.DEACTIVATED:
            self.event(workload, "Warning", "Deactivated", f"{event.reason}: {event.message}")
        elif event.kind is Kind.FINISHED:
            self.event(workload, "Normal", "Finished", event.message or "quota released")

    def event(self, obj: Body | None, type_: str, reason: str, message: str) -> None:
        if obj is None or not self.controller.options.events:
            return
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        stamp = status.timestamp(self.controller.clock())
        body = {
            "metadata": {"generateName": f"{meta.get('name', 'object')}.",
                         "namespace": namespace},
            "involvedObject": {"apiVersion": obj.get("apiVersion", ""),
                               "kind": obj.get("kind", ""), "name": meta.get("name", ""),
                               "namespace": namespace, "uid": meta.get("uid", ""),
                               "resourceVersion": meta.get("resourceVersion", "")},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": names.COMPONENT},
            "reportingComponent": names.COMPONENT, "reportingInstance": self.identity,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }

        async def post() -> None:
            async with self._event_slots:
                try:
                    await self.client.create(names.EVENTS, body, namespace)
                except ApiError as exc:
                    log.info("event %s on %s not posted: %s", reason, meta.get("name"), exc)

        self._background(post())
