"""What leading anew costs the operator with many ClusterQueues and Workloads.

When ``kuota operator`` takes the lease (its start, or a failover) it lists every object
and builds its engine from them (``Controller.rebuild``): queue objects first, then the
Workloads, those holding quota before the others. Nothing is decided, nothing written,
no webhook answered until it is done, so its cost is the operator's failover time.

This times ``Controller.rebuild`` in this process, with Kueue's large-scale layout by
default: ``--queues`` ClusterQueues in cohorts of 100 (20 cpu each, borrowing up to 100),
one LocalQueue and namespace each, and ``--workloads`` one-pod Workloads waiting in them,
as the watch delivers them (plain dicts). The garbage collector is tuned as
``kuota operator`` tunes it.

Usage: python benchmarks/operator_rebuild.py [--queues 1000] [--workloads 50000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kuota import gctuning
from kuota.operator.controller import Controller
from kuota.operator.settings import Options
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

    create_workload = sync_job = create_group_workload = sync_group = _ask
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queues", type=int, default=1000, help="ClusterQueues (and LQs)")
    parser.add_argument("--workloads", type=int, default=50000, help="waiting Workloads")
    args = parser.parse_args()
    gctuning.tune()
    controller = Controller(Options(), clock=time.time)
    for kind, body in objects(args.queues, args.workloads):
        controller.observe(kind, body)
    asked = Asked()
    wall, cpu = time.perf_counter(), time.process_time()
    engine = controller.rebuild(asked)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    waiting = sum(len(queue) for queue in engine.queues.queues.values())
    print(f"operator leading anew: {args.queues:,} ClusterQueues and LocalQueues, "
          f"{args.workloads:,} Workloads ({waiting:,} waiting after, {asked.count} writes asked)")
    each = f"   ({1e6 * cpu / args.workloads:.0f} µs CPU a Workload)" if args.workloads else ""
    print(f"  Controller.rebuild  wall {wall:6.2f} s   CPU {cpu:6.2f} s{each}")


if __name__ == "__main__":
    main()
