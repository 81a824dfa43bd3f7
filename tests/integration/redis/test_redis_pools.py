"""Pools as topologies and as member clusters, on a real redis-server.

* Topology-aware admission fed from the nodes workers register: a gang that
  requires one rack runs with all its pods on one rack — on exactly the
  nodes admission chose — and a gang no rack can hold waits, saying why.
* Multi-cluster dispatch to pool members: a workload needing a flavor only one
  pool has goes there, a cheaper pool wins otherwise, the decision is stored
  for ``kuota why``, and a pool that loses its nodes hands its work to the
  next best pool.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from harness import local_cluster, node, wait_for

from kuota import cli
from kuota.client import Client
from queueing.store import Outcome

pytestmark = pytest.mark.redis

API = "kuota.dev/v1alpha1"
RACK = "example.com/rack"


def _cq(name: str, flavor: str, cpu: int, checks: list[str] | None = None) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu"],
        "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return [{"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
             "spec": spec},
            {"apiVersion": API, "kind": "LocalQueue",
             "metadata": {"name": f"lq-{name}", "namespace": "default"},
             "spec": {"clusterQueue": name}}]


def _workload(name: str, queue: str, count: int, command: list[str], *,
              annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"containers": [{
        "name": "main", "command": command, "resources": {"requests": {"cpu": "1"}}}]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": queue,
                     "podSets": [{"name": "main", "count": count, "template": template}]}}


def _get_workloads(capsys: pytest.CaptureFixture[str], url: str,
                   prefix: str) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    assert cli.main(["get", "workloads", "-o", "json", "--redis", url, "--prefix", prefix]) == 0
    items = json.loads(capsys.readouterr().out)["items"]
    return {f"{w['metadata']['namespace']}/{w['metadata']['name']}": w for w in items}


TOPOLOGY_OBJECTS = [
    {"apiVersion": API, "kind": "Topology", "metadata": {"name": "racks"},
     "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": "kubernetes.io/hostname"}]}},
    {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "tas"},
     "spec": {"nodeLabels": {"kind": "train"}, "topologyName": "racks"}},
    *_cq("cq", "tas", 20),
]


def test_a_gang_requiring_one_rack_runs_on_one_rack(redis_server_url: str, redis_prefix: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # Rack r1 has two 1-cpu nodes, rack r2 three: a 3-pod gang fits only in r2.
    nodes = [node("pool", f"{rack}-n{i}", "cpu=1", {RACK: rack, "kind": "train"})
             for rack, n in (("r1", 2), ("r2", 3)) for i in range(n)]
    required = {"kuota.dev/podset-required-topology": RACK}
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        client = cluster.client()
        client.apply(TOPOLOGY_OBJECTS)
        gang = client.submit(workload=_workload(
            "gang3", "lq-cq", 3, ["sh", "-c", "echo $KUOTA_NODE; sleep 0.5"],
            annotations=required))
        too_big = client.submit(workload=_workload("gang4", "lq-cq", 4, ["true"],
                                                   annotations=required))
        status = gang.wait(30)
        admission = client.store.workloads.get(gang.key).admission
        waiting = wait_for("the 4-pod gang to say why it waits",
                           lambda: (r := too_big.record()).reason not in ("", "Pending")
                           and r)
        rows = _get_workloads(capsys, redis_server_url, redis_prefix)
    assert status.outcome == Outcome.SUCCEEDED
    ran_on = sorted(p.node for p in status.pods)
    assert ran_on == ["r2-n0", "r2-n1", "r2-n2"]
    # Admission chose the nodes (topology-aware), and the pods ran exactly there.
    assert admission is not None
    assert sorted(n for n, _ in admission.pod_sets[0].nodes) == ran_on
    assert admission.pod_sets[0].topology_levels == (RACK,)
    assert admission.pod_sets[0].topology == ((("r2",), 3),)
    assert waiting.state == "Pending"
    assert RACK in waiting.message and "fits" in waiting.message, waiting.message
    row = rows["default/gang4"]
    assert row["status"]["state"] == "Pending" and RACK in row["status"]["message"]


def test_gangs_without_topology_still_use_any_node(redis_server_url: str,
                                                   redis_prefix: str) -> None:
    nodes = [node("pool", f"{rack}-n{i}", "cpu=1", {RACK: rack, "kind": "train"})
             for rack, n in (("r1", 2), ("r2", 2)) for i in range(n)]
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        client = cluster.client()
        client.apply(TOPOLOGY_OBJECTS)
        # Four pods over two racks: only possible without a topology requirement.
        status = client.submit(workload=_workload("spread", "lq-cq", 4, ["true"])).wait(30)
    assert status.outcome == Outcome.SUCCEEDED
    assert len({p.node for p in status.pods}) == 4


def _fleet() -> list[dict[str, Any]]:
    """Pool east has A100 nodes and is dear, pool west has T4 nodes and is cheap."""
    def member(name: str, pool: str, price: str) -> dict[str, Any]:
        return {"apiVersion": API, "kind": "MemberCluster", "metadata": {"name": name},
                "spec": {"pool": pool, "cost": [{"resource": "cpu", "price": price}]}}

    return [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "a100"},
         "spec": {"nodeLabels": {"gpu-model": "a100"}}},
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "any"}},
        {"apiVersion": API, "kind": "MultiClusterConfig", "metadata": {"name": "fleet"},
         "spec": {"clusters": ["east", "west"]}},
        {"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": "dispatch"},
         "spec": {"controllerName": "kuota.dev/multicluster",
                  "parameters": {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                 "name": "fleet"}}},
        member("east", "east", "3.00"),
        member("west", "west", "1.00"),
        *_cq("gpu", "a100", 8, ["dispatch"]),
        *_cq("batch", "any", 8, ["dispatch"]),
    ]


def test_pool_members_get_what_fits_them_best(redis_server_url: str, redis_prefix: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [node("east", "east-1", "cpu=4", {"gpu-model": "a100"}),
             node("west", "west-1", "cpu=4", {"gpu-model": "t4"})]
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        client = cluster.client()
        client.apply(_fleet())
        gpu = client.submit(workload=_workload("needs-a100", "lq-gpu", 1, ["true"]))
        cheap = client.submit(workload=_workload("any-cpu", "lq-batch", 1, ["sleep", "30"]))
        assert gpu.wait(30).pods[0].node == "east-1"
        wait_for("the batch job to run", lambda: cheap.status().pods
                 and cheap.status().pods[0].phase == "Running")
        record = cheap.record()
        assert record.admission is not None and record.admission.cluster == "west"
        assert cheap.status().pods[0].node == "west-1", "the cheaper pool"
        decision = record.dispatch()
        assert decision is not None and decision["cluster"] == "west"
        assert [c["name"] for c in decision["clusters"]] == ["west", "east"]
        gpu_decision = client.store.workloads.get(gpu.key).dispatch()
        assert gpu_decision is not None and gpu_decision["cluster"] == "east"
        refused = {c["name"]: c for c in gpu_decision["clusters"]}["west"]
        assert refused["filteredBy"] == "Hardware"

        capsys.readouterr()
        assert cli.main(["why", "default/any-cpu", "--redis", redis_server_url,
                         "--prefix", redis_prefix]) == 0
        why = capsys.readouterr().out
        assert "dispatched to west" in why and "east" in why

        # West goes away: the batch job is dispatched again, to east.
        cluster.stop_node("west-1")
        wait_for("the batch job to run in east", lambda: (s := cheap.status()).pods
                 and s.pods[0].node == "east-1" and s.pods[0].phase == "Running", timeout=30)
        moved = cheap.record()
        assert moved.admission is not None and moved.admission.cluster == "east"
        west = {c["name"]: c for c in (moved.dispatch() or {})["clusters"]}["west"]
        assert west["filteredBy"] == "Health"
        cheap.cancel()


def test_a_workload_no_pool_can_run_waits_with_the_reason(
        redis_server_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [node("west", "west-1", "cpu=4", {"gpu-model": "t4"})]
    with local_cluster(redis_server_url, redis_prefix, nodes) as cluster:
        client = cluster.client()
        client.apply(_fleet())
        gpu = client.submit(workload=_workload("needs-a100", "lq-gpu", 1, ["true"]))
        record = wait_for("the check to say why",
                          lambda: (r := gpu.record()).reason == "AdmissionCheck" and r)
        assert record.state == "QuotaReserved"
        assert "no member cluster can run it" in record.message
        capsys.readouterr()
        assert cli.main(["why", "default/needs-a100", "--redis", redis_server_url,
                         "--prefix", redis_prefix]) == 0
        why = capsys.readouterr().out
        assert "no member cluster can run it" in why
        # A node with A100s joins east: the waiting workload is dispatched there.
        cluster.add_node(node("east", "east-1", "cpu=4", {"gpu-model": "a100"}))
        status = gpu.wait(30)
    assert status.succeeded and status.pods[0].node == "east-1"


def test_objects_apply_as_yaml_text(redis_server_url: str, redis_prefix: str) -> None:
    client = Client(redis_server_url, prefix=redis_prefix)
    applied = client.store.objects.apply([])  # nothing: still a valid transaction
    assert applied == []
    names = client.apply(yaml.safe_dump_all(_fleet()))
    assert "MemberCluster/west" in names and "MultiClusterConfig/fleet" in names
    assert "AdmissionCheck/dispatch" in names
