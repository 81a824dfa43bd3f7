"""Does the Redis leader's memory grow with the jobs it has scheduled?

The soak (benchmarks/soak.py) sees the scheduler's RSS creep by a few bytes a job over
hundreds of thousands of jobs. RSS mixes the leader's objects with the allocator's
arenas and the Redis client's buffers; this measures the objects alone, with
``tracemalloc``, in the round of benchmarks/leader_step.py (1,000 one-cpu jobs submitted,
admitted, placed and ended a round, finished workloads forgotten 5 s after they end).

After ``--warm-up`` rounds the traced memory is taken, then again after ``--rounds``
more: prints the growth per job, and the allocation sites that changed most. A leader that
kept something per job would grow in proportion to the rounds; run it with two values of
``--rounds`` to tell that from what a round holds while it runs.

Usage: python benchmarks/leader_memory.py [--warm-up 20] [--rounds 40] [--redis URL]

Slow: tracing every allocation makes the rounds some ten times slower.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))

from large_scale import LARGE_SCALE
from leader_step import drain_leader, end_and_submit, step_until_idle
from redis_throughput import redis_server

from kuota import gctuning
from kuota.service.leader import Timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warm-up", type=int, default=20, help="rounds before the first look")
    parser.add_argument("--rounds", type=int, default=40, help="rounds between the two looks")
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    gctuning.tune()  # as `kuota scheduler` does
    # (tracing slows the rounds down: the node must not be lost meanwhile)
    timing = Timing(lease_ttl=3600.0, node_timeout=3600.0, retain_finished=5.0)
    with redis_server(args.redis) as url, drain_leader(url, timing) as leader:

        def run(count: int, tag: str) -> None:
            for n in range(count):
                end_and_submit(leader, f"{tag}{n}")
                step_until_idle(leader)

        tracemalloc.start(4)
        run(args.warm_up, "w")
        gc.collect()
        before = tracemalloc.take_snapshot()
        run(args.rounds, "r")
        gc.collect()
        after = tracemalloc.take_snapshot()
    jobs = args.rounds * LARGE_SCALE.cohorts * LARGE_SCALE.queues
    stats = after.compare_to(before, "traceback")
    growth = sum(s.size_diff for s in stats)
    print(f"leader's traced memory over {args.rounds} rounds ({jobs:,} jobs) after "
          f"{args.warm_up} of warm-up: {growth / 1024:+,.0f} KiB, {growth / jobs:+.1f} B a job")
    print("  changed most (KiB, blocks, where allocated):")
    for stat in stats[:6]:
        frame = stat.traceback[-1]
        print(f"  {stat.size_diff / 1024:+9.1f} {stat.count_diff:+8,}  "
              f"{'/'.join(frame.filename.rsplit('/', 2)[-2:])}:{frame.lineno}")


if __name__ == "__main__":
    main()
