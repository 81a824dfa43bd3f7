"""A simulation that also records, per ClusterQueue, how its queue and usage moved.

:class:`~kuota.simulator.Simulation` keeps what happened to each workload;
the report needs the queues' state over time. :class:`TracedSimulation` runs
the same simulation and, after every instant settles (all cycles run, every
event observed), reads the engine: per ClusterQueue its pending and admitted
counts and its usage per flavor/resource. A sample is kept only when it
differs from the previous one, so the trace is a step function with one step
per change. Quotas (nominal, borrowing limit) are read once: a scenario does
not change its queue objects while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kuota.scenario import Scenario
from kuota.simulator import Simulation, SimulationResult
from quota.lifecycle import State
from quota.resources import FlavorResource


@dataclass(frozen=True)
class Sample:
    at: float
    pending: int
    admitted: int
    #: (flavor, resource) -> used, milli-units.
    usage: tuple[tuple[tuple[str, str], int], ...]


@dataclass(frozen=True)
class Quota:
    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None


@dataclass
class QueueTrace:
    name: str
    cohort: str
    quotas: tuple[Quota, ...]
    samples: list[Sample] = field(default_factory=list)
    #: (time, workload, reason) of every eviction from this ClusterQueue.
    evictions: list[tuple[float, str, str]] = field(default_factory=list)


@dataclass
class Trace:
    result: SimulationResult
    queues: dict[str, QueueTrace]


class TracedSimulation(Simulation):
    def __init__(self, scenario: Scenario, *, seed: int = 0) -> None:
        super().__init__(scenario, seed=seed)
        self.queues: dict[str, QueueTrace] = {}
        for name, cq in sorted(self.engine.cache.cluster_queues.items()):
            quotas = tuple(Quota(fr.flavor, fr.resource, cell.nominal, cell.borrowing_limit)
                           for fr, cell in sorted(cq.quotas.items()))
            self.queues[name] = QueueTrace(name, cq.cohort or "", quotas)

    def _settle(self, now: float) -> int:
        cycles = super()._settle(now)
        self._sample(now)
        return cycles

    def _sample(self, now: float) -> None:
        cache = self.engine.cache
        for name, trace in self.queues.items():
            node = cache.tree.queues.get(name)
            holding = cache.workloads.get(name, {})
            admitted = sum(1 for key in holding
                           if self.engine.records[key].state is not State.QUOTA_RESERVED)
            usage = tuple(((q.flavor, q.resource),
                           node.usage.get(FlavorResource(q.flavor, q.resource), 0)
                           if node is not None else 0)
                          for q in trace.quotas)
            sample = Sample(now, sum(1 for _ in self.engine.queues.positions(name)), admitted,
                            usage)
            last = trace.samples[-1] if trace.samples else None
            if last is None or (last.pending, last.admitted, last.usage) != (
                    sample.pending, sample.admitted, sample.usage):
                trace.samples.append(sample)

    def traced(self, until: float | None = None) -> Trace:
        result = self.run(until=until)
        for event in result.timeline:
            if event.event == "Evicted" and event.cluster_queue in self.queues:
                self.queues[event.cluster_queue].evictions.append(
                    (event.at, event.workload, event.detail))
        return Trace(result, self.queues)


def trace(scenario: Scenario, *, seed: int = 0, until: float | None = None) -> Trace:
    return TracedSimulation(scenario, seed=seed).traced(until=until)
