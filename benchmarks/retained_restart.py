"""A scheduler restarted over many retained finished workloads (issue "Redis mode for real
users": with the default ``--retain-finished 7d``, ~60,000 finished workloads made every
rebuild outlast the 5 s lease and no job was admitted any more).

Fills a real redis-server with N finished workload records (copies of a real one, spec
included; default 100,000), submits one new job, then starts ``kuota scheduler`` (default
lease 5 s) and ``kuota worker`` and prints how long the scheduler took to lead (lease
taken), to admit the new job, and to see it finish. Target: leads within one lease,
admits within 5 s. Then it lets the leader run until its first resync (30 s after it
took the lease; ``--steps-for``) and prints its longest step, from its /metrics: a
resync that read every retained workload took 0.9 s at 100,000 and 2.6 s at 300,000
(target: every step within a third of the lease, 1.67 s).

Usage: python benchmarks/retained_restart.py [--finished 100000] [--unindexed]
           [--steps-for 40] [--redis URL]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bigstore
from redis_throughput import free_port, step_figures

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--finished", type=int, default=100_000)
    parser.add_argument("--unindexed", action="store_true",
                        help="leave the store's indexes unbuilt, as in a store written by "
                             "an older kuota: the scheduler builds them when it first leads")
    parser.add_argument("--steps-for", type=float, default=40.0, metavar="SECONDS",
                        help="how long after the lease the leader's steps are watched "
                             "(default 40: its first resync comes 30 s after the lease)")
    bigstore.add_redis_arg(parser)
    args = parser.parse_args()
    with bigstore.bench_store(args.redis) as bench:
        client = bench.client
        client.apply(bigstore.queues(1, nominal=4))
        started = time.monotonic()
        bigstore.fill(client, args.finished, queues_count=1, name="done", finished=True)
        print(f"{args.finished:,} finished workloads written in "
              f"{time.monotonic() - started:.1f} s")
        if not args.unindexed:  # a store this kuota wrote: its indexes are complete
            client.store.workloads.index_namespaces()
            client.store.indexes.build()
        job = client.submit(["true"], queue="default/lq-0", name="new", requests={"cpu": 1})
        env, logs = bench.env, bench.logs
        t0 = time.monotonic()
        port = free_port()
        procs = [bigstore.kuota(["scheduler", "--identity", "bench", "--metrics-listen",
                                 f"127.0.0.1:{port}"], env, logs / "scheduler.log"),
                 bigstore.kuota(["worker", "--pool", "p", "--node", "n1", "--resources",
                                 "cpu=4"], env, logs / "worker.log")]
        led = admitted = None
        try:
            while time.monotonic() - t0 < 120:
                now = time.monotonic() - t0
                if led is None and client.store.redis.get(client.store.keys.lease):
                    led = now
                if admitted is None and job.record().state in ("Admitted", "Finished"):
                    admitted = now
                if job.status().finished:
                    break
                time.sleep(0.02)
            finished = time.monotonic() - t0
            if led is not None:
                time.sleep(max(0.0, t0 + led + args.steps_for - time.monotonic()))
            steps = step_figures(port)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(30)
        print(f"scheduler started -> lease taken   {led:.2f} s" if led is not None
              else "lease never taken")
        print(f"scheduler started -> job admitted  {admitted:.2f} s" if admitted is not None
              else f"job not admitted (logs in {logs})")
        print(f"scheduler started -> job finished  {finished:.2f} s")
        print(f"leader steps in its first {args.steps_for:g} s  {steps['steps']:,.0f}, the "
              f"longest {steps['longest_step']:.2f} s")
        print("targets: lease within one lease TTL (5 s), admission within 5 s, every step "
              "within lease/3 (1.67 s)")


if __name__ == "__main__":
    main()
