"""The largest gang a pool takes, admitted and placed by a running scheduler (issue "Redis
mode for real users": a 100,000-pod job made the leader lose its lease for minutes and
blocked Redis for 1.5 s).

A workload may ask for at most ``MAX_PODS`` pods in all (``kuota.service.runnable``;
10,000), which bounds what one scheduling step writes. This submits one gang of that size
to a real redis-server with enough nodes registered (fake nodes: nothing runs, nodes keep
heartbeating), starts ``kuota scheduler`` (default 5 s lease) and prints:

* submit -> admitted and -> placed (all pods written, all-or-nothing);
* the longest Redis stall seen by a client pinging every 5 ms (what every worker and
  CLI call waits for while the scheduler's biggest script runs), and Redis's own
  slowest command (SLOWLOG);
* submit -> every node's start job sent (the pods' commands, and each gang's nodes once
  per node job);
* whether the lease stayed with the one scheduler and the lowest lease TTL seen.

Targets: no lease lost, Redis stall well under the lease's third (1.7 s), placed within a
few seconds.

Usage: python benchmarks/huge_gang.py [--pods 10000] [--nodes 100] [--redis URL]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

import bigstore
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kuota.service.runnable import MAX_PODS  # noqa: E402


class Pinger(threading.Thread):
    """Pings Redis every few ms; remembers the longest round trip (a stall)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.client = redis.Redis.from_url(url)
        self.longest = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.perf_counter()
            self.client.ping()
            self.longest = max(self.longest, time.perf_counter() - t)
            time.sleep(0.005)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=MAX_PODS)
    parser.add_argument("--nodes", type=int, default=100)
    bigstore.add_redis_arg(parser)
    args = parser.parse_args()
    per_node = -(-args.pods // args.nodes)
    with bigstore.bench_store(args.redis) as bench:
        url, client = bench.url, bench.client
        store = client.store
        client.apply(bigstore.queues(1, nominal=args.pods))
        epochs = {f"n{i}": store.nodes.register(
            f"n{i}", pool="p", capacity={"cpu": per_node * 1000}, labels={}, devices=[],
            now=time.time()) for i in range(args.nodes)}
        env, logs = bench.env, bench.logs
        scheduler = bigstore.kuota(["scheduler", "--identity", "bench"], env,
                                   logs / "scheduler.log")
        pinger = Pinger(url)
        raw = redis.Redis.from_url(url, decode_responses=True)
        try:
            while not raw.get(store.keys.lease):
                time.sleep(0.02)
            raw.slowlog_reset()
            pinger.start()
            holders: set[str] = set()
            lowest_ttl = 10**9
            queues = [f"rq:queue:{store.keys.node_queue(name)}" for name in epochs]
            t0 = time.monotonic()
            job = client.submit(["true"], queue="default/lq-0", name="huge", count=args.pods,
                                requests={"cpu": 1})
            admitted = placed = sent = None
            beat_at = 0.0
            while time.monotonic() - t0 < 120 and sent is None:
                now = time.monotonic()
                holders.add(raw.get(store.keys.lease) or "")
                lowest_ttl = min(lowest_ttl, raw.pttl(store.keys.lease))
                if now - beat_at > 2:
                    for name, epoch in epochs.items():
                        store.nodes.heartbeat(name, epoch)
                    beat_at = now
                record = job.record()
                if admitted is None and record.state.value == "Admitted":
                    admitted = now - t0
                if placed is None and record.placement:
                    placed = now - t0
                if placed is not None and all(raw.llen(q) for q in queues):
                    sent = now - t0
                time.sleep(0.01)
        finally:
            pinger.stop.set()
            stopping = time.monotonic()
            scheduler.terminate()
            try:
                scheduler.wait(30)
            except subprocess.TimeoutExpired:
                scheduler.kill()
            print(f"scheduler stopped {time.monotonic() - stopping:.1f} s after SIGTERM")
        slowest = max(raw.slowlog_get(128), key=lambda e: e["duration"], default=None)
        print(f"{args.pods:,} pods on {args.nodes} nodes ({per_node} cpu each)")
        print(f"submit -> admitted  {admitted:.2f} s" if admitted is not None
              else "never admitted")
        print(f"submit -> placed    {placed:.2f} s" if placed is not None
              else f"never placed (logs in {logs})")
        print(f"submit -> every node's start job sent  {sent:.2f} s" if sent is not None
              else f"start jobs not all sent (logs in {logs})")
        print(f"longest Redis stall seen by a client  {pinger.longest * 1000:.0f} ms")
        if slowest is not None:
            name = slowest["command"].split(b" ")[0] if isinstance(slowest["command"], bytes) \
                else str(slowest["command"]).split(" ")[0]
            print(f"slowest Redis command  {slowest['duration'] / 1000:.0f} ms ({name!s})")
        print(f"lease holders seen  {len(holders - {''})} "
              f"(lowest lease TTL seen {lowest_ttl / 1000:.2f} s of 5)")


if __name__ == "__main__":
    main()
