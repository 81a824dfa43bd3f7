"""The embedded default: no Redis at all, everything in one process on fakeredis."""

from __future__ import annotations

import pytest

import kuota
from kuota.client import Client
from kuota.service import showcase
from kuota.service.connection import EMBEDDED, connect
from kuota.service.embedded import LocalCluster, node


def test_client_is_exported_lazily() -> None:
    assert kuota.Client is Client


def test_the_embedded_store_runs_workloads_in_one_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    conn = connect(EMBEDDED, prefix="embedded-test")
    assert conn.embedded and conn.describe().startswith("embedded fakeredis")
    with LocalCluster([node("pool", "n1", "cpu=2")], connection=conn) as cluster:
        client = cluster.client()
        client.apply("""
apiVersion: kuota.dev/v1alpha1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kuota.dev/v1alpha1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: 1}]}]
---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
""")
        runs = [client.submit(["echo", f"run {i}"], queue="default/lq", requests={"cpu": 1})
                for i in range(3)]
        statuses = [run.wait(30) for run in runs]
    assert [s.outcome for s in statuses] == ["Succeeded"] * 3
    assert [run.logs() for run in runs] == ["run 0\n", "run 1\n", "run 2\n"]


def test_the_showcase_shows_waiting_borrowing_and_output() -> None:
    lines: list[str] = []
    assert showcase.run(say=lines.append) == 0
    text = "\n".join(lines)
    assert "waits: WaitingForQuota" in text
    assert "(borrowing), running on cpu-" in text
    assert "batch: cpu[cpu-nodes] 6/4 (borrowed 2)" in text
    assert "pod 1 of 2 on gpu-1, GPU 1, peers gpu-1" in text
    assert text.count("Succeeded: all pods exited 0") == len(showcase.WORKLOADS)
