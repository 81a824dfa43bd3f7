"""Prometheus metrics, named as Kueue names them where Kueue has the metric.

Dashboards and alerts written for Kueue read kuota's operator unchanged:
``kueue_pending_workloads``, ``kueue_admitted_active_workloads``,
``kueue_admission_wait_time_seconds`` and the per-flavor quota gauges carry
Kueue's names and labels. Metrics Kueue has no name for start with
``kuota_``. Each operator has its own registry, so tests can run several.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from admission.events import Kind, WorkloadEvent
from kuota.operator import tallies
from kuota.operator.tallies import Cell, QueueFigures
from quota.resources import FlavorResource

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
        #: The queue gauges' series per ClusterQueue, as last exported.
        self._exported: dict[str, _QueueSeries] = {}
        #: The queues' figures, counted again only where they changed.
        self.tallies = tallies.Tallies()
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
        self.evicted_run = Counter(
            "kuota_evicted_run_seconds_total",
            "Run time thrown away by evictions: for each eviction of an admitted workload, "
            "the seconds from its admission to its eviction (the work it must do again)",
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
        self.lending_limit = Gauge("kueue_cluster_queue_lending_limit", "Lending limit", _CELL,
                                   registry=r)
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
        if event.kind is Kind.EVICTING and engine is not None:
            self._lost(event, engine)

    def _lost(self, event: WorkloadEvent, engine: Engine) -> None:
        """Count the run time an eviction throws away, once, at its decision (Evicting: the
        operator's engine waits for the pods to stop, and the admission is still on the
        record). What ran counts: a workload admitted at ``t`` and evicted at ``t + 90``
        adds 90 s; one that only reserved quota adds nothing."""
        record = engine.records.get(event.key)
        started = record.admitted_at if record is not None else None
        if started is None:
            return
        where = event.admission.cluster_queue if event.admission is not None else \
            engine.queues.cluster_queue_of(event.key) or ""
        self.evicted_run.labels(where, event.reason).inc(max(0.0, event.at - started))

    def _admission_children(self, cq: str) -> tuple[Counter, Histogram]:
        """The admission counter and wait histogram of ``cq``, looked up once: ``labels()``
        costs more than the increment, and a busy scheduler counts thousands a second.
        (Dropped with the queue's series when the queue is deleted.)"""
        children = self._per_cq.get(cq)
        if children is None:
            children = self._per_cq[cq] = (self.admitted.labels(cq), self.wait.labels(cq))
        return children

    def observe_queues(self, controller: Controller,
                       figures: Mapping[str, QueueFigures] | None = None) -> None:
        """Set the queue gauges from the engine: only a ClusterQueue whose figures changed
        is written, and a deleted ClusterQueue's series (or a cell's, or a cohort's label
        it left) are removed, as Kueue clears them — a dashboard never shows a queue that is
        gone. Each queue's children are labelled once: with 1,000 ClusterQueues ``labels()``
        was most of an export. ``figures``: the queues' figures counted already (the
        operator's status sync counts them once for the statuses too)."""
        engine = controller.engine
        if engine is None:
            return
        cache = engine.cache
        for name in [n for n in self._exported if n not in cache.cluster_queues]:
            self._exported.pop(name).remove()
            # Its counts go too, as Kueue clears them: a queue made again starts afresh.
            self._per_cq.pop(name, None)
            for counter in (self.admitted, self.reserved, self.wait, self.evicted,
                            self.evicted_run):
                counter.remove_by_labels({"cluster_queue": name})
        if figures is None:
            figures = self.tallies.cluster_queues(engine)
        for name, cq in cache.cluster_queues.items():
            counted = figures.get(name)
            if counted is None:
                counted = tallies.cluster_queue(engine, cq)
            exported = self._exported.get(name)
            if exported is None or not exported.labels_fit(cq.cohort or "", counted.cells):
                if exported is not None:
                    exported.remove()
                exported = self._exported[name] = _QueueSeries(self, name, cq.cohort or "",
                                                               counted.cells)
            exported.set(counted)

    def clear_queues(self) -> None:
        """Drop every queue gauge (a scheduler that stops leading reports no queue)."""
        for series in self._exported.values():
            series.remove()
        self._exported.clear()


class _QueueSeries:
    """One ClusterQueue's exported series: children labelled once, values set only when
    they change."""

    def __init__(self, metrics: Metrics, name: str, cohort: str,
                 cells: tuple[Cell, ...]) -> None:
        self.metrics = metrics
        self.name = name
        self.cohort = cohort
        #: The cells' label sets: which flavor-resources, and which limits they have.
        self.shape = _shape(cells)
        self.last: QueueFigures | None = None
        m = metrics
        self.queue_children = (m.pending.labels(name, "active"),
                               m.pending.labels(name, "inadmissible"),
                               m.reserving.labels(name), m.admitted_active.labels(name),
                               m.cq_status.labels(name, "active"),
                               m.cq_status.labels(name, "pending"))
        self.cell_children = []
        for fr, _, _, _, borrowing, lending in cells:
            labels = (cohort, name, fr.flavor, fr.resource)
            self.cell_children.append((
                m.reservation.labels(*labels), m.usage.labels(*labels),
                m.nominal.labels(*labels), m.borrowed.labels(*labels),
                m.borrowing_limit.labels(*labels) if borrowing is not None else None,
                m.lending_limit.labels(*labels) if lending is not None else None))

    def labels_fit(self, cohort: str, cells: tuple[Cell, ...]) -> bool:
        return cohort == self.cohort and _shape(cells) == self.shape

    def set(self, figures: QueueFigures) -> None:
        if figures is self.last or figures == self.last:
            return
        self.last = figures
        cells = figures.cells
        pending_active, pending_blocked, reserving_g, admitted_g, status_active, status_pending \
            = self.queue_children
        pending_active.set(figures.waiting - figures.blocked)
        pending_blocked.set(figures.blocked)
        reserving_g.set(figures.reserving)
        admitted_g.set(figures.admitted)
        status_active.set(1 if figures.active else 0)
        status_pending.set(0 if figures.active else 1)
        for (_, reserved, used, nominal, borrowing, lending), children in zip(
                cells, self.cell_children, strict=True):
            reservation, usage, nominal_g, borrowed, borrowing_g, lending_g = children
            reservation.set(reserved / 1000)
            usage.set(used / 1000)
            nominal_g.set(nominal / 1000)
            borrowed.set(max(0, reserved - nominal) / 1000)
            if borrowing_g is not None and borrowing is not None:
                borrowing_g.set(borrowing / 1000)
            if lending_g is not None and lending is not None:
                lending_g.set(lending / 1000)

    def remove(self) -> None:
        """Remove this queue's gauge series (the queue, a cell or its cohort label went)."""
        m = self.metrics
        for gauge in (m.pending, m.reserving, m.admitted_active, m.cq_status, m.reservation,
                      m.usage, m.nominal, m.borrowed, m.borrowing_limit, m.lending_limit):
            gauge.remove_by_labels({"cluster_queue": self.name})


def _shape(cells: tuple[Cell, ...]) -> tuple[tuple[FlavorResource, bool, bool], ...]:
    return tuple((fr, borrowing is not None, lending is not None)
                 for fr, _, _, _, borrowing, lending in cells)
