"""Kueue's "large-scale" scheduler performance shape, run in kuota's virtual time.

Shape (Kueue's test/performance/scheduler/configs/large-scale/generator.yaml): 10 cohorts
× 100 ClusterQueues = 1,000 ClusterQueues, each nominalQuota 20 cpu, borrowingLimit 100,
reclaimWithinCohort Any, withinClusterQueue LowerPriority; per ClusterQueue 35 small
(1 cpu, 150 ms, one every 60 ms, priority 50), 11 medium (5 cpu, 350 ms, every 300 ms,
priority 100) and 4 large (20 cpu, 700 ms, every 700 ms, priority 200) — 50,000
workloads. Kueue's CI (rangespec.yaml, mean of 19 runs): wall 1,179 s; mean time to
admission large 105.6 s, medium 256.4 s, small 700.4 s; min ClusterQueue usage 38.6 %.

Prints, for the shape with Kueue's preemption settings: virtual wall time, mean time to
admission per class, min ClusterQueue usage, CPU seconds for setting up the 2,000 queue
objects and for the whole run, and CPU per admission. ``--scaling`` adds a table of the
engine's CPU per admission at 30 / 300 / 1,000 ClusterQueues (the shape's arrivals) and
with 1k / 10k / 50k workloads pending at once (everything arriving at t=0).

``--realtime`` also runs the shape in real time on a real redis-server: workloads
submitted at their arrival times to a running ``kuota scheduler`` (default 5 s lease),
pods finished by a runner after their run time (benchmarks/redis_throughput.py's
harness); prints wall, admissions/s, mean time to admission per class, min usage,
the scheduler's CPU seconds and peak RSS, what the whole machine spent meanwhile (the
scheduler, redis-server, the runner and the submitter, against what the cores give; and,
second by second, the cores the scheduler and Redis used), how many lease terms there
were, the leader's longest step, and the share of its steps' time each stage took
(from its /metrics).

``--redis-scripts`` adds to the real-time run Redis's own time per store script (submit,
admit, place, a pod's start and exit, the leader's reads), from its slow log
(benchmarks/scripttime.py): the Redis half of what the run costs.

``--fair-sharing`` runs all of it with fair sharing on (Kueue's shape has it off): each
cohort's heads are then ordered by a tournament of dominant resource shares.

``--realtime-shards N`` runs the real-time shape split by cohort tree into N shares at once,
each a store of its own with its own scheduler, runner and submitter on the one
redis-server: not how kuota runs (one leader per store), but the most that leaders sharing
the work by cohort tree could give on this machine. Prints each share's wall, mean time to
admission per class, scheduler CPU and lease terms, and the whole run's means.

Usage: python benchmarks/large_scale.py [--no-preemption] [--fair-sharing] [--scaling]
           [--realtime [--realtime-scale S] [--redis-scripts]] [--realtime-shards N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import statistics
import sys
from contextlib import nullcontext
from typing import Any

from simulate_kueue_baseline import Shape, report, run

from kuota import gctuning

LARGE_SCALE = Shape(10, 100, (
    ("small", 35, 0.06, 1, 0.15, 50),
    ("medium", 11, 0.3, 5, 0.35, 100),
    ("large", 4, 0.7, 20, 0.7, 200),
))
KUEUE = ("Kueue's CI means for this shape: wall 1,179 s; time to admission large 105.6 s, "
         "medium 256.4 s, small 700.4 s; CQ usage >= 38.6 %")


def per_admission(r: dict[str, Any]) -> float:
    """Engine CPU µs per admission decision, queue setup excluded."""
    return 1e6 * (r["cpu"] - r["setup"]) / max(r["decisions"], 1)


def scaling(preemption: bool, fair_sharing: bool) -> None:
    print("== scaling: engine CPU per admission (queue setup excluded)")
    print(f"  {'shape':<44} {'setup CPU s':>11} {'peak pending':>12} {'µs/admission':>13}")
    rows: list[tuple[str, Shape, float, float]] = [
        (f"{c * q} ClusterQueues, the shape's arrivals", Shape(c, q, LARGE_SCALE.classes),
         1.0, 1.0)
        for c, q in ((3, 10), (3, 100), (10, 100))]
    rows += [(f"~{n:,} arriving at once (1,000 ClusterQueues)", LARGE_SCALE, 0.0, n / 50_000)
             for n in (1_000, 10_000, 50_000)]
    for title, shape, interval, count in rows:
        r = run(shape=shape, interval_scale=interval, count_scale=count,
                preemption=preemption, fair_sharing=fair_sharing)
        print(f"  {title:<44} {r['setup']:>11.2f} {r['peak_pending']:>12,} "
              f"{per_admission(r):>13.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-preemption", action="store_true",
                        help="drop the shape's preemption settings")
    parser.add_argument("--fair-sharing", action="store_true",
                        help="turn fair sharing on (the scheduler's --fair-sharing)")
    parser.add_argument("--scaling", action="store_true",
                        help="also print the scaling table (several more runs)")
    parser.add_argument("--realtime", action="store_true",
                        help="also run the shape in real time on Redis: a `kuota scheduler` "
                             "and a runner finishing each pod after its run time")
    parser.add_argument("--realtime-scale", type=float, default=1.0, metavar="S",
                        help="workloads per class × S in the real-time run (default 1)")
    parser.add_argument("--redis-scripts", action="store_true",
                        help="with --realtime: also print Redis's time per store script, "
                             "from its slow log (turned on for the run, then put back)")
    parser.add_argument("--realtime-shards", type=int, default=0, metavar="N",
                        help="also run the shape in real time split into N shares of its "
                             "cohorts at once, each with a scheduler, runner and submitter "
                             "of its own: what leaders sharing the work by cohort tree could "
                             "give at most on this machine (N divides 10)")
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    if args.redis_scripts and not args.realtime:
        parser.error("--redis-scripts: measures the real-time run, so only with --realtime")
    gctuning.tune()  # as `kuota simulate` and `kuota scheduler` do
    preemption = not args.no_preemption
    r = run(shape=LARGE_SCALE, preemption=preemption, fair_sharing=args.fair_sharing)
    report("large-scale (Kueue's shape" + (", preemption on" if preemption else "")
           + (", fair sharing on" if args.fair_sharing else "") + ")", r)
    print(f"  CPU seconds, queue setup {r['setup']:.2f}")
    print(f"  CPU per admission (run)  {per_admission(r):.1f} µs")
    print(f"  {KUEUE}")
    if args.scaling:
        scaling(preemption, args.fair_sharing)
    if args.realtime:
        realtime(args.realtime_scale, preemption, args.redis, r, args.fair_sharing,
                 args.redis_scripts)
    if args.realtime_shards:
        if LARGE_SCALE.cohorts % args.realtime_shards:
            parser.error(f"--realtime-shards {args.realtime_shards}: must divide the "
                         f"shape's {LARGE_SCALE.cohorts} cohorts")
        sharded(args.realtime_shards, args.realtime_scale, preemption, args.redis,
                args.fair_sharing)


def realtime(scale: float, preemption: bool, url: str | None, virtual: dict[str, Any],
             fair_sharing: bool, redis_scripts: bool) -> None:
    from procstat import machine_line, timeline_lines
    from redis_throughput import realtime_baseline, redis_server, stages_line
    from scripttime import ScriptTimes, script_times

    with redis_server(url) as server, \
            (script_times(server) if redis_scripts else nullcontext(ScriptTimes())) as scripts:
        r = realtime_baseline(server, scale, 0.01, shape=LARGE_SCALE, preemption=preemption,
                              scheduler_args=("--fair-sharing",) if fair_sharing else ())
    waits = ", ".join(f"{name} {r['waits'][name]:.2f} s" for name, *_ in LARGE_SCALE.classes)
    print(f"== real time on Redis (scale {scale:g}: {r['admitted']:,} workloads)")
    print(f"  wall                     {r['wall']:.1f} s "
          f"({r['admitted'] / r['wall']:.0f} admissions/s)")
    print(f"  mean time to admission   {waits}")
    print(f"  min ClusterQueue usage   {100 * r['min_usage']:.1f} %")
    print(f"  scheduler CPU            {r['cpu']:.1f} s, peak RSS {r['rss'] / 2**20:.0f} MiB")
    print(f"  machine CPU              {machine_line(r['machine'])}")
    # (Kueue's burst of arrivals in the first seconds, then the drain: the process at a
    # core's worth in a phase is the one that bounds it)
    print("  cores used, second by second")
    for line in timeline_lines(r["cores"]):
        print(f"    {line}")
    print(f"  lease terms              {r['terms']} (1: the lease was never lost)")
    print(f"  leader steps             {r['steps']:,.0f}, the longest {r['longest_step']:.2f} s "
          "(lease/3 = 1.67 s)")
    # (from the scheduler's kuota_scheduler_step_stage_seconds_total: "read" includes
    # waiting for new entries when there is nothing to do)
    print(f"  the steps' time by stage {stages_line(r['stages'])}")
    for line in r["slow_steps"]:  # (the scheduler's warnings, with each step's stages)
        print(f"    slow step{line.split('slow step', 1)[1]}")
    # What the time to admission is made of: pods holding quota past their run time
    # delay the higher classes' waves, and the smalls wait for those and then for the
    # drain's rate (docs/benchmarks.md, "The small class is bound by the drain's rate").
    print("  where the time to admission goes (seconds from the start)")
    print(f"    {'class':<8}{'sent late':>10}{'admitted 10 / 50 / 90 %':>26}"
          f"{'(virtual run)':>22}{'quota held past run time':>26}{'evictions':>11}")
    three = lambda xs: " / ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    for name, *_ in LARGE_SCALE.classes:
        t = r["timeline"][name]
        print(f"    {name:<8}{t['late']:>10.2f}{three(t['admitted']):>26}"
              f"{three(virtual['admitted_deciles'][name]):>22}{t['held_over']:>26.2f}"
              f"{t['evicted']:>11,}")
    if redis_scripts:
        print("  Redis's time by script (its slow log; the scripts' commands included)")
        for line in scripts.lines(r["admitted"]):
            print(f"    {line}")


def sharded(shards: int, scale: float, preemption: bool, url: str | None,
            fair_sharing: bool) -> None:
    """The real-time run split by cohort tree into ``shards`` independent runs at once.

    kuota has one leader per store, so this is not how it runs: it bounds what leaders
    sharing the work could give. Each share is a store of its own (a key prefix) on the
    one redis-server, with its own ``kuota scheduler``, runner and submitter; nothing
    is spent coordinating them, and the cohorts share nothing in this shape, so the
    decisions are the ones a single leader makes. The runners and submitters are N times
    the processes but do the same work in total. The shares start their clocks together,
    once all are set up; the whole run's wall is the longest share's."""
    from redis_throughput import redis_server

    share = Shape(LARGE_SCALE.cohorts // shards, LARGE_SCALE.queues, LARGE_SCALE.classes)
    fork = multiprocessing.get_context("fork")
    results, start = fork.Queue(), fork.Barrier(shards)
    with redis_server(url) as server:
        runs = [fork.Process(target=_share, args=(server, share, scale, preemption,
                                                  fair_sharing, start, results))
                for _ in range(shards)]
        for run_ in runs:
            run_.start()
        rows: list[dict[str, Any]] = []
        while len(rows) < shards:  # (read before joining: a full pipe blocks a child)
            try:
                rows.append(results.get(timeout=1.0))
            except queue.Empty:
                if not any(run_.is_alive() for run_ in runs):
                    break
        for run_ in runs:
            run_.join()
    if len(rows) < shards or any(run_.exitcode for run_ in runs):
        sys.exit("a share's run failed (its output is above)")
    names = [name for name, *_ in LARGE_SCALE.classes]
    print(f"== real time on Redis in {shards} shares of {share.cohorts} cohorts at once "
          f"(scale {scale:g})")
    print(f"  {'share':<7}{'wall s':>8}" + "".join(f"{n:>9}" for n in names)
          + f"{'CPU s':>8}{'lease terms':>13}")
    for index, r in enumerate(rows):
        print(f"  {index:<7}{r['wall']:>8.1f}" + "".join(f"{r['waits'][n]:>9.2f}" for n in names)
              + f"{r['cpu']:>8.1f}{r['terms']:>13}")
    # (the shares are the same size, so the mean of their means is the whole run's mean)
    print(f"  {'all':<7}{max(r['wall'] for r in rows):>8.1f}"
          + "".join(f"{statistics.fmean(r['waits'][n] for r in rows):>9.2f}" for n in names)
          + f"{sum(r['cpu'] for r in rows):>8.1f}")


def _share(url: str, shape: Shape, scale: float, preemption: bool, fair_sharing: bool,
           start: Any, results: Any) -> None:
    from redis_throughput import realtime_baseline

    # (every share's clock starts once all are set up, so their runs overlap whole)
    r = realtime_baseline(url, scale, 0.01, shape=shape, preemption=preemption,
                          scheduler_args=("--fair-sharing",) if fair_sharing else (),
                          ready=lambda: start.wait(600))
    results.put({key: r[key] for key in ("wall", "waits", "cpu", "terms")})


if __name__ == "__main__":
    main()
