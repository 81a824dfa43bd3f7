"""Run the core in virtual time: ``kuota simulate``.

Events sit in a heap ordered by (time, sequence). At each instant the
simulator first applies every finish due then, then every arrival, then runs
admission cycles until no head is left to try — the same engine the operator
and the Redis service run, only with a virtual clock. An admitted workload
finishes ``duration`` seconds after admission and releases its quota.

The result is the JSON contract documented in docs/simulator.md; a timeline
of events is kept for the table output and the demo.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

from admission.engine import Engine
from kuota.scenario import Scenario, workload_info
from quota.workload import Admission, WorkloadInfo


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    at: float
    event: str  # Arrived | Admitted | Finished | Evicted
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


_FINISH, _ARRIVE = 0, 1


class Simulation:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.engine = Engine()
        for name, labels in scenario.namespaces.items():
            self.engine.set_namespace(name, labels)
        self.engine.apply_all(scenario.configs())
        self._events: list[tuple[float, int, int, str]] = []
        self._seq = 0
        self._infos: dict[str, WorkloadInfo] = {}
        self._durations: dict[str, float] = {}
        self.outcomes: dict[str, WorkloadOutcome] = {}
        self.timeline: list[TimelineEvent] = []
        self.now = 0.0
        for wl in scenario.workloads:
            info = workload_info(wl, scenario.priority_classes)
            self._infos[info.key] = info
            self._durations[info.key] = wl.duration
            self.outcomes[info.key] = WorkloadOutcome(arrival=wl.arrival)
            self._push(wl.arrival, _ARRIVE, info.key)

    def _push(self, at: float, kind: int, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at, kind, self._seq, key))

    def run(self, until: float | None = None) -> SimulationResult:
        cycles = 0
        end = 0.0
        while self._events:
            now = self._events[0][0]
            if until is not None and now > until:
                break
            self.now = end = now
            while self._events and self._events[0][0] == now:
                _, kind, _, key = heapq.heappop(self._events)
                if kind == _FINISH:
                    self._finish(key, now)
                else:
                    self._arrive(key, now)
            for result in self.engine.run_until_idle(now):
                cycles += 1
                for head, admission in result.admitted:
                    self._admitted(head.info.key, admission, now)
        for key, record in self.engine.records.items():
            outcome = self.outcomes[key]
            if outcome.finished_at is None and not outcome.admissions:
                outcome.pending_reason = record.pending_reason
                outcome.pending_message = record.pending_message
        return SimulationResult(end, self.outcomes, self.timeline, cycles)

    def _arrive(self, key: str, now: float) -> None:
        info = self._infos[key]
        self.engine.submit(info)
        self.timeline.append(TimelineEvent(now, "Arrived", key, "",
                                           f"queue {info.namespace}/{info.queue_name}"))

    def _admitted(self, key: str, admission: Admission, now: float) -> None:
        outcome = self.outcomes[key]
        outcome.admissions.append({
            "at": now,
            "clusterQueue": admission.cluster_queue,
            "borrowing": admission.borrowing,
            "podSets": {ps.name: {"count": ps.count, "flavors": dict(ps.flavors)}
                        for ps in admission.pod_sets},
        })
        detail = "; ".join(
            f"{ps.name}×{ps.count} on {', '.join(dict.fromkeys(ps.flavors.values()))}"
            for ps in admission.pod_sets)
        if admission.borrowing:
            detail += " (borrowing)"
        waited = now - outcome.arrival
        if waited > 0:
            detail += f" after {waited:g}s"
        self.timeline.append(TimelineEvent(now, "Admitted", key, admission.cluster_queue, detail))
        self._push(now + self._durations[key], _FINISH, key)

    def _finish(self, key: str, now: float) -> None:
        record = self.engine.records[key]
        cq = record.admission.cluster_queue if record.admission else ""
        self.engine.finish(key, now)
        self.outcomes[key].finished_at = now
        self.timeline.append(TimelineEvent(now, "Finished", key, cq, "quota released"))


def simulate(scenario: Scenario) -> SimulationResult:
    return Simulation(scenario).run()
