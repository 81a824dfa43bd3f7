"""What the operator's own work costs with many ClusterQueues and Workloads.

Kueue's large-scale layout by default: ``--queues`` ClusterQueues in cohorts of 100
(20 cpu each, borrowing up to 100), one LocalQueue and namespace each, and
``--workloads`` one-pod Workloads, as the watches deliver them (plain dicts), in this
process, the garbage collector tuned as ``kuota operator`` tunes it. Timed:

* **leading anew** (its start, or a failover: ``Controller.rebuilding``): every object
  listed is read into a new engine, queue objects first, then the Workloads, in slices
  between which the event loop answers the webhook and the probes; nothing is decided or
  written until it is done. Printed: its time, and the longest slice;
* **the first admissions**: the cycles run after leading anew, as the operator's cycle loop
  runs them (:meth:`Operator.run_cycles <kuota.operator.loop.Operator.run_cycles>`, its
  decisions handed to a writer that drops them), beside a task that notes how long the event
  loop was held between two of its turns. Printed: the cycles, their CPU, the longest hold;
* **a status sync** (every second): the ClusterQueue and LocalQueue statuses and the
  queue gauges, after one cycle admitted what fits (20,000 of the 50,000); the first
  sync writes every status, the next ones nothing — their cost is what the operator
  spends every second just to find that out (writes go to a client that answers at once);
* **a ClusterQueue changed** (its nominal quota, one watch event): what the engine does
  with one changed queue object among all the others;
* **a Workload ended** and the cycles that give its quota to the next one waiting (what
  every Job's end costs the engine, with its cohort's 100 queues waiting).

Usage: python benchmarks/operator_at_scale.py [--queues 1000] [--workloads 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import time
from typing import Any

from kuota import gctuning
from kuota.operator.controller import Controller
from kuota.operator.loop import Operator
from kuota.operator.metrics import Metrics
from kuota.operator.names import Res
from kuota.operator.settings import Options
from kuota.operator.writer import Writer
from quota.workload import Admission

API = "kuota.dev/v1alpha1"


class Asked:
    """The writes a rebuild asks for, counted (a rebuild of waiting Workloads asks none)."""

    def __init__(self) -> None:
        self.count = 0

    def _ask(self, *_: object) -> None:
        self.count += 1

    def adopt(self, key: str, admission: Admission) -> None:
        self._ask(key, admission)

    create_workload = sync_owner = create_group_workload = sync_group = _ask
    workload_problem = pods_ready = ungate = delete_workload = _ask


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "uid": f"uid-{namespace}-{name}",
                           "resourceVersion": "1", **extra}
    if namespace:
        out["namespace"] = namespace
    return out


def objects(queues: int, workloads: int) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = [
        ("ResourceFlavor", {"apiVersion": API, "kind": "ResourceFlavor",
                            "metadata": meta("default"), "spec": {}})]
    for i in range(queues):
        out += [
            ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(f"ns{i}")}),
            ("ClusterQueue", {"apiVersion": API, "kind": "ClusterQueue",
                              "metadata": meta(f"cq{i}"), "spec": {
                                  "cohortName": f"cohort{i // 100}", "namespaceSelector": {},
                                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                      {"name": "default", "resources": [
                                          {"name": "cpu", "nominalQuota": "20",
                                           "borrowingLimit": "100"}]}]}]}}),
            ("LocalQueue", {"apiVersion": API, "kind": "LocalQueue",
                            "metadata": meta("lq", f"ns{i}"), "spec": {"clusterQueue": f"cq{i}"}}),
        ]
    for j in range(workloads):
        out.append(("Workload", {
            "apiVersion": API, "kind": "Workload",
            "metadata": meta(f"w{j}", f"ns{j % queues}",
                             creationTimestamp="2026-01-01T00:00:00Z"),
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
                    "requests": {"cpu": "1"}}}]}}}]}}))
    return out


class InstantClient:
    """Answers a status patch with the object patched, at once (no API server)."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.patches = 0

    async def patch(self, res: Res, name: str, patch: Any, namespace: str | None = None,
                    **_: Any) -> dict[str, Any]:
        self.patches += 1
        key = f"{namespace}/{name}" if namespace else name
        body = copy.deepcopy(self.controller.objects.get(res.kind, key) or {})
        body.setdefault("status", {}).update(patch.get("status") or {})
        meta = body.setdefault("metadata", {})
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
        return body

    async def create(self, res: Res, body: dict[str, Any], namespace: str | None = None,
                     ) -> dict[str, Any]:
        return body


class Dropped:
    """A writer that drops what it is given (the first admissions' writes are not timed)."""

    def persist(self, events: list[Any]) -> None:
        del events


def first_admissions(operator: Operator) -> tuple[int, float, float]:
    """Cycles, CPU seconds, and the longest the event loop was held, of the cycles run
    until idle as the operator's cycle loop runs them."""
    engine = operator.controller.engine
    assert engine is not None
    operator.writer = Dropped()  # type: ignore[assignment]
    longest = 0.0

    async def run() -> None:
        async def ticker() -> None:
            nonlocal longest
            last = time.perf_counter()
            while True:
                await asyncio.sleep(0)
                now = time.perf_counter()
                longest, last = max(longest, now - last), now

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        await operator.run_cycles(engine)
        task.cancel()

    cycles, cpu = operator.metrics.cycles._value.get(), time.process_time()
    asyncio.run(run())
    engine.drain_outbox()
    return int(operator.metrics.cycles._value.get() - cycles), time.process_time() - cpu, longest


def status_syncs(controller: Controller, count: int) -> list[tuple[float, int]]:
    """CPU seconds and writes of ``count`` status syncs in a row."""
    client = InstantClient(controller)

    async def run() -> list[tuple[float, int]]:
        writer = Writer(controller, client, Metrics())  # type: ignore[arg-type]
        out = []
        for _ in range(count):
            before, cpu = client.patches, time.process_time()
            await writer.sync_statuses()
            out.append((time.process_time() - cpu, client.patches - before))
        writer.cancel()
        return out

    return asyncio.run(run())


def queue_changes(controller: Controller, count: int) -> float:
    """Median CPU seconds of ``count`` ClusterQueues given another nominal quota."""
    spent = []
    for i in range(count):
        body = copy.deepcopy(controller.objects.get("ClusterQueue", f"cq{i}"))
        assert body is not None
        body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "21"
        body["metadata"]["resourceVersion"] = str(10**9 + i)  # newer than any seen
        cpu = time.process_time()
        controller.observe("ClusterQueue", body)
        spent.append(time.process_time() - cpu)
    return statistics.median(spent)


def turnovers(controller: Controller, count: int) -> float:
    """Median CPU seconds of a Workload's end and the cycles that follow it."""
    engine = controller.engine
    assert engine is not None
    holding = [key for entries in engine.cache.workloads.values() for key in entries]
    spent = []
    for key in holding[:count]:
        cpu, now = time.process_time(), time.time()
        engine.finish(key, now)
        engine.run_until_idle(now)
        spent.append(time.process_time() - cpu)
    engine.drain_outbox()
    return statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=1000, help="ClusterQueues (and LQs)")
    parser.add_argument("--workloads", type=int, default=50000, help="Workloads")
    args = parser.parse_args()
    gctuning.tune()
    operator = Operator(Options(), clock=time.time)
    controller = operator.controller
    for kind, body in objects(args.queues, args.workloads):
        controller.observe(kind, body)
    asked = Asked()
    wall, cpu = time.perf_counter(), time.process_time()
    longest, sliced = 0.0, wall
    for _ in controller.rebuilding(asked):  # as the operator's loop drives it
        longest, sliced = max(longest, time.perf_counter() - sliced), time.perf_counter()
    longest = max(longest, time.perf_counter() - sliced)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    engine = controller.engine
    assert engine is not None
    print(f"operator at scale: {args.queues:,} ClusterQueues and LocalQueues, "
          f"{args.workloads:,} Workloads")
    each = f"   ({1e6 * cpu / args.workloads:.0f} µs CPU a Workload)" if args.workloads else ""
    print(f"  leading anew     wall {wall:6.2f} s   CPU {cpu:6.2f} s{each}; the event loop "
          f"held at most {1000 * longest:.0f} ms at a time")
    cycles, cpu, held = first_admissions(operator)
    holding = sum(len(entries) for entries in engine.cache.workloads.values())
    print(f"  first admissions {holding:,} in {cycles} cycles, CPU {cpu:6.2f} s; the event "
          f"loop held at most {1000 * held:.0f} ms at a time")
    (first, written), *rest = status_syncs(controller, 4)
    print(f"  status sync      the first {1000 * first:6.1f} ms CPU ({written:,} statuses "
          f"written), then {1000 * statistics.median(c for c, _ in rest):.1f} ms CPU "
          f"({sum(w for _, w in rest)} written; {holding:,} holding quota)")
    print(f"  a ClusterQueue changed   {1000 * queue_changes(controller, 50):.1f} ms CPU "
          "(median of 50)")
    print(f"  a Workload ended         {1000 * turnovers(controller, 200):.1f} ms CPU, with the "
          "cycles that give its quota to the next (median of 200)")


if __name__ == "__main__":
    main()
