"""What writing a round's placements costs the leader, per pod: start jobs, place calls.

A Redis leader sends the pods it placed in a round to each node's rq queue as one start
job carrying all of them (:mod:`kuota.service.jobs`): in the drain of Kueue's large-scale
shape, a job of 1,000 one-pod gangs every round. This builds such a job's arguments
(:func:`kuota.service.jobs.encode`) and writes them as rq writes a job's data, once with
kuota's :class:`~kuota.service.jobs.JobSerializer` (orjson) and once with rq's own
``JSONSerializer`` (the standard library's ``json``), alternately, and prints the median
CPU time of each per pod. Both are read back to the same pods (checked).

The round's place calls carry, per pod, its requests and its gang's nodes as JSON
(:mod:`queueing.store.compact`). Those texts are written the same two ways, alternately:
by :func:`queueing.store.compact.dumps` and by the standard library's ``json.dumps``
(checked equal). No Redis server is needed.

Usage: python benchmarks/start_jobs.py [--pods 1000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: the checkout it names is the one measured

from rq.serializers import JSONSerializer  # noqa: E402

from kuota.service.jobs import START_PODS, JobSerializer, PodJob, decode, encode  # noqa: E402
from queueing.store import PodRef, compact  # noqa: E402


def round_of(pods: int) -> list[PodJob]:
    """One pod of each of ``pods`` one-pod gangs, as the drain places them on one node."""
    return [PodJob("kuota", PodRef(f"cohort{i % 10}-cq{i % 100}/small-{i}", 1, 0).id, "n1",
                   1, 1, "main", ("n1",), ("true",), {}, {"cpu": 1000}, "")
            for i in range(pods)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000, help="pods in the job (default 1000)")
    parser.add_argument("--repeat", type=int, default=30, help="timings each (default 30)")
    args = parser.parse_args()
    jobs = round_of(args.pods)
    ways = {"kuota's JobSerializer (orjson)": JobSerializer,
            "rq's JSONSerializer (json)": JSONSerializer}
    for serializer in ways.values():
        _, _, written, _ = serializer.loads(serializer.dumps((START_PODS, None, encode(jobs), {})))
        if decode(*written) != jobs:
            sys.exit("a serializer changed the pods")
    encoding: list[float] = []
    writing: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        cpu = time.process_time()
        data = (START_PODS, None, encode(jobs), {})
        encoding.append(time.process_time() - cpu)
        for name, serializer in ways.items():
            cpu = time.process_time()
            serializer.dumps(data)
            writing[name].append(time.process_time() - cpu)
    print(f"a start job of {args.pods:,} pods (medians of {args.repeat}, CPU time per pod)")
    rows = {"its arguments (encode)": encoding,
            **{f"written by {name}": values for name, values in writing.items()}}
    for name, values in rows.items():
        print(f"  {name:<44} {1e6 * statistics.median(values) / args.pods:6.2f} µs")
    _place_texts(jobs, args.repeat)


def _place_texts(jobs: list[PodJob], repeat: int) -> None:
    """The JSON texts of the round's place calls, per pod: its requests and its nodes."""
    ways: dict[str, Callable[..., str]] = {
        "queueing.store.compact (orjson)": compact.dumps,
        "the standard library's json": functools.partial(json.dumps, separators=(",", ":"))}

    def write(dumps: Callable[..., str]) -> list[tuple[str, str]]:
        return [(dumps(dict(job.requests), sort_keys=True), dumps(list(job.peers)))
                for job in jobs]

    if len({str(write(dumps)) for dumps in ways.values()}) != 1:
        sys.exit("the two ways wrote different texts")
    timings: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeat):
        for name, dumps in ways.items():
            cpu = time.process_time()
            write(dumps)
            timings[name].append(time.process_time() - cpu)
    print(f"the place calls' JSON of {len(jobs):,} pods (requests and nodes; medians of "
          f"{repeat}, CPU time per pod)")
    for name, values in timings.items():
        print(f"  {'written by ' + name:<44} {1e6 * statistics.median(values) / len(jobs):6.2f} µs")


if __name__ == "__main__":
    main()
