"""A short Redis-mode run to watch: two pools, real commands, quota waiting and borrowing.

:func:`run` starts an embedded deployment (in-process fakeredis, a scheduler
and three workers as threads — nothing to install), applies two ClusterQueues
sharing a cohort, submits a handful of real commands and prints what happens
as it happens: admissions (and which borrow), placements on nodes, workloads
waiting for quota, finishes; then a ClusterQueue table and one workload's
output. It takes about ten seconds. ``kuota demo`` can call it; pass a URL to
run the same against a real Redis.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kuota.service.connection import EMBEDDED, connect
from kuota.service.embedded import LocalCluster, node
from kuota.service.leader import Timing
from quota.resources import format_amount

QUEUES = """
apiVersion: kuota.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: cpu-nodes}
spec: {nodeLabels: {kind: cpu}}
---
apiVersion: kuota.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: gpu-nodes}
spec: {nodeLabels: {kind: gpu}}
---
apiVersion: kuota.dev/v1alpha1
kind: ClusterQueue
metadata: {name: research}
spec:
  cohortName: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu-nodes
      resources: [{name: cpu, nominalQuota: 4}, {name: nvidia.com/gpu, nominalQuota: 2}]
    - name: cpu-nodes
      resources: [{name: cpu, nominalQuota: 2}, {name: nvidia.com/gpu, nominalQuota: 0}]
---
apiVersion: kuota.dev/v1alpha1
kind: ClusterQueue
metadata: {name: batch}
spec:
  cohortName: lab
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: cpu-nodes
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {name: research, namespace: default}
spec: {clusterQueue: research}
---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {name: batch, namespace: default}
spec: {clusterQueue: batch}
"""

#: (name, queue, count, requests, command)
WORKLOADS: tuple[tuple[str, str, int, dict[str, str], list[str]], ...] = (
    ("train", "default/research", 2, {"cpu": "2", "nvidia.com/gpu": "1"},
     ["sh", "-c", "echo pod $KUOTA_POD_INDEX of $KUOTA_POD_COUNT on $KUOTA_NODE, "
      "GPU $CUDA_VISIBLE_DEVICES, peers $KUOTA_PEERS; sleep 2"]),
    ("etl-1", "default/batch", 1, {"cpu": "3"}, ["sleep", "2"]),
    ("etl-2", "default/batch", 1, {"cpu": "3"}, ["sleep", "2"]),
    ("report", "default/research", 1, {"cpu": "2"}, ["sh", "-c", "date; sleep 1"]),
    ("etl-3", "default/batch", 1, {"cpu": "2"}, ["sleep", "1"]),
)


def run(redis_url: str | None = None, *, say: Callable[[str], Any] = print,
        timeout: float = 60.0) -> int:
    """Run the showcase; returns 0 when every workload succeeded."""
    nodes = [node("gpu-pool", "gpu-1", "cpu=8,nvidia.com/gpu=2", {"kind": "gpu"}),
             node("cpu-pool", "cpu-1", "cpu=4", {"kind": "cpu"}),
             node("cpu-pool", "cpu-2", "cpu=4", {"kind": "cpu"})]
    timing = Timing(lease_ttl=2.0, node_timeout=5.0, poll=0.1, reasons_every=0.2)
    prefix = f"showcase-{int(time.time())}"
    with LocalCluster(nodes, connection=connect(redis_url or EMBEDDED, prefix=prefix),
                      timing=timing) as cluster:
        client = cluster.client()
        say(f"store: {cluster.connection.describe()}; pools gpu-pool (gpu-1: 8 cpu, 2 GPUs) "
            "and cpu-pool (cpu-1, cpu-2: 4 cpu each)")
        client.apply(QUEUES)
        say("ClusterQueues research (4 cpu + 2 GPU on gpu-nodes, 2 cpu on cpu-nodes) and "
            "batch (4 cpu on cpu-nodes) share cohort lab")
        start = time.monotonic()
        handles = []
        for name, queue, count, requests, command in WORKLOADS:
            handles.append(client.submit(command, queue=queue, name=name, count=count,
                                         requests=requests))
            say(f"{0.0:5.1f}s  submitted {name:7} {queue:17} {count}× "
                + ",".join(f"{k}={v}" for k, v in requests.items()))
        seen: dict[str, tuple[str, str, int]] = {}
        while time.monotonic() - start < timeout:
            changed = False
            for record in client.workloads():
                status = _status(record)
                if record.reason == "Pending" and record.key not in seen:
                    continue  # not looked at yet
                if seen.get(record.key) != status:
                    seen[record.key] = status
                    changed = True
                    say(f"{time.monotonic() - start:5.1f}s  {record.key.split('/')[1]:7} "
                        f"{_describe(record)}")
            if changed:
                say("        usage  " + _usage(client))
            if len(seen) == len(handles) and all(s[0] == "Finished" for s in seen.values()):
                break
            time.sleep(0.1)
        say("output of train:\n" + handles[0].logs().rstrip())
        ok = all(h.status().succeeded for h in handles)
    client.store.reset()  # after the threads stopped: leave nothing behind in a real Redis
    return 0 if ok else 1


def _status(record: Any) -> tuple[str, str, int]:
    return (record.state.value, record.reason if record.state.value == "Pending" else
            ",".join(record.placement), record.attempt)


def _describe(record: Any) -> str:
    state = record.state.value
    if state == "Pending":
        return f"waits: {record.reason}: {record.message}"
    if state == "Admitted":
        borrowing = " (borrowing)" if record.admission and record.admission.borrowing else ""
        flavors = ", ".join(sorted({f for ps in record.admission.pod_sets
                                    for f in ps.flavors.values()})) if record.admission else ""
        where = (f"running on {', '.join(record.placement)}" if record.placement
                 else "waiting for nodes")
        return f"admitted to {record.cluster_queue} on {flavors}{borrowing}, {where}"
    return f"{record.outcome.value or state}: {record.message}"


def _usage(client: Any) -> str:
    parts = []
    for cq in client.snapshot().cluster_queues:
        cells = [f"{c.resource}[{c.flavor}] {format_amount(c.usage, c.resource)}/"
                 f"{format_amount(c.nominal, c.resource)}"
                 + (f" (borrowed {format_amount(c.borrowed, c.resource)})" if c.borrowed else "")
                 for c in cq.cells if c.usage or c.nominal]
        parts.append(f"{cq.name}: {', '.join(cells)}")
    return " | ".join(parts)
