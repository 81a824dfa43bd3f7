"""GPU fragmentation: binpack (MostAllocated) against spread (LeastAllocated).

A virtual-time simulation of 64 nodes × 8 GPUs. A seeded random stream of
gangs arrives (Poisson arrivals); a gang of 1, 2, 4 or 8 GPUs is one pod that
needs all its GPUs on one node (a single-node data-parallel job on NVLink),
and runs for a random (exponential) time. Waiting gangs are retried at every
arrival and completion in arrival order, and any gang that fits starts
(backfill). Each gang is placed with :func:`placement.gang.place_gang` and
kube-scheduler's formulas, once with ``MostAllocated`` and once with
``LeastAllocated`` (kube-scheduler's default), on the very same stream.

Printed per policy: GPU utilisation over the arrival window, the share of
8-GPU gangs that started the moment they arrived, and the mean wait per gang
size. Target: binpack starts at least 1.5× as many 8-GPU gangs without
waiting as spread.

    .venv/bin/python benchmarks/fragmentation.py [--seed 7] [--gangs 6000] [--load 0.85]
"""

from __future__ import annotations

import argparse
import heapq
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from placement.gang import GangPlacement, place_gang
from placement.model import Node, PodRequirements
from placement.scoring import ResourceAllocationScorer, ResourceSpec, Strategy

GPU = "nvidia.com/gpu"
NODES, GPUS_PER_NODE = 64, 8
SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (0.40, 0.25, 0.20, 0.15)
MEAN_DURATION = 60.0  # virtual minutes


@dataclass(frozen=True)
class Gang:
    index: int
    gpus: int
    arrival: float
    duration: float


def make_stream(seed: int, count: int, load: float) -> list[Gang]:
    """Arrival rate chosen so offered GPU demand is ``load`` × capacity."""
    rng = random.Random(seed)
    mean_gpus = sum(s * w for s, w in zip(SIZES, SIZE_WEIGHTS, strict=True))
    rate = load * NODES * GPUS_PER_NODE / (mean_gpus * MEAN_DURATION)
    now, gangs = 0.0, []
    for index in range(count):
        now += rng.expovariate(rate)
        size = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        gangs.append(Gang(index, size, now, rng.expovariate(1 / MEAN_DURATION)))
    return gangs


@dataclass
class Result:
    waits: dict[int, list[float]] = field(default_factory=lambda: {s: [] for s in SIZES})
    busy_gpu_minutes: float = 0.0
    window: float = 0.0


def simulate(gangs: list[Gang], strategy: Strategy) -> Result:
    scorer = ResourceAllocationScorer(strategy, (ResourceSpec(GPU),))
    nodes = {f"node-{i:02d}": Node(f"node-{i:02d}", {GPU: GPUS_PER_NODE * 1000})
             for i in range(NODES)}
    pods = {s: PodRequirements({GPU: s * 1000}) for s in SIZES}
    result = Result(window=gangs[-1].arrival - gangs[0].arrival)
    # events: (time, order, kind, payload); kind 0 = completion first at equal times
    events: list[tuple[float, int, int, object]] = []
    for g in gangs:
        heapq.heappush(events, (g.arrival, g.index, 1, g))
    waiting: list[Gang] = []
    order = len(gangs)
    used_gpus, last_t = 0, gangs[0].arrival
    end = gangs[-1].arrival
    while events:
        t, _, kind, payload = heapq.heappop(events)
        # integrate allocated GPUs over the arrival window only
        lo, hi = max(last_t, gangs[0].arrival), min(t, end)
        if hi > lo:
            result.busy_gpu_minutes += used_gpus * (hi - lo)
        last_t = t
        if kind == 1:
            waiting.append(payload)  # type: ignore[arg-type]
        else:
            name, size = payload  # type: ignore[misc]
            nodes[name] = Node(name, nodes[name].allocatable,
                               {GPU: nodes[name].requested[GPU] - size * 1000})
            used_gpus -= size
        # retry waiting gangs in arrival order; any that fits starts (backfill)
        max_free = max(GPUS_PER_NODE - n.requested.get(GPU, 0) // 1000 for n in nodes.values())
        still: list[Gang] = []
        for gang in waiting:
            if gang.gpus > max_free:
                still.append(gang)
                continue
            placed = place_gang([pods[gang.gpus]], list(nodes.values()), scorer)
            assert isinstance(placed, GangPlacement)
            (name,) = placed.assignments
            nodes[name] = Node(name, nodes[name].allocatable,
                               {GPU: placed.nodes[name].requested[GPU]})
            used_gpus += gang.gpus
            result.waits[gang.gpus].append(t - gang.arrival)
            order += 1
            heapq.heappush(events, (t + gang.duration, order, 0, (name, gang.gpus)))
            max_free = max(GPUS_PER_NODE - n.requested.get(GPU, 0) // 1000
                           for n in nodes.values())
        waiting = still
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--gangs", type=int, default=6000)
    parser.add_argument("--load", type=float, default=0.85,
                        help="offered GPU demand as a share of capacity")
    args = parser.parse_args()
    gangs = make_stream(args.seed, args.gangs, args.load)
    print(f"{NODES} nodes x {GPUS_PER_NODE} GPUs, {len(gangs)} gangs, seed {args.seed}, "
          f"offered load {args.load:.0%}, sizes {dict(zip(SIZES, SIZE_WEIGHTS, strict=True))}, "
          f"mean duration {MEAN_DURATION:.0f} min")
    started = time.perf_counter()
    share8 = {}
    print(f"{'policy':<28}{'GPU util':>9}{'8-GPU no wait':>15}"
          + "".join(f"{f'wait {s}-GPU':>13}" for s in SIZES))
    for label, strategy in (("binpack (MostAllocated)", Strategy.MOST_ALLOCATED),
                            ("spread (LeastAllocated)", Strategy.LEAST_ALLOCATED)):
        result = simulate(gangs, strategy)
        util = result.busy_gpu_minutes / (NODES * GPUS_PER_NODE * result.window)
        eights = result.waits[8]
        share8[strategy] = sum(1 for w in eights if w == 0) / len(eights)
        waits = "".join(f"{sum(w) / len(w):>9.1f} min" for w in
                        (result.waits[s] for s in SIZES))
        print(f"{label:<28}{util:>9.1%}{share8[strategy]:>15.1%}{waits}")
    ratio = share8[Strategy.MOST_ALLOCATED] / max(share8[Strategy.LEAST_ALLOCATED], 1e-9)
    verdict = "met" if ratio >= 1.5 else "NOT met"
    print(f"binpack / spread, 8-GPU gangs placed without waiting: {ratio:.2f}x "
          f"(target >= 1.5x: {verdict}); {time.perf_counter() - started:.1f} s")
    return 0 if ratio >= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
