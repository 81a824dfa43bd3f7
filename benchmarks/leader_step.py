"""What one round of the Redis leader's work costs in the drain of Kueue's large-scale shape.

In the real-time large-scale run (benchmarks/large_scale.py --realtime) most workloads
are admitted in a drain where every leader step does the same round of work: follow
what ended and what was submitted, admit one head per ClusterQueue (1,000), persist the
admissions, place the gangs and send their pods. That run's figures move by ±10 % from
one run to the next on a shared 2-core machine; this isolates the round, without the
runner and the submitter, so that a change in the leader can be measured by itself.

The shape's 1,000 ClusterQueues and LocalQueues are applied to a real redis-server and a
``Leader`` is built on them in this process. Each round then:

1. ends the pods the previous round placed (one ``exit_many`` call, not measured);
2. submits one 1-cpu workload to every ClusterQueue (one ``submit_many``, not measured);
3. steps the leader until it has nothing left to do (measured): it follows the 2,000
   entries, admits the 1,000 workloads, persists and places them and sends their pods.

Prints, as medians over the rounds after the first two (warm-up): wall and CPU time per
round and per workload, and the share of the wall time the leader spent not on its own
CPU — waiting for Redis, mostly. Also the fastest round's CPU time: on a host whose other
tenants take the CPU at times, medians move by a third from run to run and the fastest
round much less.

The pool is one node big enough for everything, unless ``--nodes N`` registers N nodes of
64 cpus each (more when they would hold fewer than 2,000 pods): binpack fills them one
after the other and the pods' ends free them, so the best node changes from gang to gang.
That shows how the round's cost grows with the size of the pool.

``--calls`` also counts the Python calls of the measured rounds (cProfile, enabled for
those rounds only) and prints them per round. The count does not move with the host's
load, so on a busy host it tells a change's effect apart from the noise when the times
cannot (a call is not a fixed cost: a saving counted so is confirmed by the times).

Usage: python benchmarks/leader_step.py [--rounds 12] [--nodes 1] [--calls] [--redis URL]

Starts its own redis-server on a free port of 127.0.0.1 unless ``--redis URL`` is given.
Imports the package found first on ``sys.path`` (``PYTHONPATH`` decides which checkout is
measured).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: the checkout it names is the one measured

from large_scale import LARGE_SCALE  # noqa: E402
from redis_throughput import redis_server  # noqa: E402
from simulate_kueue_baseline import baseline  # noqa: E402

from kuota import gctuning  # noqa: E402
from kuota.client import Client  # noqa: E402
from kuota.service import submission  # noqa: E402
from kuota.service.connection import connect  # noqa: E402
from kuota.service.leader import Leader, Timing  # noqa: E402
from queueing.store import PodRef  # noqa: E402
from queueing.store.pods import PodExit  # noqa: E402
from queueing.store.workloads import SubmitRequest  # noqa: E402
from quota.config import EngineConfig  # noqa: E402

WARM_UP = 2


def submissions(tag: str) -> list[SubmitRequest]:
    """One 1-cpu workload for every ClusterQueue of the shape."""
    out = []
    for c in range(LARGE_SCALE.cohorts):
        for q in range(LARGE_SCALE.queues):
            manifest = submission.from_args(["true"], queue=f"cohort{c}-cq{q}/lq",
                                            name=f"{tag}-{c}-{q}", requests={"cpu": 1},
                                            priority=50)
            checked = submission.check(manifest, {})
            out.append(SubmitRequest(checked.key, checked.manifest, checked.queue,
                                     checked.priority, 0, checked.key))
    return out


@contextmanager
def drain_leader(url: str, timing: Timing, nodes: int = 1) -> Iterator[Leader]:
    """A ``Leader`` on the shape's 1,000 ClusterQueues and a pool of ``nodes`` nodes, in a
    store of its own on ``url`` (emptied afterwards)."""
    conn = connect(url, prefix=f"step{uuid.uuid4().hex[:6]}")
    Client(connection=conn).apply(baseline(shape=LARGE_SCALE, preemption=True)["objects"])
    store = conn.store
    for i in range(nodes):
        store.nodes.register(f"n{i + 1}", pool="bench",
                             capacity={"cpu": 10**9 if nodes == 1
                                       else 1000 * max(64, -(-2000 // nodes))}, labels={},
                             devices=[], now=time.time())
    lease = store.lease("bench", timing.lease_ttl)
    try:
        if not lease.acquire() or lease.holder is None:
            sys.exit("could not take the scheduler lease")
        yield Leader(conn, lease.holder, timing=timing, config=EngineConfig(), clock=time.time)
    finally:
        lease.release()
        store.reset()


def end_and_submit(leader: Leader, tag: str) -> None:
    """Round set-up: end the pods the last round placed, submit the next 1,000 workloads."""
    store = leader.store
    live = [(PodRef(key, t.attempt, 0), t.placed[0][0])
            for key, t in leader.tracked.items() if t.placed]
    if live:
        store.pods.exit_many([PodExit(ref, node, 1, 0) for ref, node in live], time.time())
    store.workloads.submit_many(submissions(tag), time.time())


def step_until_idle(leader: Leader) -> None:
    """The measured part of a round: the leader's steps until it has nothing left to do."""
    while True:
        leader.step()
        if not (leader.follower.behind or leader.unplaced or leader.busy or leader.recheck):
            return


def rounds(url: str, count: int, nodes: int = 1,
           profile: cProfile.Profile | None = None) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each round after the warm-up; ``profile``, if given, is
    enabled for those rounds only."""
    measured: list[tuple[float, float]] = []
    # (the pool's nodes send no heartbeats: a run longer than the node timeout, on a slow
    # host or under a profiler, would find them lost and wait for them forever)
    with drain_leader(url, Timing(lease_ttl=30.0, node_timeout=1e6), nodes) as leader:
        for n in range(count + WARM_UP):
            end_and_submit(leader, f"r{n}")
            profiled = profile if n >= WARM_UP else None
            if profiled is not None:
                profiled.enable()
            wall, cpu = time.perf_counter(), time.process_time()
            step_until_idle(leader)
            if profiled is not None:
                profiled.disable()
            if n >= WARM_UP:
                measured.append((time.perf_counter() - wall, time.process_time() - cpu))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=12, help="measured rounds (default 12)")
    parser.add_argument("--nodes", type=int, default=1, help="nodes in the pool (default 1)")
    parser.add_argument("--calls", action="store_true",
                        help="also count the Python calls of a round (cProfile: slows the "
                             "rounds, whose times are then not comparable)")
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    gctuning.tune()  # as `kuota scheduler` does
    profile = cProfile.Profile() if args.calls else None
    with redis_server(args.redis) as url:
        measured = rounds(url, args.rounds, args.nodes, profile)
    wall = statistics.median(w for w, _ in measured)
    cpu = statistics.median(c for _, c in measured)
    fastest = min(c for _, c in measured)
    per = LARGE_SCALE.cohorts * LARGE_SCALE.queues
    print(f"leader round of the large-scale drain: {per:,} workloads finished, submitted, "
          f"admitted and placed on {args.nodes:,} node(s) ({args.rounds} rounds, medians)")
    print(f"  wall   {1000 * wall:7.1f} ms a round, {1e6 * wall / per:6.1f} µs a workload")
    print(f"  CPU    {1000 * cpu:7.1f} ms a round, {1e6 * cpu / per:6.1f} µs a workload "
          f"(the fastest round {1000 * fastest:.1f} ms: on a busy host, compare these)")
    print(f"  not on the leader's CPU (waiting for Redis, mostly): "
          f"{100 * (1 - cpu / wall):.0f} % of the wall time")
    if profile is not None:
        calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
        print(f"  Python calls {calls / args.rounds:,.0f} a round (under cProfile: the times "
              "above are the profiled ones)")


if __name__ == "__main__":
    main()
