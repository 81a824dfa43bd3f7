"""What the Redis store's read path costs the reader in CPU, per record and per event.

The active scheduler follows the event stream and re-reads the workloads it names
(``kuota.service.leader``): ``EventStream.read`` and then ``WorkloadStore.get_many`` —
with the spec for workloads new to it, without spec and admission for the others. In
the large-scale real-time run those reads were a fifth of the scheduler's CPU, most of it
on the Python side (packing commands, parsing replies, building records). This measures
exactly that side: the client's CPU time (``time.process_time``), not wall time, so a
busy machine or the server's own work does not count.

A real redis-server is started on a free port (as ``redis_throughput.py`` does); it holds
``--workloads`` records, a third each Pending, Admitted (admission and placement set)
and Finished, and twice as many stream entries. Reads go in batches of ``--batch`` keys
(the leader follows events in slices of 500), the whole set read ``--repeat`` times; the
figures printed are the median over repeats, and the fastest, in µs of CPU per record or
event. The leader reads new workloads (mostly Pending: no admission to decode) with their
spec, and the ones it knows with ``spec=False, admission=False``.

Usage::

    python benchmarks/store_reads.py [--workloads 5000] [--batch 500] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from redis_throughput import redis_server  # noqa: E402

from queueing.store import Store  # noqa: E402
from queueing.store.events import START  # noqa: E402
from queueing.store.records import admission_to_json  # noqa: E402
from queueing.store.workloads import SubmitRequest  # noqa: E402
from quota.workload import Admission, PodSetAdmission  # noqa: E402


def spec(name: str) -> dict[str, object]:
    """A one-pod-set manifest of the size ``kuota submit`` writes."""
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "lq-0", "priority": 0, "podSets": [{
                "name": "main", "count": 1, "template": {"spec": {"containers": [{
                    "name": "main", "command": ["sleep", "30"],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}]}}


def fill(store: Store, count: int) -> list[str]:
    keys = [f"default/wl-{i}" for i in range(count)]
    now = time.time()
    for start in range(0, count, 1000):
        part = keys[start:start + 1000]
        store.workloads.submit_many([SubmitRequest(k, spec(k.partition("/")[2]), "default/lq-0",
                                                   0, 3, f"s-{k}") for k in part], now)
    admission = admission_to_json(Admission("cq-0", (PodSetAdmission(
        "main", 1, {"cpu": "default", "memory": "default"},
        {"cpu": 1000, "memory": 1 << 30}, nodes=(("node-1", 1),)),)))
    pipe = store.redis.pipeline(transaction=False)
    for i, key in enumerate(keys):
        if i % 3 == 1:
            pipe.hset(store.keys.workload(key), mapping={
                "state": "Admitted", "attempt": 1, "admission": admission, "cq": "cq-0",
                "admitted_at": now + 1, "placement": json.dumps(["node-1"]), "pods": 1,
                "reason": "Admitted", "message": "admitted by cq-0"})
        elif i % 3 == 2:
            pipe.hset(store.keys.workload(key), mapping={
                "state": "Finished", "attempt": 1, "admission": admission, "cq": "cq-0",
                "admitted_at": now + 1, "placement": json.dumps(["node-1"]), "pods": 1,
                "pods_done": 1, "outcome": "Succeeded", "finished_at": now + 2,
                "reason": "Succeeded", "message": "all pods succeeded"})
    pipe.execute()
    # The stream: submissions wrote one entry each; add pod entries to reach twice as many.
    pipe = store.redis.pipeline(transaction=False)
    for key in keys:
        pipe.xadd(store.keys.events, {"kind": "pod", "key": key, "pod": f"{key}/1/0"})
    pipe.execute()
    return keys


def per_item(run: Callable[[], int], repeat: int) -> tuple[float, float]:
    """(median, fastest) µs of this process's CPU per item ``run`` returns it handled."""
    figures = []
    for _ in range(repeat):
        start = time.process_time()
        items = run()
        figures.append((time.process_time() - start) * 1e6 / items)
    return statistics.median(figures), min(figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--redis", default=None, help="use this Redis (default: start one)")
    args = parser.parse_args()
    with redis_server(args.redis) as url:
        store = Store.from_url(url, prefix=f"reads{time.time_ns()}")
        try:
            keys = fill(store, args.workloads)
            batches = [keys[i:i + args.batch] for i in range(0, len(keys), args.batch)]

            pending = keys[::3]
            pending_batches = [pending[i:i + args.batch]
                               for i in range(0, len(pending), args.batch)]

            def records(parts: list[list[str]] = batches, **options: bool) -> Callable[[], int]:
                def run() -> int:
                    read = 0
                    for batch in parts:
                        read += len(store.workloads.get_many(batch, **options))
                    return read
                return run

            def events() -> int:
                read, after = 0, START
                while found := store.events.read(after, block_ms=None, count=args.batch):
                    read += len(found)
                    after = found[-1].id
                return read

            rows = [("get_many, with spec", records()),
                    ("get_many, with spec, Pending only", records(pending_batches)),
                    ("get_many, spec=False admission=False",
                     records(spec=False, admission=False)),
                    ("EventStream.read", events)]
            print(f"{args.workloads} workloads, batches of {args.batch}, {args.repeat} repeats; "
                  "µs of client CPU per record/event (median, fastest)")
            for name, run in rows:
                run()  # warm up: scripts loaded, connection open
                median, fastest = per_item(run, args.repeat)
                print(f"  {name:40s} {median:7.2f}  {fastest:7.2f}")
        finally:
            store.reset()


if __name__ == "__main__":
    main()
