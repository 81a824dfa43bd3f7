"""What packing script calls costs their caller, per workload or per call.

The leader persists a round's admissions and placements as a few ``EVALSHA`` calls
carrying every workload's keys and arguments (:class:`queueing.store.scripts.Sent`).
This packs such calls — 1,000 workloads, one key and eight arguments each (strings, an
int, a float, as an admission carries them), in two calls — the way ``Sent`` packs them,
and the way redis-py's packer does (each argument checked by ``_arg``, then
``Connection.pack_commands``, as a pipeline packs), alternately, and prints the median
CPU time of each per workload. Then the same for calls run together, one per request
(``Scripts.answers``: a node's pod reports, a job array's submissions): 1,000 calls of
seven keys and nine arguments, as a pod's exit carries them, per call. Both ways write
the same bytes (checked). No Redis server is needed.

Usage: python benchmarks/script_packing.py [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: the checkout it names is the one measured

from redis.connection import Connection  # noqa: E402

from queueing.store import scripts  # noqa: E402

WORKLOADS = 1_000
CALLS = 2


def calls() -> list[tuple[list[str], list[object]]]:
    per_call = WORKLOADS // CALLS
    return [([f"kuota:workload:ns/w{c}-{i}" for i in range(per_call)],
             [arg for i in range(per_call) for arg in (
                 f"ns/w{c}-{i}", 3, 1764329876.5, "team-a", '{"cq":"team-a"}', 1,
                 f"leader#{i}", 0)])
            for c in range(CALLS)]


def reports() -> list[tuple[list[str], list[object]]]:
    """One call per pod's exit, as ``PodStore.exit_many`` makes them."""
    return [([f"kuota:pod:ns/w{i}:1:0", f"kuota:workload:ns/w{i}", "kuota:node:n1:pods",
              f"kuota:workload:ns/w{i}:history", "kuota:events", "kuota:workloads-unfinished",
              "kuota:workloads-finished"],
             [f"ns/w{i}:1:0", 1, 0, 1764329876.5, False, 100_000, "", 0, "n1"])
            for i in range(WORKLOADS)]


def redis_py_packing(conn: Connection, sha: str,
                     batch: list[tuple[list[str], list[object]]]) -> bytes:
    checked = [(keys, [scripts._arg(a) for a in args]) for keys, args in batch]
    return b"".join(conn.pack_commands([("EVALSHA", sha, len(keys), *keys, *args)
                                        for keys, args in checked]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30, help="timings each (default 30)")
    args = parser.parse_args()
    conn, sha = Connection(), "0" * 40
    for title, batch, unit in (
            (f"packing {CALLS} script calls for {WORKLOADS:,} workloads (9 arguments each)",
             calls(), "a workload"),
            (f"packing {WORKLOADS:,} script calls, one per pod report (16 arguments each)",
             reports(), "a call")):
        if redis_py_packing(conn, sha, batch) != scripts.packed(sha, scripts.checked(batch)):
            sys.exit("the two packings differ")
        timings: dict[str, list[float]] = {"hiredis, one go": [], "redis-py's packer": []}
        for _ in range(args.repeat):
            cpu = time.process_time()
            scripts.packed(sha, scripts.checked(batch))
            timings["hiredis, one go"].append(time.process_time() - cpu)
            cpu = time.process_time()
            redis_py_packing(conn, sha, batch)
            timings["redis-py's packer"].append(time.process_time() - cpu)
        print(f"{title}; medians of {args.repeat}, CPU time")
        for name, values in timings.items():
            print(f"  {name:<24} {1e6 * statistics.median(values) / WORKLOADS:6.2f} µs {unit}")


if __name__ == "__main__":
    main()
