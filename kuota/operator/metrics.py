"""Prometheus metrics, named as Kueue names them where Kueue has the metric.

Dashboards and alerts written for Kueue read kuota's operator unchanged:
``kueue_pending_workloads``, ``kueue_admitted_active_workloads``,
``kueue_admission_wait_time_seconds`` and the per-flavor quota gauges carry
Kueue's names and labels. Metrics Kueue has no name for start with
``kuota_``. Each operator has its own registry, so tests can run several.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from admission.events import Kind, WorkloadEvent
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Engine


class Controller(Protocol):
    """What the metrics read: the engine of whoever schedules (the operator's controller,
    the Redis-mode leader); None while it has none."""

    @property
    def engine(self) -> Engine | None: ...

_WAIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600)
_CELL = ("cohort", "cluster_queue", "flavor", "resource")


class Metrics:
    def __init__(self) -> None:
        self._per_cq: dict[str, tuple[Counter, Histogram]] = {}
        self.registry = CollectorRegistry()
        r = self.registry
        self.pending = Gauge("kueue_pending_workloads", "Workloads waiting, per ClusterQueue",
                             ["cluster_queue", "status"], registry=r)
        self.reserving = Gauge("kueue_reserving_active_workloads",
                               "Workloads holding quota, per ClusterQueue", ["cluster_queue"],
                               registry=r)
        self.admitted_active = Gauge("kueue_admitted_active_workloads",
                                     "Admitted, unfinished workloads, per ClusterQueue",
                                     ["cluster_queue"], registry=r)
        self.admitted = Counter("kueue_admitted_workloads_total", "Admissions",
                                ["cluster_queue"], registry=r)
        self.reserved = Counter("kueue_quota_reserved_workloads_total", "Quota reservations",
                                ["cluster_queue"], registry=r)
        self.evicted = Counter("kueue_evicted_workloads_total", "Evictions",
                               ["cluster_queue", "reason"], registry=r)
        self.wait = Histogram("kueue_admission_wait_time_seconds",
                              "From creation (or last requeue) to admission",
                              ["cluster_queue"], buckets=_WAIT_BUCKETS, registry=r)
        self.cq_status = Gauge("kueue_cluster_queue_status", "1 for the ClusterQueue's status",
                               ["cluster_queue", "status"], registry=r)
        self.reservation = Gauge("kueue_cluster_queue_resource_reservation",
                                 "Quota reserved per flavor and resource", _CELL, registry=r)
        self.usage = Gauge("kueue_cluster_queue_resource_usage",
                           "Quota used by admitted workloads per flavor and resource", _CELL,
                           registry=r)
        self.nominal = Gauge("kueue_cluster_queue_nominal_quota", "Nominal quota", _CELL,
                             registry=r)
        self.borrowing_limit = Gauge("kueue_cluster_queue_borrowing_limit", "Borrowing limit",
                                     _CELL, registry=r)
        self.borrowed = Gauge("kuota_cluster_queue_resource_borrowed",
                              "Quota reserved above the nominal quota", _CELL, registry=r)
        self.conflicts = Counter("kuota_operator_write_conflicts_total",
                                 "Writes that met a 409 Conflict and were retried", registry=r)
        self.forgotten = Counter("kuota_operator_admissions_forgotten_total",
                                 "Admissions undone because they could not be persisted",
                                 registry=r)
        self.cycles = Counter("kuota_operator_cycles_total", "Admission cycles run", registry=r)
        self.api_retries = Counter("kuota_operator_api_retries_total",
                                   "API requests repeated after a transient failure, by the "
                                   "status that failed (Unreachable, NoAnswer: no status; "
                                   "401: logged in again)",
                                   ["reason"], registry=r)
        self.requeued = Counter("kuota_operator_writes_requeued_total",
                                "Writes queued again after the API client gave up, by kind "
                                "(job, group, ungate, create, status, deactivate)", ["kind"],
                                registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def observe_event(self, event: WorkloadEvent, controller: Controller) -> None:
        engine = controller.engine
        cq = event.admission.cluster_queue if event.admission is not None else ""
        if event.kind is Kind.ADMITTED and engine is not None:
            record = engine.records.get(event.key)
            admitted, wait = self._admission_children(cq)
            admitted.inc()
            if record is not None:
                wait.observe(max(0.0, event.at - record.info.created))
        elif event.kind is Kind.QUOTA_RESERVED:
            self.reserved.labels(cq).inc()
        elif event.kind is Kind.EVICTED:
            where = engine.queues.cluster_queue_of(event.key) if engine is not None else None
            self.evicted.labels(where or "", event.reason).inc()

    def _admission_children(self, cq: str) -> tuple[Counter, Histogram]:
        """The admission counter and wait histogram of ``cq``, looked up once: ``labels()``
        costs more than the increment, and a busy scheduler counts thousands a second.
        (These two are never cleared, so a child kept here is always the exported one.)"""
        children = self._per_cq.get(cq)
        if children is None:
            children = self._per_cq[cq] = (self.admitted.labels(cq), self.wait.labels(cq))
        return children

    def observe_queues(self, controller: Controller) -> None:
        engine = controller.engine
        if engine is None:
            return
        cache = engine.cache
        for name, cq in cache.cluster_queues.items():
            queue = engine.queues.queues.get(name)
            waiting = len(queue) if queue is not None else 0
            blocked = queue.blocked_count() if queue is not None else 0
            self.pending.labels(name, "active").set(waiting - blocked)
            self.pending.labels(name, "inadmissible").set(blocked)
            holding = cache.workloads.get(name, {})
            admitted = [e for k, e in holding.items()
                        if k in engine.records and engine.records[k].state is State.ADMITTED]
            self.reserving.labels(name).set(len(holding))
            self.admitted_active.labels(name).set(len(admitted))
            active = name not in cache.inactive
            self.cq_status.labels(name, "active").set(1 if active else 0)
            self.cq_status.labels(name, "pending").set(0 if active else 1)
            cohort = cq.cohort or ""
            for fr, quota in cq.quotas.items():
                cell = (cohort, name, fr.flavor, fr.resource)
                reserved = sum(e.admission.usage().get(fr, 0) for e in holding.values())
                used = sum(e.admission.usage().get(fr, 0) for e in admitted)
                self.reservation.labels(*cell).set(reserved / 1000)
                self.usage.labels(*cell).set(used / 1000)
                self.nominal.labels(*cell).set(quota.nominal / 1000)
                self.borrowed.labels(*cell).set(max(0, reserved - quota.nominal) / 1000)
                if quota.borrowing_limit is not None:
                    self.borrowing_limit.labels(*cell).set(quota.borrowing_limit / 1000)
