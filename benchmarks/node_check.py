"""What the Redis leader's node check costs on a large pool.

Every ``Timing.node_check_every`` (5 s) the leader looks for silent nodes (heartbeats older
than the node timeout), reads its node view again (every node, its live pods' ids), evicts
what ran on lost or drained nodes, and resyncs a window of workloads. It is O(nodes +
live pods), not per admission; this measures it on a pool the size a platform team may
run: ``--nodes`` nodes holding ``--pods`` live one-cpu pods, placed by a ``Leader`` on
Kueue's large-scale queues (1,000 ClusterQueues) on a real redis-server.

Prints the median wall and CPU time of the whole check and of the node view's read alone.

Usage: python benchmarks/node_check.py [--nodes 2000] [--pods 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from leader_step import drain_leader, step_until_idle, submissions
from redis_throughput import redis_server

from kuota import gctuning
from kuota.service.leader import Timing


def timed(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median (wall, CPU) milliseconds of ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    return (1000 * statistics.median(w for w, _ in runs),
            1000 * statistics.median(c for _, c in runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2000, help="nodes in the pool")
    parser.add_argument("--pods", type=int, default=20000,
                        help="live pods, in thousands placed a round (at most 20,000: the "
                             "shape's quota)")
    parser.add_argument("--repeat", type=int, default=5, help="checks timed")
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    gctuning.tune()
    # Long timeouts: nothing is lost while the pool is filled, and every check is alike.
    timing = Timing(lease_ttl=3600, node_timeout=3600)
    with redis_server(args.redis) as url, drain_leader(url, timing, args.nodes) as leader:
        for n in range(min(args.pods, 20000) // 1000):
            # (submitted only: the pods of every round stay live)
            leader.store.workloads.submit_many(submissions(f"r{n}"), time.time())
            step_until_idle(leader)
        live = sum(1 for t in leader.tracked.values() if t.placed)
        check = timed(lambda: leader._watch_nodes(time.time()), args.repeat)
        view = timed(leader.nodes.refresh, args.repeat)
    print(f"leader node check: {args.nodes:,} nodes, {live:,} live pods "
          f"({args.repeat} checks, medians)")
    print(f"  whole check       wall {check[0]:7.1f} ms   CPU {check[1]:7.1f} ms")
    print(f"  node view read    wall {view[0]:7.1f} ms   CPU {view[1]:7.1f} ms")


if __name__ == "__main__":
    main()
