"""What the Redis leader's resync costs at 1,000 ClusterQueues and 50,000 live workloads.

Every ``Timing.resync_every`` (30 s) the leader compares the state stored for every
workload it holds live, and for a window of the retained others, with the engine's
(:mod:`kuota.service.resync`): the net under the event stream. A pass is done a slice a
step, so that no step is held up by it while admissions wait.

A ``Leader`` is built in this process on the large-scale shape (as
``benchmarks/leader_step.py`` builds it), and ``--live`` workloads are submitted to it
and followed, a thousand at a time: most wait for quota, the rest run on one big node.
Then passes are timed, alternately sliced (``RESYNC_SLICE``) and in one go (a slice as
big as the pass), and for each the CPU time of its
beginning, of its longest step and of the whole pass is printed. The live workloads are
compared first, then the window of stored ones (``Timing.resync_window``), which also
puts back in its index any workload missing from it.

Usage: python benchmarks/leader_resync.py [--live 50000] [--passes 2] [--redis URL]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: the checkout it names is the one measured

from leader_step import drain_leader, step_until_idle, submissions  # noqa: E402
from redis_throughput import redis_server  # noqa: E402

from kuota import gctuning  # noqa: E402
from kuota.service import resync  # noqa: E402
from kuota.service.leader import Leader, Timing  # noqa: E402


def timed_pass(leader: Leader) -> tuple[float, list[float]]:
    """CPU seconds of beginning a pass, and of each of its steps."""
    cpu = time.process_time()
    leader.resync.begin()
    began = time.process_time() - cpu
    steps = []
    while leader.resync.running:
        cpu = time.process_time()
        leader.resync.step()
        steps.append(time.process_time() - cpu)
    return began, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live", type=int, default=50_000,
                        help="live workloads, in thousands rounded up (default 50000)")
    parser.add_argument("--passes", type=int, default=2,
                        help="passes timed each way (default 2)")
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    gctuning.tune()  # as `kuota scheduler` does
    sliced = resync.RESYNC_SLICE
    # (no lease expiry nor lost node while the workloads are submitted)
    timing = Timing(lease_ttl=600.0, node_timeout=10**6)
    with redis_server(args.redis) as url, drain_leader(url, timing) as leader:
        for n in range(-(-args.live // 1000)):
            leader.store.workloads.submit_many(submissions(f"r{n}"), time.time())
            step_until_idle(leader)
        print(f"resync of a leader holding {len(leader.engine.records):,} live workloads "
              f"(window {timing.resync_window:,}; CPU time)")
        for _ in range(args.passes):
            for slice_size, how in ((sliced, f"slices of {sliced:,}"),
                                    (10**9, "in one go")):
                resync.RESYNC_SLICE = slice_size
                began, steps = timed_pass(leader)
                print(f"  {how:<20} {len(steps):3} step(s), the longest "
                      f"{1000 * max(steps):6.1f} ms; the pass {1000 * (began + sum(steps)):6.1f} "
                      f"ms (its beginning {1000 * began:5.1f} ms)")
        resync.RESYNC_SLICE = sliced


if __name__ == "__main__":
    main()
