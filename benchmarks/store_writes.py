"""What persisting the leader's decisions costs: ``WorkloadStore.admit_many`` and
``place_many`` against a real redis-server, in CPU time per gang.

Each round submits ``--batch`` one-pod workloads (not measured), then persists their
admissions in one ``admit_many`` call and their placements in one ``place_many`` call, as
a leader's scheduling round does, and reads back the stream entries those writes added (a
leader reads and skips its own, a standby follows them). Prints, per gang:

* the client's CPU (this process: ``time.process_time``) for admit, place and the read;
* Redis's own CPU for admit and place (``INFO cpu`` used_cpu_user + used_cpu_sys deltas:
  the server is otherwise idle, so what little its timers use is counted too);
* the stream entries each gang added.

The medians over the rounds are printed; the machine may be shared, so CPU time is
measured, not wall time.

Usage: python benchmarks/store_writes.py [--batch 500] [--rounds 20] [--pods 1] [--redis URL]

Starts its own redis-server on a free port of 127.0.0.1 unless ``--redis URL`` is given.
Imports the package found first on ``sys.path`` (``PYTHONPATH`` decides which checkout is
measured).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO))  # after PYTHONPATH: the checkout it names is the one measured

from kuota.service.connection import connect  # noqa: E402
from queueing.store import PodRef, Store  # noqa: E402
from queueing.store.workloads import (  # noqa: E402
    AdmitRequest,
    PlaceRequest,
    PodPlacement,
    SubmitRequest,
)
from quota.workload import Admission, PodSetAdmission  # noqa: E402

sys.path.append(str(REPO / "benchmarks"))
from redis_throughput import redis_server  # noqa: E402

NODES = 50


def redis_cpu(r: Any) -> float:
    info = r.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def spec(name: str, pods: int) -> dict[str, Any]:
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": pods, "template": {
                "spec": {"containers": [{"name": "main", "command": ["true"],
                                         "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def run(url: str, args: argparse.Namespace) -> dict[str, list[float]]:
    conn = connect(url, prefix=f"bench{time.time_ns()}")
    store: Store = conn.store
    lease = store.lease("bench", 600)
    assert lease.acquire() and lease.holder is not None
    holder = lease.holder
    epochs = {f"n{i}": store.nodes.register(f"n{i}", pool="p", capacity={"cpu": 10**9},
                                            labels={}, devices=[], now=1.0)
              for i in range(NODES)}
    admission = Admission("cq", (PodSetAdmission("main", args.pods, {"cpu": "default"},
                                                 {"cpu": 1000 * args.pods}),))
    figures: dict[str, list[float]] = {k: [] for k in (
        "admit_client", "admit_redis", "place_client", "place_redis", "read_client",
        "entries")}
    position = store.events.last_id()
    decision = 0
    for round_ in range(args.rounds):
        keys = [f"bench/w{round_}-{i}" for i in range(args.batch)]
        statuses = store.workloads.submit_many(
            [SubmitRequest(k, spec(k.partition("/")[2], args.pods), "bench/lq", 0, 0, k)
             for k in keys], now=1.0)
        assert all(s == "ok" for s in statuses), set(statuses)
        position = store.events.read_all(position)[-1].id  # the submissions: not measured
        admits = []
        for k in keys:
            decision += 1
            admits.append(AdmitRequest(k, 0, admission, args.pods, f"{holder}#{decision}"))
        places = [PlaceRequest(k, 1, tuple(
            PodPlacement(PodRef(k, 1, p), node, "main", {"cpu": 1000}, epochs[node])
            for p in range(args.pods) for node in [f"n{(i + p) % NODES}"]))
            for i, k in enumerate(keys)]

        redis0, cpu0 = redis_cpu(conn.text), time.process_time()
        statuses = store.workloads.admit_many(holder, admits, now=2.0)
        cpu1 = time.process_time()
        redis1 = redis_cpu(conn.text)
        assert statuses == ["ok:1"] * len(keys), set(statuses)
        statuses = store.workloads.place_many(holder, places, now=3.0)
        cpu2 = time.process_time()
        redis2 = redis_cpu(conn.text)
        assert statuses == ["ok"] * len(keys), set(statuses)
        cpu3 = time.process_time()
        entries = store.events.read_all(position)
        cpu4 = time.process_time()
        position = entries[-1].id if entries else position
        n = len(keys)
        figures["admit_client"].append((cpu1 - cpu0) / n * 1e6)
        figures["place_client"].append((cpu2 - cpu1) / n * 1e6)
        figures["admit_redis"].append((redis1 - redis0) / n * 1e6)
        figures["place_redis"].append((redis2 - redis1) / n * 1e6)
        figures["read_client"].append((cpu4 - cpu3) / n * 1e6)
        figures["entries"].append(len(entries) / n)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=500, help="gangs per call (default 500)")
    parser.add_argument("--rounds", type=int, default=20, help="calls of each (default 20)")
    parser.add_argument("--pods", type=int, default=1, help="pods per gang (default 1)")
    parser.add_argument("--redis", default=None, help="a Redis URL instead of a new server")
    args = parser.parse_args()
    import queueing

    print(f"measuring {Path(queueing.__file__).parent.parent}: {args.rounds} rounds of "
          f"{args.batch} gangs of {args.pods} pod(s)")
    with redis_server(args.redis) as url:
        figures = run(url, args)
    for name, label in (("admit_client", "admit, client CPU"),
                        ("admit_redis", "admit, Redis CPU"),
                        ("place_client", "place, client CPU"),
                        ("place_redis", "place, Redis CPU"),
                        ("read_client", "reading their stream entries, client CPU")):
        values = figures[name]
        print(f"{label:42} {statistics.median(values):7.1f} µs/gang "
              f"(min {min(values):.1f}, max {max(values):.1f})")
    print(f"{'stream entries added':42} {statistics.median(figures['entries']):7.3f} /gang")


if __name__ == "__main__":
    main()
