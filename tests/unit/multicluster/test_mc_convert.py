"""MemberCluster objects + nodes → ClusterInfo; MultiClusterConfig → DispatchConfig; status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from multicluster_builders import FLAVORS, GPU, MODEL, gpu_nodes, node

from multicluster.convert import capacity_status, cluster_info, timestamp
from multicluster.model import MemberKind
from multicluster.settings import SettingsError, dispatch_config
from placement.model import Taint, TaintEffect
from quota import api


def member_doc(**spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "kuota.dev/v1alpha1", "kind": "MemberCluster",
        "metadata": {"name": "eu", "labels": {"team": "ml"}},
        "spec": {"kubeConfig": {"location": "eu-kubeconfig"}, "region": "eu-west-1",
                 "taints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}],
                 "cost": [{"resource": GPU, "price": "2.5"},
                          {"resource": "memory", "per": "1Gi", "price": "0.004"},
                          {"resource": GPU, "flavor": "t4", "price": "0.5"}],
                 "datasets": ["imagenet"]},
        "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active"}],
                   "lastSeenTime": "2025-01-01T00:00:00Z"},
    }
    doc["spec"].update(spec)
    return doc


def parse(doc: dict[str, Any]) -> api.MemberCluster:
    obj = api.parse_object(doc)
    assert isinstance(obj, api.MemberCluster)
    return obj


def test_member_object_becomes_a_value() -> None:
    nodes = gpu_nodes("eu", (8, 4))
    info = cluster_info(parse(member_doc()), reversed(nodes))
    assert info.name == "eu"
    assert info.labels == {"team": "ml", "topology.kubernetes.io/region": "eu-west-1"}
    assert info.taints == (Taint("spot", TaintEffect.NO_SCHEDULE, "true"),)
    assert info.datasets == frozenset({"imagenet"})
    assert info.health.active and info.health.reason == "Active"
    assert info.health.last_seen == datetime(2025, 1, 1, tzinfo=UTC).timestamp()
    assert [n.name for n in info.nodes] == ["eu-0", "eu-1"]
    assert info.kind is MemberKind.KUBERNETES


def test_prices_become_per_milli_unit_hour() -> None:
    cost = cluster_info(parse(member_doc()), ()).cost
    # 2 GPUs of a100 for an hour; 4Gi of memory; 2 GPUs of t4.
    assert cost.hourly({GPU: 2000}, {GPU: "a100"}) == pytest.approx(5.0)
    assert cost.hourly({"memory": 4 * 2**30 * 1000}, {}) == pytest.approx(0.016)
    assert cost.hourly({GPU: 2000}, {GPU: "t4"}) == pytest.approx(1.0)
    assert cost.hourly({"cpu": 64000}, {}) == 0.0


@pytest.mark.parametrize(("status", "want_active", "want_reason", "want_seen"), [
    ({}, False, "NotObserved", None),
    ({"conditions": [{"type": "Active", "status": "False", "reason": "Unreachable",
                      "message": "dial tcp: timeout"}]}, False, "Unreachable", None),
])
def test_health_from_status(status: dict[str, Any], want_active: bool, want_reason: str,
                            want_seen: float | None) -> None:
    doc = member_doc()
    doc["status"] = status
    health = cluster_info(parse(doc), ()).health
    assert (health.active, health.reason, health.last_seen) == (want_active, want_reason,
                                                                want_seen)


def test_pool_member_kind() -> None:
    doc = member_doc(kubeConfig=None, pool="lab")
    del doc["spec"]["kubeConfig"]
    assert cluster_info(parse(doc), ()).kind is MemberKind.POOL


def test_naive_times_are_utc() -> None:
    assert timestamp(datetime(2025, 1, 1)) == datetime(2025, 1, 1, tzinfo=UTC).timestamp()


def test_repeated_node_names_are_refused() -> None:
    with pytest.raises(ValueError, match="member cluster eu: node names must be unique "
                                         r"\(repeated: eu-0\)"):
        cluster_info(parse(member_doc()), gpu_nodes("eu", (8,)) * 2)


def test_capacity_status_per_flavor() -> None:
    nodes = (*gpu_nodes("a", (8, 2)), *gpu_nodes("t", (4,), model="t4"),
             node("cordoned", f"{GPU}=8", labels={MODEL: "a100"}, unschedulable=True))
    capacity, free = capacity_status(nodes, {k: FLAVORS[k] for k in ("a100", "t4", "spot")})
    assert [(c.name, c.resources) for c in capacity] == [
        ("a100", {"cpu": "128", "memory": "1Ti", GPU: "16"}),
        ("t4", {"cpu": "64", "memory": "512Gi", GPU: "8"})]
    assert [(c.name, c.resources[GPU]) for c in free] == [("a100", "10"), ("t4", "4")]


def config_doc(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "MultiClusterConfig",
            "metadata": {"name": "fleet"},
            "spec": {"clusters": ["eu", "us"], **spec}}


def test_config_object_becomes_plugins_and_weights() -> None:
    obj = api.parse_object(config_doc(disabledFilters=["DataLocality"],
                                      scoreWeights=[{"name": "Cost", "weight": 4},
                                                    {"name": "LoadBalance", "weight": 0}],
                                      staleAfter="30s", workerLostTimeout="2m"))
    assert isinstance(obj, api.MultiClusterConfig)
    cfg = dispatch_config(obj)
    assert (cfg.name, cfg.clusters) == ("fleet", ("eu", "us"))
    assert "DataLocality" not in [f.name for f in cfg.filters]
    assert [(p.name, w) for p, w in cfg.scorers] == [("Cost", 4), ("DataLocality", 1)]
    assert (cfg.stale_after, cfg.worker_lost_timeout) == (30.0, 120.0)


def test_config_with_unknown_plugin_names_the_field() -> None:
    obj = api.parse_object(config_doc(scoreWeights=[{"name": "Latency", "weight": 1}]))
    assert isinstance(obj, api.MultiClusterConfig)
    with pytest.raises(SettingsError, match=r"MultiClusterConfig fleet: spec\.scoreWeights: "
                                            "no score plugin named Latency"):
        dispatch_config(obj)
