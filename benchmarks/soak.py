"""A scheduler kept busy for minutes: does anything grow with the jobs it has seen?

A real redis-server (started on 127.0.0.1 unless --redis is given), one ClusterQueue of
400 cpu, a ``kuota scheduler`` with ``--retain-finished 20s``, and a runner (no
processes) finishing each one-pod job 50 ms after it starts. The benchmark submits
1,000 jobs every half second (about 1,500 a second with the submitting itself) for
``--seconds`` and prints, every 15 s: the jobs submitted, the workloads Redis holds
(retention should keep them to about 20 s of jobs), the unfinished ones, the
scheduler's RSS and CPU seconds, and Redis's memory. A leak shows as RSS or Redis
memory climbing with the jobs submitted instead of levelling off.

Usage: python benchmarks/soak.py [--seconds 180] [--redis URL]
"""

from __future__ import annotations

import argparse
import collections
import time
import uuid
from pathlib import Path

import redis_throughput as rt
from procstat import cpu_seconds

from kuota.client import Client
from kuota.service import submission
from kuota.service.connection import connect
from queueing.store.workloads import SubmitRequest


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    with rt.redis_server(args.redis) as url:
        prefix = f"soak{uuid.uuid4().hex[:6]}"
        client = Client(connection=connect(url, prefix=prefix))
        client.apply(rt.queue_yaml(cpu=400))
        store = client.store
        runner = rt.TimedRunner(url, store, "bench-node", collections.defaultdict(lambda: 0.05))
        children = rt.Children(url, prefix)
        try:
            children.kuota("scheduler", "scheduler", "--log-level", "WARNING",
                           "--retain-finished", "20s")
            rt.wait_until("a leader", lambda: store.redis.get(store.keys.lease), 60)
            pid = children.procs[-1].pid
            print(f"  {'s':>6} {'submitted':>10} {'stored':>8} {'unfinished':>10} "
                  f"{'RSS MiB':>8} {'CPU s':>7} {'Redis MiB':>10}")
            started, submitted, sample_at = time.time(), 0, 0.0
            while time.time() - started < args.seconds:
                batch = []
                for _ in range(1_000):
                    checked = submission.check(submission.from_args(
                        ["true"], queue="default/lq", name=f"job-{submitted}",
                        requests={"cpu": 1}, priority=0), {})
                    batch.append(SubmitRequest(checked.key, checked.manifest, checked.queue,
                                               0, 0, checked.key))
                    submitted += 1
                store.workloads.submit_many(batch, time.time())
                if time.time() - started >= sample_at:
                    sample_at += 15.0
                    memory = store.redis.info("memory")["used_memory"] / 2**20
                    print(f"  {time.time() - started:>6.0f} {submitted:>10,} "
                          f"{store.workloads.count():>8,} "
                          f"{store.redis.zcard(store.keys.unfinished):>10,} "
                          f"{rss_mib(pid):>8.1f} {cpu_seconds(pid):>7.1f} {memory:>10.1f}",
                          flush=True)
                time.sleep(0.5)
            if runner.failure is not None:
                raise SystemExit(f"the runner failed: {runner.failure!r}")
        finally:
            runner.close()
            children.stop()
            store.reset()


if __name__ == "__main__":
    main()
