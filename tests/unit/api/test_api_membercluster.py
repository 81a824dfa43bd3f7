"""MemberCluster and MultiClusterConfig: valid manifests parse, every rule names its field,
selector labels include region/zone/provider, durations parse, CRDs carry names and columns."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from api_builders import DELETE, edit

from kuota import crds
from quota import api
from quota.api.multiclusterconfig import duration_seconds

ROOT = Path(__file__).resolve().parents[3]

MEMBER: dict[str, Any] = {
    "apiVersion": "kuota.dev/v1alpha1",
    "kind": "MemberCluster",
    "metadata": {"name": "eu-a100", "labels": {"team": "ml"}},
    "spec": {
        "kubeConfig": {"location": "eu-a100-kubeconfig"},
        "region": "eu-west-1",
        "zone": "eu-west-1a",
        "provider": "aws",
        "labels": {"gpu.example.com/model": "a100"},
        "taints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}],
        "cost": [
            {"resource": "nvidia.com/gpu", "price": "2.50"},
            {"resource": "nvidia.com/gpu", "flavor": "h100", "price": 4},
            {"resource": "memory", "per": "1Gi", "price": "0.004"},
        ],
        "datasets": ["imagenet-2012", "laion/5b"],
    },
    "status": {
        "conditions": [{"type": "Active", "status": "True", "reason": "Active"}],
        "lastSeenTime": "2025-01-01T00:00:00Z",
        "nodeCount": 3,
        "capacity": [{"name": "a100", "resources": {"nvidia.com/gpu": "24"}}],
        "freeCapacity": [{"name": "a100", "resources": {"nvidia.com/gpu": "8"}}],
    },
}

CONFIG: dict[str, Any] = {
    "apiVersion": "kuota.dev/v1alpha1",
    "kind": "MultiClusterConfig",
    "metadata": {"name": "gpu-fleet"},
    "spec": {
        "clusters": ["eu-a100", "us-t4"],
        "disabledFilters": ["DataLocality"],
        "scoreWeights": [{"name": "Cost", "weight": 3}, {"name": "Binpack", "weight": 0}],
        "staleAfter": "90s",
        "workerLostTimeout": "10m",
    },
}


def member(**changes: Any) -> dict[str, Any]:
    return edit(copy.deepcopy(MEMBER), changes)


def config(**changes: Any) -> dict[str, Any]:
    return edit(copy.deepcopy(CONFIG), changes)


# --- valid objects -------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [MEMBER, CONFIG], ids=["MemberCluster", "MultiClusterConfig"])
def test_valid_objects_parse_and_round_trip(doc: dict[str, Any]) -> None:
    obj = api.parse_object(copy.deepcopy(doc), source="t.yaml")
    assert type(obj) is api.KINDS[doc["kind"]]
    assert api.parse_object(obj.to_dict(), source="t.yaml") == obj


def test_member_fields_are_typed_and_defaulted() -> None:
    mc = api.parse_object(copy.deepcopy(MEMBER))
    assert isinstance(mc, api.MemberCluster)
    assert mc.spec.kube_config is not None
    assert mc.spec.kube_config.location_type == "Secret"
    assert [(r.resource, r.flavor, r.per, r.price) for r in mc.spec.cost] == [
        ("nvidia.com/gpu", None, "1", "2.50"),
        ("nvidia.com/gpu", "h100", "1", "4"),
        ("memory", None, "1Gi", "0.004"),
    ]
    assert mc.status.node_count == 3
    assert mc.status.free_capacity[0].resources == {"nvidia.com/gpu": "8"}


def test_pool_member_needs_no_kubeconfig() -> None:
    mc = api.parse_object(member(**{"spec.kubeConfig": DELETE, "spec.pool": "lab"}))
    assert isinstance(mc, api.MemberCluster)
    assert (mc.spec.pool, mc.spec.kube_config) == ("lab", None)


def test_selector_labels_merge_metadata_spec_and_well_known_keys() -> None:
    mc = api.parse_object(copy.deepcopy(MEMBER))
    assert isinstance(mc, api.MemberCluster)
    assert mc.selector_labels() == {
        "team": "ml",
        "gpu.example.com/model": "a100",
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "kuota.dev/provider": "aws",
    }


def test_config_defaults() -> None:
    obj = api.parse_object(config(**{"spec.staleAfter": DELETE, "spec.workerLostTimeout": DELETE,
                                     "spec.disabledFilters": DELETE,
                                     "spec.scoreWeights": DELETE}))
    assert isinstance(obj, api.MultiClusterConfig)
    spec = obj.spec
    assert (spec.stale_after_seconds, spec.worker_lost_timeout_seconds) == (60.0, 300.0)
    assert (spec.disabled_filters, spec.score_weights) == ((), ())


@pytest.mark.parametrize(("text", "want_seconds"), [
    ("300s", 300.0), ("5m", 300.0), ("1h30m", 5400.0), ("1.5s", 1.5), ("250ms", 0.25),
    ("2h0m0s", 7200.0),
])
def test_durations_follow_go_syntax(text: str, want_seconds: float) -> None:
    assert duration_seconds(text) == pytest.approx(want_seconds)


@pytest.mark.parametrize("text", ["", "5", "5 m", "m", "-5m", "5d"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        duration_seconds(text)


# --- rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    doc: dict[str, Any]
    want_field: str
    want_message: str


CASES = [
    Case("neither kubeConfig nor pool", member(**{"spec.kubeConfig": DELETE}), "spec",
         "set exactly one of kubeConfig"),
    Case("both kubeConfig and pool", member(**{"spec.pool": "lab"}), "spec",
         "set exactly one of kubeConfig"),
    Case("kubeconfig location type", member(**{"spec.kubeConfig.locationType": "Url"}),
         "spec.kubeConfig.locationType", "must be 'Secret' or 'Path'"),
    Case("pool name is a DNS label", member(**{"spec.kubeConfig": DELETE, "spec.pool": "Lab_1"}),
         "spec.pool", "DNS-1123 label"),
    Case("region is a label value", member(**{"spec.region": "eu west"}), "spec.region",
         "may hold only letters"),
    Case("spec label value", member(**{"spec.labels": {"tier": "a b"}}), "spec.labels.tier",
         "may hold only letters"),
    Case("well-known key set by region", member(**{"spec.labels": {
        "topology.kubernetes.io/region": "x"}}), "spec.labels[topology.kubernetes.io/region]",
        "set region instead"),
    Case("spec label contradicts metadata label", member(**{"spec.labels": {"team": "ops"}}),
         "spec.labels.team", "contradicts metadata.labels[team]"),
    Case("region contradicts metadata label", member(**{"metadata.labels": {
        "topology.kubernetes.io/region": "us-east-1"}}), "spec.region", "contradicts"),
    Case("duplicate taint", member(**{"spec.taints": [
        {"key": "spot", "effect": "NoSchedule"}, {"key": "spot", "value": "x",
                                                  "effect": "NoSchedule"}]}),
         "spec.taints[1]", "duplicate taint spot:NoSchedule"),
    Case("price is a decimal", member(**{"spec.cost[0].price": "-1"}), "spec.cost[0].price",
         "is not a price"),
    Case("price is not a float string", member(**{"spec.cost[0].price": "1e3"}),
         "spec.cost[0].price", "is not a price"),
    Case("per must be positive", member(**{"spec.cost[0].per": "0"}), "spec.cost[0].per",
         "must be > 0"),
    Case("resource priced twice", member(**{"spec.cost[1].flavor": DELETE}), "spec.cost[1]",
         "nvidia.com/gpu is priced twice"),
    Case("dataset name", member(**{"spec.datasets[0]": "s3://bucket"}), "spec.datasets[0]",
         "is not a dataset name"),
    Case("dataset listed twice", member(**{"spec.datasets[1]": "imagenet-2012"}),
         "spec.datasets[1]", "listed twice"),
    Case("negative node count", member(**{"status.nodeCount": -1}), "status.nodeCount",
         "greater than or equal to 0"),
    Case("config needs clusters", config(**{"spec.clusters": []}), "spec.clusters",
         "at least 1 item"),
    Case("cluster listed twice", config(**{"spec.clusters[1]": "eu-a100"}), "spec.clusters[1]",
         "eu-a100 is listed twice"),
    Case("plugin name spelling", config(**{"spec.disabledFilters[0]": "data-locality"}),
         "spec.disabledFilters[0]", "should match pattern"),
    Case("weight range", config(**{"spec.scoreWeights[0].weight": 101}),
         "spec.scoreWeights[0].weight", "less than or equal to 100"),
    Case("scorer weighted twice", config(**{"spec.scoreWeights[1].name": "Cost"}),
         "spec.scoreWeights[1]", "Cost is listed twice"),
    Case("bad duration", config(**{"spec.workerLostTimeout": "5 minutes"}),
         "spec.workerLostTimeout", "is not a duration"),
    Case("staleAfter beyond workerLostTimeout", config(**{"spec.staleAfter": "11m"}),
         "spec.staleAfter", "must not exceed workerLostTimeout 10m"),
    Case("zero lost timeout", config(**{"spec.staleAfter": "0s", "spec.workerLostTimeout": "0s"}),
         "spec.workerLostTimeout", "must be longer than zero"),
    Case("unknown field", config(**{"spec.weights": {}}), "spec.weights", "unknown field"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_rejects_with_field_path(case: Case) -> None:
    with pytest.raises(api.ObjectError) as info:
        api.parse_object(case.doc, source="bad.yaml")
    problems = info.value.problems
    matching = [p for p in problems if p.field == case.want_field]
    assert matching, f"no problem at {case.want_field}; got {[str(p) for p in problems]}"
    assert any(case.want_message in p.message for p in matching), [str(p) for p in matching]


# --- CRDs ----------------------------------------------------------------------------------


def _crd(kind: str) -> dict[str, Any]:
    path = ROOT / "manifests" / "crds" / crds.file_name(api.KINDS[kind])
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


@pytest.mark.parametrize(("kind", "want_plural", "want_short", "want_status"), [
    ("MemberCluster", "memberclusters", ["mc"], True),
    ("MultiClusterConfig", "multiclusterconfigs", ["mcc"], False),
])
def test_crd_names(kind: str, want_plural: str, want_short: list[str], want_status: bool) -> None:
    crd = _crd(kind)
    assert crd["spec"]["names"]["plural"] == want_plural
    assert crd["spec"]["names"]["shortNames"] == want_short
    assert crd["spec"]["scope"] == "Cluster"
    assert ("subresources" in crd["spec"]["versions"][0]) is want_status


def test_member_printer_columns() -> None:
    columns = _crd("MemberCluster")["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"], c["type"]) for c in columns] == [
        ("Active", ".status.conditions[?(@.type=='Active')].status", "string"),
        ("Region", ".spec.region", "string"),
        ("Nodes", ".status.nodeCount", "integer"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ]


def test_price_and_duration_schemas() -> None:
    schema = _crd("MemberCluster")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    price = schema["properties"]["spec"]["properties"]["cost"]["items"]["properties"]["price"]
    assert price["x-kubernetes-int-or-string"] is True
    schema = _crd("MultiClusterConfig")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    lost = schema["properties"]["spec"]["properties"]["workerLostTimeout"]
    assert (lost["type"], lost["default"]) == ("string", "5m")
