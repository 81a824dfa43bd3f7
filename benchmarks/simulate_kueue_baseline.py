"""Kueue's scheduler performance "baseline" shape, run in kuota's virtual time.

Shape (Kueue's test/performance/scheduler/configs/baseline): 5 cohorts × 6
ClusterQueues, each with nominalQuota 20 cpu and borrowingLimit 100; per
ClusterQueue 350 small (1 cpu, 200 ms, one every 100 ms, priority 50),
100 medium (5 cpu, 500 ms, every 500 ms, priority 100) and 50 large
(20 cpu, 1 s, every 1.2 s, priority 200) workloads — 15,000 in all.

Prints the virtual wall time, mean time-to-admission per class, the minimum
ClusterQueue usage (share of nominal quota used over the run, as Kueue's
checker computes it), and the CPU seconds the simulation cost. With
``--pending-scale N`` (default 10) it also runs two bursts where every
workload arrives at once — 1/N of the set, then all of it — and prints how
the CPU cost per admission decision changed while the pending queues grew N×.

Usage: python benchmarks/simulate_kueue_baseline.py [--pending-scale 10] [--preemption]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kuota import gctuning
from kuota.scenario import parse_scenario
from kuota.simulator import Simulation

#: (name, count per ClusterQueue, interval s, cpu, runtime s, priority)
WorkloadClass = tuple[str, int, float, int, float, int]


@dataclass(frozen=True)
class Shape:
    """One of Kueue's scheduler performance shapes (its generator.yaml): every cohort has
    ``queues`` ClusterQueues of nominalQuota 20 cpu and borrowingLimit 100, and every
    ClusterQueue gets the same workload classes."""

    cohorts: int
    queues: int
    classes: tuple[WorkloadClass, ...]


BASELINE = Shape(5, 6, (
    ("small", 350, 0.1, 1, 0.2, 50),
    ("medium", 100, 0.5, 5, 0.5, 100),
    ("large", 50, 1.2, 20, 1.0, 200),
))
CLASSES = BASELINE.classes


def baseline(*, interval_scale: float = 1.0, count_scale: float = 1.0,
             preemption: bool = False, shape: Shape = BASELINE) -> dict[str, Any]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "ResourceFlavor",
         "metadata": {"name": "default"}},
    ]
    workloads: list[dict[str, Any]] = []
    for c in range(shape.cohorts):
        for q in range(shape.queues):
            cq = f"cohort{c}-cq{q}"
            spec: dict[str, Any] = {
                "cohortName": f"cohort{c}",
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": "default", "resources": [
                        {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}]}],
            }
            if preemption:
                spec["preemption"] = {"reclaimWithinCohort": "Any",
                                      "withinClusterQueue": "LowerPriority"}
            objects.append({"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue",
                            "metadata": {"name": cq}, "spec": spec})
            objects.append({"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
                            "metadata": {"name": "lq", "namespace": cq},
                            "spec": {"clusterQueue": cq}})
            for name, count, interval, cpu, runtime, priority in shape.classes:
                for i in range(max(1, round(count * count_scale))):
                    workloads.append({
                        "name": f"{name}-{i}", "namespace": cq, "queueName": "lq",
                        "arrival": round(i * interval * interval_scale, 6),
                        "duration": runtime, "priority": priority,
                        "podSets": [{"name": "main", "count": 1, "requests": {"cpu": cpu}}],
                    })
    return {"objects": objects, "workloads": workloads}


def run(*, interval_scale: float = 1.0, count_scale: float = 1.0,
        preemption: bool, shape: Shape = BASELINE, fair_sharing: bool = False) -> dict[str, Any]:
    doc = baseline(interval_scale=interval_scale, count_scale=count_scale,
                   preemption=preemption, shape=shape)
    if fair_sharing:
        doc["config"] = {"fairSharing": {"enable": True}}
    scenario = parse_scenario(doc, source="baseline")
    start = time.process_time()
    sim = Simulation(scenario)
    setup = time.process_time() - start
    result = sim.run()
    cpu = time.process_time() - start
    waits: dict[str, list[float]] = defaultdict(list)
    admitted_at: dict[str, list[float]] = defaultdict(list)
    used: dict[str, float] = defaultdict(float)  # cpu-seconds per ClusterQueue
    decisions = 0
    for key, outcome in result.workloads.items():
        cls = key.split("/")[1].split("-")[0]
        if outcome.admissions:
            first = outcome.admissions[0]
            waits[cls].append(first["at"] - outcome.arrival)
            admitted_at[cls].append(first["at"])
            decisions += len(outcome.admissions)
        if outcome.finished_at is not None:
            spec = next(c for c in shape.classes if c[0] == cls)
            used[key.split("/")[0]] += spec[3] * spec[4]
    min_usage = min(v / (20 * result.end) for v in used.values()) if result.end else 0.0
    return {"wall": result.end, "cpu": cpu, "setup": setup, "decisions": decisions,
            "cycles": result.cycles,
            "waits": {k: sum(v) / len(v) for k, v in waits.items()},
            "admitted": sum(len(v) for v in waits.values()), "min_usage": min_usage,
            "admitted_deciles": {k: deciles(v) for k, v in admitted_at.items()},
            "peak_pending": _peak_pending(result)}


def deciles(xs: list[float]) -> tuple[float, float, float]:
    """The 10th, 50th and 90th percentiles of ``xs`` (nearest rank)."""
    ordered = sorted(xs)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return at(0.1), at(0.5), at(0.9)


def _peak_pending(result: Any) -> int:
    events: list[tuple[float, int]] = []
    for outcome in result.workloads.values():
        events.append((outcome.arrival, 1))
        if outcome.admissions:
            events.append((outcome.admissions[0]["at"], -1))
    peak = current = 0
    for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
        current += delta
        peak = max(peak, current)
    return peak


def report(title: str, r: dict[str, Any]) -> None:
    print(f"== {title}")
    print(f"  workloads admitted      {r['admitted']}")
    print(f"  virtual wall time       {r['wall']:.1f} s")
    for cls in ("large", "medium", "small"):
        print(f"  mean time to admission  {cls:<6} {r['waits'].get(cls, float('nan')):8.2f} s")
    print(f"  min ClusterQueue usage  {100 * r['min_usage']:.1f} % of nominal")
    print(f"  peak pending workloads  {r['peak_pending']}")
    print(f"  cycles                  {r['cycles']}")
    print(f"  CPU seconds             {r['cpu']:.2f}")
    print(f"  CPU per decision        {1e6 * r['cpu'] / max(r['decisions'], 1):.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pending-scale", type=float, default=10.0,
                        help="also run with arrival intervals divided by this (default 10)")
    parser.add_argument("--preemption", action="store_true",
                        help="use the shape's preemption settings (reclaimWithinCohort: Any, "
                             "withinClusterQueue: LowerPriority)")
    args = parser.parse_args()
    gctuning.tune()  # as `kuota simulate` and `kuota scheduler` do
    base = run(interval_scale=1.0, preemption=args.preemption)
    report("baseline (Kueue's shape)", base)
    print("  Kueue's published means for this shape: wall 351 s; time to admission "
          "large 16.5 s, medium 76.8 s, small 215 s; CQ usage >= 55.9 %")
    if args.pending_scale and args.pending_scale != 1:
        # Everything arrives at once, so the whole set waits: N times the
        # workloads means N times the pending queue length.
        few = run(interval_scale=0.0, count_scale=1.0 / args.pending_scale,
                  preemption=args.preemption)
        report(f"burst: 1/{args.pending_scale:g} of the workloads arrive at t=0", few)
        many = run(interval_scale=0.0, preemption=args.preemption)
        report("burst: all workloads arrive at t=0", many)
        per_few = few["cpu"] / max(few["decisions"], 1)
        per_many = many["cpu"] / max(many["decisions"], 1)
        growth = many["peak_pending"] / max(few["peak_pending"], 1)
        print(f"== per-decision cost grew {per_many / per_few:.2f}x while pending grew "
              f"{growth:.1f}x (target: at most 2x)")


if __name__ == "__main__":
    main()
