"""How long a new Redis-mode leader needs before it decides anything, at Kueue's
large-scale size: 10 cohorts × 100 ClusterQueues (1,000), 1,000 LocalQueues and 50,000
pending workloads in the store (issue "Scale": leader ready ≤ 1 s after taking the lease).

Fills a real redis-server (pipelines of copies of a real pending record), starts
``kuota scheduler`` and prints, from its start: the lease taken, the leader ready (its
"leading as" log line: store read, engine rebuilt, workloads queued) and the first
workload admitted; and "ready − lease", the figure the target is about.

Usage: python benchmarks/leader_ready.py [--queues 1000] [--pending 50000] [--redis URL]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bigstore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=50_000)
    bigstore.add_redis_arg(parser)
    args = parser.parse_args()
    with bigstore.bench_store(args.redis) as bench:
        client = bench.client
        client.apply(bigstore.queues(args.queues, nominal=20, borrowing=100, preemption={
            "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}))
        started = time.monotonic()
        bigstore.fill(client, args.pending, queues_count=args.queues)
        print(f"{args.queues:,} ClusterQueues and LocalQueues, {args.pending:,} pending "
              f"workloads written in {time.monotonic() - started:.1f} s")
        log = bench.logs / "scheduler.log"
        t0 = time.monotonic()
        proc = bigstore.kuota(["scheduler", "--identity", "bench", "--log-level", "INFO"],
                              bench.env, log)
        led = ready = admitted = None
        try:
            while time.monotonic() - t0 < 180 and admitted is None:
                now = time.monotonic() - t0
                if led is None and client.store.redis.get(client.store.keys.lease):
                    led = now
                if ready is None and "leading as" in log.read_text(errors="replace"):
                    ready = now
                if ready is not None and client.store.redis.hget(
                        client.store.keys.workload("default/wl-0"), "state") != "Pending":
                    admitted = now
                time.sleep(0.01)
        finally:
            proc.terminate()
            proc.wait(30)
        for what, at in (("lease taken", led), ("leader ready", ready),
                         ("first workload admitted", admitted)):
            print(f"scheduler started -> {what:24} " + (f"{at:.2f} s" if at is not None
                                                         else f"never (log: {log})"))
        if led is not None and ready is not None:
            print(f"ready - lease = {ready - led:.2f} s (target <= 1 s)")


if __name__ == "__main__":
    main()
