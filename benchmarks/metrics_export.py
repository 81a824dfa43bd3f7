"""What exporting the queue gauges costs with Kueue's large-scale shape (1,000 ClusterQueues).

The Redis-mode leader sets the gauges after a step (at most once a second, and never more
than a twentieth of its time), the operator at each status sync: every ClusterQueue's
waiting, blocked, reserving and admitted counts and its quota cells. The shape is run in
virtual time up to ``--at`` seconds (by default in the middle of its drain: thousands
holding quota, twenty thousand waiting), then the export is timed: the first one (every
series labelled), again with nothing changed, and after one more virtual step.

Usage: python benchmarks/metrics_export.py [--at SECONDS] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from large_scale import LARGE_SCALE
from simulate_kueue_baseline import baseline

from admission.engine import Engine
from kuota.operator.metrics import Metrics
from kuota.scenario import parse_scenario
from kuota.simulator import Simulation


@dataclass
class Controller:
    engine: Engine


def timed(metrics: Metrics, controller: Controller) -> float:
    started = time.perf_counter()
    metrics.observe_queues(controller)
    return 1000 * (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--at", type=float, default=3.8,
                        help="virtual seconds to run the shape before exporting (default 3.8)")
    parser.add_argument("--repeat", type=int, default=9, help="exports timed per figure")
    args = parser.parse_args()
    sim = Simulation(parse_scenario(baseline(preemption=True, shape=LARGE_SCALE),
                                    source="large-scale"))
    sim.run(until=args.at)
    engine = sim.engine
    controller = Controller(engine)
    holding = sum(len(entries) for entries in engine.cache.workloads.values())
    waiting = sum(len(queue) for queue in engine.queues.queues.values())
    print(f"== queue gauges: {len(engine.cache.cluster_queues):,} ClusterQueues, "
          f"{holding:,} workloads holding quota, {waiting:,} waiting (virtual t={args.at} s)")
    first = [timed(Metrics(), controller) for _ in range(args.repeat)]
    metrics = Metrics()
    metrics.observe_queues(controller)
    unchanged = [timed(metrics, controller) for _ in range(args.repeat)]
    print(f"  first export (every series labelled)  {statistics.median(first):7.1f} ms")
    print(f"  export, nothing changed               {statistics.median(unchanged):7.1f} ms")
    sim.run(until=args.at + 0.05)
    print(f"  export after 50 virtual ms more       {timed(metrics, controller):7.1f} ms")


if __name__ == "__main__":
    main()
