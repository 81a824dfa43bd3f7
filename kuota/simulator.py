"""Run the core in virtual time: ``kuota simulate``.

Events sit in a heap ordered by (time, kind, sequence). At each instant the
simulator applies what is due — finishes first, then pods becoming ready,
admission-check verdicts and arrivals — then runs admission cycles until no
head is left to try: the same engine the operator and the Redis service run,
only with a virtual clock. It then reads the engine's outbox: an admitted
workload is scheduled to finish ``duration`` seconds later (and to have its
pods ready ``podsReadyAfter`` seconds later); an evicted one loses that
schedule. The engine's own timers (backoff, pods-ready deadlines) become
wake-up events.

The result is the JSON contract documented in docs/simulator.md; a timeline
of events is kept for the table output and the demo.
"""

from __future__ import annotations

import dataclasses
import heapq
import random
from dataclasses import dataclass, field
from typing import Any

from admission.engine import READY, Engine
from admission.events import Kind, WorkloadEvent
from kuota.scenario import Scenario, ScenarioWorkload, workload_info
from multicluster import convert
from multicluster.controller import CONTROLLER_NAME, Dispatcher
from multicluster.model import Health
from placement.model import Node
from quota import api
from quota.api.membercluster import ACTIVE
from quota.api.meta import find_condition
from quota.lifecycle import State
from quota.resources import parse_amount
from quota.workload import Admission, PodSetAdmission


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    at: float
    event: str  # Arrived | QuotaReserved | Admitted | Evicted | Requeued | Deactivated | Finished
    workload: str
    cluster_queue: str = ""
    detail: str = ""


@dataclass
class WorkloadOutcome:
    admissions: list[dict[str, Any]] = field(default_factory=list)
    evictions: list[dict[str, Any]] = field(default_factory=list)
    finished_at: float | None = None
    pending_reason: str | None = None
    pending_message: str | None = None
    arrival: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"admissions": self.admissions, "evictions": self.evictions,
                "finishedAt": self.finished_at, "pendingReason": self.pending_reason,
                "pendingMessage": self.pending_message}


@dataclass
class SimulationResult:
    end: float
    workloads: dict[str, WorkloadOutcome]
    timeline: list[TimelineEvent]
    cycles: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"end": self.end,
                "workloads": {k: v.to_json() for k, v in sorted(self.workloads.items())}}


# Event kinds, in the order they apply at one instant.
_FINISH, _READY, _CHECK, _ARRIVE, _WAKE = range(5)


class Simulation:
    def __init__(self, scenario: Scenario, *, seed: int = 0) -> None:
        self.scenario = scenario
        self.engine = Engine(config=scenario.engine_config(), rng=random.Random(seed))
        for name, labels in scenario.namespaces.items():
            self.engine.set_namespace(name, labels)
        self.engine.apply_all(scenario.configs())
        for topology in scenario.topologies():
            self.engine.topology.set_topology(topology)
        for node in scenario.topology_nodes():
            self.engine.topology.set_node(node)
        self._events: list[tuple[float, int, int, str, Any]] = []
        self._seq = 0
        self._specs: dict[str, ScenarioWorkload] = {}
        #: Admission attempt per workload: finish/ready events of older attempts are stale.
        self._attempt: dict[str, int] = {}
        #: Workloads holding quota while their admission checks run.
        self._reserved: set[str] = set()
        #: How many times each workload reserved quota (scripted checks answer per reservation).
        self._reservations: dict[str, int] = {}
        self._wake_at: float | None = None
        self.dispatcher = self._dispatcher()
        #: Members without an Active condition in the scenario: simulated as always answering.
        self._live: list[str] = []
        if self.dispatcher is not None:
            self._add_members(self.dispatcher)
        self.outcomes: dict[str, WorkloadOutcome] = {}
        self.timeline: list[TimelineEvent] = []
        for wl in scenario.workloads:
            key = f"{wl.namespace}/{wl.name}"
            self._specs[key] = wl
            self.outcomes[key] = WorkloadOutcome(arrival=wl.arrival)
            self._push(wl.arrival, _ARRIVE, key)

    def _dispatcher(self) -> Dispatcher | None:
        """A multi-cluster dispatcher, if the scenario has members, configs or such checks."""
        objects = self.scenario.objects
        wanted = any(isinstance(o, api.MemberCluster | api.MultiClusterConfig)
                     or (isinstance(o, api.AdmissionCheck)
                         and o.spec.controller_name == CONTROLLER_NAME) for o in objects)
        if not wanted:
            return None
        specs = self._specs
        engine = self.engine
        dispatcher = Dispatcher(flavors=lambda: engine.cache.flavors,
                                assign=engine.assign_cluster,
                                annotations=lambda info: specs[info.key].annotations)
        for obj in objects:
            if isinstance(obj, api.MultiClusterConfig):
                dispatcher.set_config(obj)
        engine.controllers[CONTROLLER_NAME] = dispatcher
        return dispatcher

    def _add_members(self, dispatcher: Dispatcher) -> None:
        for obj in self.scenario.objects:
            if not isinstance(obj, api.MemberCluster):
                continue
            nodes = [Node(n.name, {r: parse_amount(q) for r, q in n.allocatable.items()},
                          labels=dict(n.labels))
                     for n in self.scenario.member_nodes.get(obj.metadata.name, [])]
            info = convert.cluster_info(obj, nodes)
            if find_condition(obj.status.conditions, ACTIVE) is None:
                self._live.append(info.name)
                info = dataclasses.replace(info, health=Health(True, "Active", "simulated", 0.0))
            dispatcher.set_member(info)

    def _push(self, at: float, kind: int, key: str, payload: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at, kind, self._seq, key, payload))

    def run(self, until: float | None = None) -> SimulationResult:
        cycles = 0
        end = 0.0
        while self._events:
            now = self._events[0][0]
            if until is not None and now > until:
                break
            end = now
            if self.dispatcher is not None:
                for name in self._live:
                    self.dispatcher.seen(name, now)
            while self._events and self._events[0][0] == now:
                _, kind, _, key, payload = heapq.heappop(self._events)
                self._apply(kind, key, payload, now)
            cycles += self._settle(now)
            wake = self.engine.next_wakeup()
            if wake is not None and wake > now and wake != self._wake_at:
                self._wake_at = wake
                self._push(wake, _WAKE, "")
        for key, record in self.engine.records.items():
            outcome = self.outcomes[key]
            if outcome.finished_at is None and record.pending_reason:
                outcome.pending_reason = record.pending_reason
                outcome.pending_message = record.pending_message
            elif record.state is State.QUOTA_RESERVED:
                # Quota held, admission checks not all Ready: say which and why.
                outcome.pending_reason = "AdmissionCheck"
                outcome.pending_message = "; ".join(
                    f"{name}: {state}" + (f": {message}" if message else "")
                    for name, (state, message) in sorted(record.checks.items())
                    if state != READY)
        return SimulationResult(end, self.outcomes, self.timeline, cycles)

    def _settle(self, now: float) -> int:
        """Cycle, observe, and let the dispatcher retry what waits, until nothing moves."""
        cycles = 0
        while True:
            cycles += len(self.engine.run_until_idle(now))
            events = self.engine.drain_outbox()
            for event in events:
                self._observe(event)
            verdicts = self.dispatcher.poll(now) if self.dispatcher is not None else []
            for v in verdicts:
                self.engine.set_check(v.key, v.check, v.state, now, v.message)
            if not events and not verdicts:
                return cycles

    def _apply(self, kind: int, key: str, payload: Any, now: float) -> None:
        if kind == _ARRIVE:
            wl = self._specs[key]
            info = workload_info(wl, self.scenario.priority_classes)
            self.engine.submit(info)
            self.timeline.append(TimelineEvent(now, "Arrived", key, "",
                                               f"queue {info.namespace}/{info.queue_name}"))
        elif kind == _FINISH and payload == self._attempt.get(key):
            self.engine.finish(key, now)
        elif kind == _READY and payload == self._attempt.get(key):
            self.engine.pods_ready(key, now)
        elif kind == _CHECK and payload[0] == self._attempt.get(key):
            _, check, state = payload
            self.engine.set_check(key, check, state, now, "scripted by the scenario")
        # _WAKE needs nothing: the cycles that follow run the engine's timers.

    def _observe(self, event: WorkloadEvent) -> None:
        key, now = event.key, event.at
        outcome = self.outcomes[key]
        spec = self._specs[key]
        if self.dispatcher is not None and event.kind in (Kind.FINISHED, Kind.EVICTED,
                                                          Kind.DEACTIVATED):
            self.dispatcher.released(key)
        if event.kind is Kind.QUOTA_RESERVED and event.admission is not None:
            attempt = self._next_attempt(key)
            self._reserved.add(key)
            reservation = self._reservations[key] = self._reservations.get(key, -1) + 1
            self._line(event, "QuotaReserved", _describe(event.admission))
            for check in spec.admission_checks:
                self._push(now + check.after, _CHECK, key,
                           (attempt, check.name, check.state_for(reservation)))
        elif event.kind is Kind.ADMITTED and event.admission is not None:
            if key in self._reserved:  # the checks passed: same attempt as the reservation
                self._reserved.discard(key)
                attempt = self._attempt[key]
            else:
                attempt = self._next_attempt(key)
            adm = event.admission
            admission: dict[str, Any] = {
                "at": now, "clusterQueue": adm.cluster_queue, "borrowing": adm.borrowing,
                "podSets": {ps.name: _pod_set_json(ps) for ps in adm.pod_sets}}
            if adm.cluster is not None:
                admission["cluster"] = adm.cluster
            outcome.admissions.append(admission)
            waited = now - outcome.arrival
            detail = _describe(adm) + (f" after {waited:g}s" if waited > 0 else "")
            self._line(event, "Admitted", detail)
            self._push(now + spec.duration, _FINISH, key, attempt)
            if spec.pods_ready_after != "never":
                self._push(now + (spec.pods_ready_after or 0.0), _READY, key, attempt)
        elif event.kind is Kind.EVICTED:
            self._next_attempt(key)
            outcome.evictions.append({"at": now, "reason": event.reason, "detail": event.detail,
                                      "message": event.message})
            self._line(event, "Evicted", f"{event.reason} {event.detail}: {event.message}")
        elif event.kind is Kind.FINISHED:
            outcome.finished_at = now
            self._line(event, "Finished", "quota released")
        elif event.kind is Kind.DEACTIVATED:
            self._next_attempt(key)
            self._line(event, "Deactivated", f"{event.reason}: {event.message}")
        elif event.kind is Kind.REQUEUED:
            self._line(event, "Requeued", "backoff over")

    def _next_attempt(self, key: str) -> int:
        """A new admission attempt: events scheduled for the previous one become stale."""
        self._reserved.discard(key)
        attempt = self._attempt[key] = self._attempt.get(key, 0) + 1
        return attempt

    def _line(self, event: WorkloadEvent, name: str, detail: str) -> None:
        cq = event.admission.cluster_queue if event.admission else (
            self.engine.queues.cluster_queue_of(event.key) or "")
        self.timeline.append(TimelineEvent(event.at, name, event.key, cq, detail))


def _pod_set_json(ps: PodSetAdmission) -> dict[str, Any]:
    out: dict[str, Any] = {"count": ps.count, "flavors": dict(ps.flavors)}
    if ps.topology:
        out["topology"] = {"levels": list(ps.topology_levels),
                           "domains": [{"values": list(v), "count": c} for v, c in ps.topology]}
        out["nodes"] = {node: count for node, count in ps.nodes}
    return out


def _describe(admission: Admission) -> str:
    detail = "; ".join(
        f"{ps.name}×{ps.count} on {', '.join(dict.fromkeys(ps.flavors.values()))}"
        + (" in " + ", ".join(f"{'/'.join(v)}×{c}" for v, c in ps.topology) if ps.topology
           else "")
        for ps in admission.pod_sets)
    detail += " (borrowing)" if admission.borrowing else ""
    return detail + (f" → member {admission.cluster}" if admission.cluster else "")


def simulate(scenario: Scenario, *, seed: int = 0, until: float | None = None
             ) -> SimulationResult:
    return Simulation(scenario, seed=seed).run(until=until)
