"""Multi-cluster dispatch in the simulator: MemberCluster ``nodes:``, annotations, results."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.scenario import ScenarioError, parse_scenario
from kuota.simulator import simulate


def member(name: str = "eu", nodes: Any = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "kuota.dev/v1alpha1", "kind": "MemberCluster",
                           "metadata": {"name": name}, "spec": {"pool": name, **spec}}
    if nodes is not None:
        obj["nodes"] = nodes
    return obj


def gpu_node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {"name": name, "allocatable": {"nvidia.com/gpu": gpus}}


def scenario(*members: dict[str, Any], workloads: list[dict[str, Any]] | None = None,
             check: bool = True) -> dict[str, Any]:
    names = [m["metadata"]["name"] for m in members]
    cq: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "default", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]}]}]}
    if check:
        cq["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mc"}]}
    return {"objects": [
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "ResourceFlavor",
         "metadata": {"name": "default"}},
        *members,
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "MultiClusterConfig",
         "metadata": {"name": "fleet"}, "spec": {"clusters": names or ["none"]}},
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "AdmissionCheck", "metadata": {"name": "mc"},
         "spec": {"controllerName": "kuota.dev/multicluster",
                  "parameters": {"apiGroup": "kuota.dev", "kind": "MultiClusterConfig",
                                 "name": "fleet"}}},
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": cq},
        {"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
         "metadata": {"name": "lq", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
    ], "workloads": workloads if workloads is not None else [
        {"name": "w", "queueName": "lq", "duration": 10,
         "podSets": [{"requests": {"nvidia.com/gpu": 4}}]}]}


@pytest.mark.parametrize(("nodes", "want_field", "want_message"), [
    ({"name": "n"}, "objects[1].nodes", "must be a list of nodes"),
    ([{"allocatable": {"cpu": 1}}], "objects[1].nodes[0].name", "Field required"),
    ([{"name": "n", "allocatable": {"cpu": "lots"}}], "objects[1].nodes[0].allocatable.cpu",
     "quantity"),
    ([gpu_node("n"), gpu_node("n")], "objects[1].nodes", "node names must be unique"),
    ([{"name": "n", "gpus": 8}], "objects[1].nodes[0].gpus", "Extra inputs"),
])
def test_bad_member_nodes_name_the_object_and_field(nodes: Any, want_field: str,
                                                    want_message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario(member("eu", nodes)), source="s.yaml")
    problems = caught.value.problems
    assert [(p.kind, p.name, p.field) for p in problems] == [("MemberCluster", "eu", want_field)]
    assert want_message.lower() in problems[0].message.lower()


def test_member_nodes_are_kept_apart_from_the_api_object() -> None:
    s = parse_scenario(scenario(member("eu", [gpu_node("eu-1"), gpu_node("eu-2", 4)])),
                       source="s.yaml")
    assert [n.name for n in s.member_nodes["eu"]] == ["eu-1", "eu-2"]


@pytest.mark.parametrize(("members", "check", "want_admission", "want_pending"), [
    # A member without an Active condition is simulated as always answering.
    ([member("eu", [gpu_node("eu-1")])], True, {"cluster": "eu"}, None),
    # An explicit status is kept: an inactive member gets nothing (Health).
    ([member("eu", [gpu_node("eu-1")]) | {"status": {"conditions": [
        {"type": "Active", "status": "False", "reason": "Unreachable", "message": "",
         "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}], True, None, "Health"),
    # A member without nodes has no capacity.
    ([member("eu")], True, None, "CapacityEstimate"),
    # No dispatch check: no cluster in the admission.
    ([member("eu", [gpu_node("eu-1")])], False, {}, None),
])
def test_admissions_carry_the_member(members: list[dict[str, Any]], check: bool,
                                     want_admission: dict[str, Any] | None,
                                     want_pending: str | None) -> None:
    result = simulate(parse_scenario(scenario(*members, check=check), source="s")).to_json()
    outcome = result["workloads"]["default/w"]
    if want_admission is None:
        assert outcome["admissions"] == []
        assert outcome["pendingReason"] == "AdmissionCheck"
        assert want_pending and want_pending in outcome["pendingMessage"]
    else:
        [admission] = outcome["admissions"]
        assert {k: v for k, v in admission.items() if k == "cluster"} == want_admission


def test_workload_annotations_reach_the_dispatcher() -> None:
    workloads = [{"name": "w", "queueName": "lq", "duration": 10,
                  "annotations": {"kuota.dev/cluster-selector": "topology.kubernetes.io/region=us"},
                  "podSets": [{"requests": {"nvidia.com/gpu": 4}}]}]
    doc = scenario(member("eu", [gpu_node("eu-1")], region="eu"),
                   member("us", [gpu_node("us-1")], region="us"), workloads=workloads)
    result = simulate(parse_scenario(doc, source="s")).to_json()
    assert result["workloads"]["default/w"]["admissions"][0]["cluster"] == "us"
