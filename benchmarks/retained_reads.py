"""Reading a store that retains many finished workloads: the CLI and the dashboard.

A pool keeps its finished workloads for ``--retain-finished`` (a week by default): at
one job a second, 600,000 records. Fills a real redis-server (started on 127.0.0.1
unless --redis is given) with N finished workloads (default 300,000; copies of a real
record, spec included) and 1,000 pending ones, then prints the wall time of each command
as a user runs it (a fresh ``kuota`` process, its output read to the end), and what the
dashboard's store reader costs: its first read and a read with nothing changed (it
reads again every second); and the Redis memory a finished workload takes (with
``--listpack-value N``, Redis's ``hash-max-listpack-value`` is set to N first: a
workload's hash stays compact only while every value is shorter).

Before finished workloads were left in Redis (kuota status, get, the dashboard) and the
tables printed without rich's layout, at 300,000: ``status`` 5.9 s, ``get workloads``
5.7 s, ``get workloads -a`` 150 s, ``history`` 156 s; the dashboard's first read
7.8 s, each later read 2.1 s (and a reader of 596 MiB).

Usage: python benchmarks/retained_reads.py [--finished 300000] [--listpack-value N]
           [--redis URL]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import bigstore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kuota.dashboard.redis_reader import RedisReader  # noqa: E402

COMMANDS = (("status",), ("get", "workloads"), ("get", "workloads", "wl-7"),
            ("get", "workloads", "-a"), ("history",), ("history", "--since", "1h"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--finished", type=int, default=300_000)
    parser.add_argument("--listpack-value", type=int, default=None, metavar="BYTES",
                        help="set Redis's hash-max-listpack-value first (default: leave it)")
    bigstore.add_redis_arg(parser)
    args = parser.parse_args()
    with bigstore.bench_store(args.redis) as bench:
        client = bench.client
        client.apply(bigstore.queues(10, nominal=4))
        redis = client.store.redis
        if args.listpack_value is not None:
            redis.config_set("hash-max-listpack-value", args.listpack_value)
        before = redis.info("memory")["used_memory"]
        bigstore.fill(client, args.finished, queues_count=10, name="done", finished=True)
        per_record = (redis.info("memory")["used_memory"] - before) / max(args.finished, 1)
        listpack = redis.config_get("hash-max-listpack-value").get("hash-max-listpack-value")
        bigstore.fill(client, 1_000, queues_count=10, name="wl")
        started = time.perf_counter()
        client.store.indexes.build()  # as a scheduler does when it first leads
        print(f"== {args.finished:,} finished (ended over six days) and 1,000 pending "
              f"workloads (the store's indexes checked in {time.perf_counter() - started:.2f} "
              "s, once per store)")
        print(f"  {'command':<32}{'wall s':>8}{'lines':>10}")
        for argv in COMMANDS:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "kuota.cli", *argv], env=bench.env,
                                  cwd=REPO, capture_output=True, text=True, timeout=1800,
                                  check=False)
            wall = time.perf_counter() - started
            if done.returncode not in (0, 1):  # (1: status says no scheduler leads)
                sys.exit(f"kuota {' '.join(argv)} failed: {done.stderr.strip()}")
            print(f"  {'kuota ' + ' '.join(argv):<32}{wall:>8.2f}"
                  f"{len(done.stdout.splitlines()):>10,}")
        reader = RedisReader(client.store)
        times = []
        for _ in range(3):
            started = time.perf_counter()
            reader.load()
            times.append(time.perf_counter() - started)
        print(f"  dashboard reader: first read {times[0]:.2f} s, a read with nothing "
              f"changed {min(times[1:]):.2f} s")
        print(f"  Redis memory per finished workload: {per_record:,.0f} bytes "
              f"(hash-max-listpack-value {listpack})")


if __name__ == "__main__":
    main()
