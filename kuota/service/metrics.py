"""Prometheus metrics of a Redis-mode scheduler, under the operator's (Kueue's) names.

A dashboard built for the operator, or for Kueue, reads a worker pool's scheduler
unchanged: the metric objects are :class:`kuota.operator.metrics.Metrics`, and the
queue gauges (``kueue_pending_workloads``, ``kueue_admitted_active_workloads``,
``kueue_cluster_queue_resource_usage`` per ClusterQueue, flavor and resource,
nominal quota, borrowing) are set by the same code, from the leader's engine.

Only the scheduler thread touches the engine, so both hooks run there: the
leader hands every batch of engine events it persists to
:meth:`SchedulerMetrics.observe_events` (admissions with their wait, quota
reservations, evictions — counted by the operator's own code), and
:meth:`SchedulerMetrics.observe` sets the gauges after a step, at most every
``interval`` seconds. The HTTP server runs in its own thread and only reads the
registry, which prometheus_client makes safe.

A standby exports ``kuota_scheduler_leading 0`` and no queue gauges (it has no
engine); the leader's are dropped when it steps down, so two schedulers never
both report a ClusterQueue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram, start_http_server

from kuota.operator.metrics import Metrics

if TYPE_CHECKING:
    from admission.events import WorkloadEvent
    from kuota.service.laps import StepLaps
    from kuota.service.leader import Leader
    from kuota.service.scheduler import SchedulerService

log = logging.getLogger(__name__)

class SchedulerMetrics:
    def __init__(self, *, clock: Callable[[], float], interval: float = 1.0) -> None:
        self.metrics = Metrics()
        self.registry = self.metrics.registry
        self.clock = clock
        self.interval = interval
        self.leading = Gauge("kuota_scheduler_leading",
                             "1 while this scheduler holds the lease", registry=self.registry)
        self.terms = Gauge("kuota_scheduler_terms", "Times this scheduler became leader",
                           registry=self.registry)
        self.steps = Histogram(
            "kuota_scheduler_step_duration_seconds",
            "How long each leader step took (read events, decide, persist, place)",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
            registry=self.registry)
        self.longest = Gauge("kuota_scheduler_step_longest_seconds",
                             "The longest leader step since this scheduler started",
                             registry=self.registry)
        self.stages = Counter(
            "kuota_scheduler_step_stage_seconds",
            "Seconds the leader's steps spent in each stage (read includes waiting for "
            "events when idle; wait is the pause between rounds): the rate is the share of "
            "the scheduler's time each stage takes",
            ["stage"], registry=self.registry)
        self._next = 0.0
        self._steps = 0
        #: The leader's laps last exported, and their totals then (a new leader's laps
        #: start from zero).
        self._laps: StepLaps | None = None
        self._laps_seen: dict[str, float] = {}

    def observe_events(self, leader: Leader, events: Sequence[WorkloadEvent]) -> None:
        """Admissions, reservations and evictions, counted as the operator counts them
        (``SchedulerOptions.on_events``: called by the leader, in the scheduling thread)."""
        try:
            for event in events:
                self.metrics.observe_event(event, leader)
        except Exception:  # a metric is never worth a scheduling step (nor a rebuild)
            log.exception("could not count %d scheduling events in the metrics", len(events))

    def observe(self, service: SchedulerService) -> None:
        """The gauges, at most every ``interval`` seconds (a ``SchedulerService`` observer)."""
        if service.leader is not None and service.steps != self._steps:
            self._steps = service.steps
            self.steps.observe(service.last_step)
            self.longest.set(service.longest_step)
            self._count_stages(service.leader.laps)
        now = self.clock()
        if now < self._next:
            return
        self._next = now + self.interval
        self.terms.set(service.terms)
        self.leading.set(1 if service.leader is not None else 0)
        if service.leader is None:
            self.metrics.clear_queues()
            return
        started = time.monotonic()
        self.metrics.observe_queues(service.leader)
        # Thousands of ClusterQueues take a while to export: never more than a twentieth of
        # the scheduler's time (a scrape every 15 s or more sees them fresh enough).
        self._next = now + max(self.interval, 20 * (time.monotonic() - started))

    def _count_stages(self, laps: StepLaps) -> None:
        if laps is not self._laps:
            self._laps, self._laps_seen = laps, {}
        for stage, total in laps.total.items():
            added = total - self._laps_seen.get(stage, 0.0)
            if added > 0:
                self.stages.labels(stage).inc(added)
            self._laps_seen[stage] = total


def serve(metrics: SchedulerMetrics, host: str, port: int) -> Callable[[], None]:
    """Serve ``/metrics`` on ``host:port`` in a daemon thread; returns a stop function."""
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6); ValueError naming what is wrong."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--metrics-listen: {text!r} is not HOST:PORT")
    return host, int(port)

