"""How long a Redis-mode scheduler needs before it decides anything, at Kueue's large-scale
size: 10 cohorts × 100 ClusterQueues (1,000), 1,000 LocalQueues and 50,000 pending
workloads in the store (issue "Scale": leader ready ≤ 1 s after taking the lease).

Fills a real redis-server (pipelines of copies of a real pending record), then:

1. cold start: starts ``kuota scheduler`` A and prints, from its start, the lease taken,
   the leader ready (its "leading as" log line: store read, engine rebuilt, workloads
   queued) and the first workload admitted;
2. failover: starts scheduler B beside it, waits until B stands by with the store loaded,
   kills A (SIGKILL: no lease released) and prints how long B took from taking the lease
   to leading — what a failover costs on top of the lease's expiry;
3. a quota changed: applies one ClusterQueue with another nominalQuota and prints how long
   B took to lead on with it — taken in place (its "taken in place" log line), or, by a
   leader that cannot, rebuilt from the store (a new "leading as");
4. idle: once nothing changes any more (no node ever registered: the admitted wait for
   nodes, the rest for quota), prints B's CPU over 30 s — what a leader of that size
   costs while it waits.

Usage: python benchmarks/leader_ready.py [--queues 1000] [--pending 50000] [--redis URL]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import bigstore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


#: Seconds an idle leader is left to settle, then watched.
IDLE_SETTLE, IDLE_WINDOW = 30.0, 30.0


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def until(what: Callable[[], bool], deadline: float = 180) -> float | None:
    """The moment (``time.monotonic``) ``what`` holds, polled every 10 ms; None past the
    deadline."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline:
        if what():
            return time.monotonic()
        time.sleep(0.01)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=50_000)
    bigstore.add_redis_arg(parser)
    args = parser.parse_args()
    with bigstore.bench_store(args.redis) as bench:
        client = bench.client
        store = client.store
        client.apply(bigstore.queues(args.queues, nominal=20, borrowing=100, preemption={
            "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}))
        started = time.monotonic()
        bigstore.fill(client, args.pending, queues_count=args.queues)
        print(f"{args.queues:,} ClusterQueues and LocalQueues, {args.pending:,} pending "
              f"workloads written in {time.monotonic() - started:.1f} s")

        def holder() -> str:
            return str(store.redis.get(store.keys.lease) or "")

        def logged(log: Path, line: str) -> Callable[[], bool]:
            return lambda: line in log.read_text(errors="replace")

        logs = {name: bench.logs / f"scheduler-{name}.log" for name in "ab"}
        procs = {}
        try:
            t0 = time.monotonic()
            procs["a"] = bigstore.kuota(["scheduler", "--identity", "a", "--log-level", "INFO"],
                                        bench.env, logs["a"])
            cold = {
                "lease taken": until(lambda: holder().startswith("a|")),
                "leader ready": until(logged(logs["a"], "leading as")),
                "first workload admitted": until(lambda: store.redis.hget(
                    store.keys.workload("default/wl-0"), "state") != "Pending"),
            }
            print("cold start (from the scheduler's start):")
            for what, at in cold.items():
                print(f"  {what:24} " + (f"{at - t0:.2f} s" if at is not None
                                         else f"never (log: {logs['a']})"))

            procs["b"] = bigstore.kuota(["scheduler", "--identity", "b", "--log-level", "INFO"],
                                        bench.env, logs["b"])
            loaded = until(logged(logs["b"], "store loaded ahead of leading"))
            time.sleep(2.0)  # A goes on deciding; B follows
            procs["a"].send_signal(signal.SIGKILL)
            procs["a"].wait(30)
            killed = time.monotonic()
            lease = until(lambda: holder().startswith("b|"))
            ready = until(logged(logs["b"], "leading as"))
            print("failover (A killed, B standing by):")
            print("  B's store loaded ahead   " + (f"{loaded - killed:+.2f} s from the kill"
                                                    if loaded is not None else "never"))
            if lease is None or ready is None:
                print(f"  B never led (log: {logs['b']})")
                return
            print(f"  lease taken by B         {lease - killed:.2f} s after the kill "
                  "(the lease's expiry)")
            print(f"  B leading                {ready - lease:.2f} s after taking the lease "
                  "(target <= 1 s)")

            def lines() -> tuple[int, int]:
                text = logs["b"].read_text(errors="replace")
                return text.count("leading as"), text.count("taken in place")

            before = lines()
            changed = time.monotonic()
            client.apply(bigstore.queues(1, nominal=21, borrowing=100, preemption={
                "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}))
            taken = until(lambda: lines() != before)
            how = ("taken in place" if lines()[1] > before[1] else "the leader rebuilt")
            print("a ClusterQueue's quota changed:")
            print("  B leading on with it     " + (f"{taken - changed:.2f} s ({how})"
                                                    if taken is not None else "never"))
            # Idle: no node ever registered, so the admitted wait for nodes and the rest
            # for quota; nothing changes any more.
            time.sleep(IDLE_SETTLE)
            spent = cpu_seconds(procs["b"].pid)
            time.sleep(IDLE_WINDOW)
            spent = cpu_seconds(procs["b"].pid) - spent
            print(f"idle ({IDLE_WINDOW:.0f} s after {IDLE_SETTLE:.0f} s to settle; the admitted "
                  "wait for nodes, the rest for quota):")
            print(f"  B's CPU                  {100 * spent / IDLE_WINDOW:.1f} % of a core")
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(30)


if __name__ == "__main__":
    main()
