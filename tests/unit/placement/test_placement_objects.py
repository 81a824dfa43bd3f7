"""Kubernetes JSON → placement values: requests, nonzero defaults, affinity, errors."""

from __future__ import annotations

import re
from typing import Any

import pytest

from placement.model import SelectorOperator, TaintEffect, TolerationOperator
from placement.objects import (
    DEFAULT_MEMORY_REQUEST,
    ObjectError,
    node_from_object,
    pod_from_object,
    pod_requests,
)

GI = 1024**3 * 1000


def container(requests: dict[str, str] | None = None, **more: Any) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests or {}}, **more}


def test_node_object() -> None:
    node = node_from_object({
        "metadata": {"name": "gpu-1", "labels": {"kubernetes.io/hostname": "gpu-1"}},
        "spec": {"unschedulable": True,
                 "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "63500m", "memory": "250Gi", "nvidia.com/gpu": "8",
                                   "pods": "110"}},
    })
    assert node.name == "gpu-1"
    assert node.allocatable == {"cpu": 63500, "memory": 250 * GI, "nvidia.com/gpu": 8000,
                                "pods": 110000}
    assert node.requested == {}
    assert node.labels == {"kubernetes.io/hostname": "gpu-1"}
    assert [(t.key, t.value, t.effect) for t in node.taints] == [
        ("nvidia.com/gpu", "present", TaintEffect.NO_SCHEDULE)]
    assert node.unschedulable


REQUEST_CASES = [
    ("containers add up", {"containers": [container({"cpu": "1", "memory": "1Gi"}),
                                          container({"cpu": "500m", "nvidia.com/gpu": "1"})]},
     {"cpu": 1500, "memory": GI, "nvidia.com/gpu": 1000}),
    ("an init container larger than the sum wins",
     {"containers": [container({"cpu": "1"})], "initContainers": [container({"cpu": "3"})]},
     {"cpu": 3000}),
    ("a smaller init container does not add",
     {"containers": [container({"cpu": "2"})], "initContainers": [container({"cpu": "1"})]},
     {"cpu": 2000}),
    ("sidecars add to the sum and to later init containers",
     {"containers": [container({"cpu": "1"})],
      "initContainers": [container({"cpu": "1"}, restartPolicy="Always"),
                         container({"cpu": "2500m"})]},
     # sum 1 + sidecar 1 = 2; the later init container needs 2.5 + 1 = 3.5
     {"cpu": 3500}),
    ("overhead is added", {"containers": [container({"cpu": "1"})],
                           "overhead": {"cpu": "250m"}},
     {"cpu": 1250}),
    ("no requests, no entries", {"containers": [{"name": "c"}]}, {}),
]


@pytest.mark.parametrize("name, spec, want_requests", REQUEST_CASES,
                         ids=[c[0] for c in REQUEST_CASES])
def test_pod_requests(name: str, spec: dict[str, Any], want_requests: dict[str, int]) -> None:
    assert pod_requests(spec) == want_requests


def test_nonzero_defaults_apply_per_container() -> None:
    spec = {"containers": [container({"cpu": "1"}), {"name": "sidecar"}]}
    assert pod_requests(spec) == {"cpu": 1000}
    # 1 + 100m for the container without cpu; 200Mi for each without memory
    assert pod_requests(spec, nonzero=True) == {"cpu": 1100,
                                                "memory": 2 * DEFAULT_MEMORY_REQUEST}


def test_pod_object() -> None:
    pod = pod_from_object({
        "metadata": {"name": "w-0", "namespace": "ml"},
        "spec": {
            "containers": [container({"cpu": "2"})],
            "nodeSelector": {"gpu": "a100"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                             "effect": "NoSchedule"}, {"operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "rack", "operator": "In", "values": ["r1", "r2"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                     "values": ["bad"]}]}]}}},
        },
    })
    assert pod.name == "ml/w-0"
    assert pod.requests == {"cpu": 2000}
    assert pod.nonzero_requests == {"cpu": 2000, "memory": DEFAULT_MEMORY_REQUEST}
    assert pod.node_selector == {"gpu": "a100"}
    assert [(t.key, t.operator, t.effect) for t in pod.tolerations] == [
        ("nvidia.com/gpu", TolerationOperator.EXISTS, TaintEffect.NO_SCHEDULE),
        ("", TolerationOperator.EXISTS, None)]
    assert pod.required_terms is not None
    (term,) = pod.required_terms
    assert [(e.key, e.operator, e.values) for e in term.match_expressions] == [
        ("rack", SelectorOperator.IN, ("r1", "r2"))]
    assert [(e.key, e.operator) for e in term.match_fields] == [
        ("metadata.name", SelectorOperator.NOT_IN)]


def test_pod_without_affinity_has_no_required_terms() -> None:
    assert pod_from_object({"metadata": {"name": "p"}, "spec": {}}).required_terms is None


@pytest.mark.parametrize("obj, want_message", [
    ({"metadata": {}}, "node: metadata.name must be a non-empty string"),
    ({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "lots"}}},
     "node n: status.allocatable.cpu: 'lots' is not a quantity"),
    ({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}},
     "node n: spec.taints[0].effect: 'Sometimes' is not a taint effect"),
    ({"metadata": {"name": "n"}, "spec": {"taints": "none"}},
     "node n: spec.taints: expected list, got str"),
    ([1, 2], "node: expected an object, got list"),
])
def test_bad_nodes_are_named(obj: Any, want_message: str) -> None:
    with pytest.raises(ObjectError, match=re.escape(want_message)):
        node_from_object(obj)


@pytest.mark.parametrize("spec, want_message", [
    ({"containers": [{"resources": {"requests": {"cpu": "-1"}}}]},
     "pod ml/p: spec.containers[0].resources.requests.cpu: '-1' must not be negative"),
    ({"containers": "c"}, "pod ml/p: spec.containers: expected list, got str"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near"}]}]}}}},
     "nodeSelectorTerms[0].matchExpressions[0].operator: 'Near' is not a node selector"),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In"}]}]}}}},
     "matchExpressions[0]: node selector requirement 'k' (In): values must not be empty"),
    ({"tolerations": [{"key": "", "operator": "Equal"}]},
     "pod ml/p: spec.tolerations[0]: toleration: an empty key requires operator Exists"),
])
def test_bad_pods_are_named(spec: dict[str, Any], want_message: str) -> None:
    with pytest.raises(ObjectError, match=re.escape(want_message)):
        pod_from_object({"metadata": {"name": "p", "namespace": "ml"}, "spec": spec})
