"""Fit: kube-scheduler's NodeUnschedulable, TaintToleration, NodeAffinity and
NodeResourcesFit filters, table by table."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from placement_builders import node, pod, taint

from placement.fit import FitResult, check_fit, summarize
from placement.model import (
    ModelError,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodRequirements,
    SelectorOperator,
    TaintEffect,
    Toleration,
    TolerationOperator,
)


@dataclass
class ResourceCase:
    name: str
    allocatable: str
    used: str
    request: str
    want_reasons: tuple[str, ...]
    pods: int = 0
    ignored: frozenset[str] = frozenset()


RESOURCE_CASES = [
    ResourceCase("fits exactly", "cpu=4,nvidia.com/gpu=8", "cpu=3,nvidia.com/gpu=6",
                 "cpu=1,nvidia.com/gpu=2", ()),
    ResourceCase("one gpu short", "cpu=4,nvidia.com/gpu=8", "nvidia.com/gpu=7",
                 "nvidia.com/gpu=2", ("Insufficient nvidia.com/gpu",)),
    ResourceCase("every short resource is named", "cpu=4,memory=1Gi", "cpu=4,memory=1Gi",
                 "cpu=100m,memory=1", ("Insufficient cpu", "Insufficient memory")),
    ResourceCase("a resource the node lacks", "cpu=4", "", "example.com/fpga=1",
                 ("Insufficient example.com/fpga",)),
    ResourceCase("a zero request needs nothing", "cpu=4", "", "example.com/fpga=0", ()),
    ResourceCase("pod slots run out", "cpu=4,pods=2", "", "cpu=1", ("Too many pods",),
                 pods=2),
    ResourceCase("last pod slot", "cpu=4,pods=2", "", "cpu=1", (), pods=1),
    ResourceCase("no pods allocatable means no pod limit", "cpu=4", "", "cpu=1", (),
                 pods=500),
    ResourceCase("ignored resources are not checked", "cpu=4", "", "example.com/foo=3", (),
                 ignored=frozenset({"example.com/foo"})),
]


@pytest.mark.parametrize("case", RESOURCE_CASES, ids=lambda c: c.name)
def test_resources(case: ResourceCase) -> None:
    result = check_fit(node("n", case.allocatable, case.used, pods=case.pods), pod(case.request),
                       ignored_resources=case.ignored)
    assert result.reasons == case.want_reasons
    assert result.fits == (not case.want_reasons)
    assert result.unresolvable is False


@dataclass
class TaintCase:
    name: str
    taints: tuple[tuple[str, str, str], ...]  # key, effect, value
    tolerations: tuple[Toleration, ...]
    want_reason: str | None


TAINT_CASES = [
    TaintCase("NoSchedule blocks", (("gpu", "NoSchedule", "a100"),), (),
              "node(s) had untolerated taint {gpu: a100}"),
    TaintCase("NoExecute blocks", (("spot", "NoExecute", ""),), (),
              "node(s) had untolerated taint {spot: }"),
    TaintCase("PreferNoSchedule does not filter", (("busy", "PreferNoSchedule", ""),), (), None),
    TaintCase("Equal with the right value", (("gpu", "NoSchedule", "a100"),),
              (Toleration("gpu", TolerationOperator.EQUAL, "a100"),), None),
    TaintCase("Equal with a wrong value", (("gpu", "NoSchedule", "a100"),),
              (Toleration("gpu", TolerationOperator.EQUAL, "t4"),),
              "node(s) had untolerated taint {gpu: a100}"),
    TaintCase("Exists ignores the value", (("gpu", "NoSchedule", "a100"),),
              (Toleration("gpu", TolerationOperator.EXISTS),), None),
    TaintCase("empty key with Exists tolerates all", (("a", "NoSchedule", ""),
                                                      ("b", "NoExecute", "x")),
              (Toleration("", TolerationOperator.EXISTS),), None),
    TaintCase("second taint untolerated", (("a", "NoSchedule", ""), ("b", "NoSchedule", "")),
              (Toleration("a", TolerationOperator.EXISTS),),
              "node(s) had untolerated taint {b: }"),
]


@pytest.mark.parametrize("case", TAINT_CASES, ids=lambda c: c.name)
def test_taints(case: TaintCase) -> None:
    n = node("n", taints=tuple(taint(k, e, v) for k, e, v in case.taints))
    result = check_fit(n, pod(tolerations=case.tolerations))
    if case.want_reason is None:
        assert result.fits
    else:
        assert result.reasons == (case.want_reason,)
        assert result.unresolvable


def test_toleration_effect_must_match_the_taint() -> None:
    n = node("n", taints=(taint("gpu", "NoExecute"),))
    wrong = Toleration("gpu", TolerationOperator.EXISTS, effect=TaintEffect.NO_SCHEDULE)
    right = Toleration("gpu", TolerationOperator.EXISTS, effect=TaintEffect.NO_EXECUTE)
    assert not check_fit(n, pod(tolerations=(wrong,))).fits
    assert check_fit(n, pod(tolerations=(right,))).fits


def expr(key: str, op: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, SelectorOperator(op), values)


@dataclass
class AffinityCase:
    name: str
    labels: dict[str, str]
    selector: dict[str, str]
    terms: tuple[NodeSelectorTerm, ...] | None
    want_fits: bool


LABELS = {"gpu": "a100", "zone": "z1", "cores": "64"}
AFFINITY_CASES = [
    AffinityCase("no constraints", LABELS, {}, None, True),
    AffinityCase("nodeSelector matches", LABELS, {"gpu": "a100", "zone": "z1"}, None, True),
    AffinityCase("nodeSelector value differs", LABELS, {"gpu": "t4"}, None, False),
    AffinityCase("nodeSelector label missing", LABELS, {"rack": "r1"}, None, False),
    AffinityCase("In", LABELS, {}, (NodeSelectorTerm((expr("gpu", "In", "t4", "a100"),)),),
                 True),
    AffinityCase("In, label missing", LABELS, {},
                 (NodeSelectorTerm((expr("rack", "In", "r1"),)),), False),
    AffinityCase("NotIn", LABELS, {}, (NodeSelectorTerm((expr("gpu", "NotIn", "a100"),)),),
                 False),
    AffinityCase("NotIn matches a missing label", LABELS, {},
                 (NodeSelectorTerm((expr("rack", "NotIn", "r1"),)),), True),
    AffinityCase("Exists", LABELS, {}, (NodeSelectorTerm((expr("zone", "Exists"),)),), True),
    AffinityCase("DoesNotExist", LABELS, {},
                 (NodeSelectorTerm((expr("zone", "DoesNotExist"),)),), False),
    AffinityCase("Gt", LABELS, {}, (NodeSelectorTerm((expr("cores", "Gt", "32"),)),), True),
    AffinityCase("Gt is strict", LABELS, {}, (NodeSelectorTerm((expr("cores", "Gt", "64"),)),),
                 False),
    AffinityCase("Lt", LABELS, {}, (NodeSelectorTerm((expr("cores", "Lt", "128"),)),), True),
    AffinityCase("Gt on a non-integer label", LABELS, {},
                 (NodeSelectorTerm((expr("gpu", "Gt", "1"),)),), False),
    AffinityCase("expressions in a term are ANDed", LABELS, {},
                 (NodeSelectorTerm((expr("gpu", "In", "a100"), expr("zone", "In", "z2"))),),
                 False),
    AffinityCase("terms are ORed", LABELS, {},
                 (NodeSelectorTerm((expr("zone", "In", "z2"),)),
                  NodeSelectorTerm((expr("gpu", "In", "a100"),))), True),
    AffinityCase("an empty term matches nothing", LABELS, {}, (NodeSelectorTerm(),), False),
    AffinityCase("no terms match nothing", LABELS, {}, (), False),
    AffinityCase("matchFields on the node name", LABELS, {},
                 (NodeSelectorTerm(match_fields=(expr("metadata.name", "In", "n"),)),), True),
    AffinityCase("matchFields on another name", LABELS, {},
                 (NodeSelectorTerm(match_fields=(expr("metadata.name", "In", "m"),)),), False),
    AffinityCase("selector and affinity both apply", LABELS, {"zone": "z2"},
                 (NodeSelectorTerm((expr("gpu", "In", "a100"),)),), False),
]


@pytest.mark.parametrize("case", AFFINITY_CASES, ids=lambda c: c.name)
def test_affinity(case: AffinityCase) -> None:
    requirements = PodRequirements(node_selector=case.selector, required_terms=case.terms)
    result = check_fit(node("n", labels=case.labels), requirements)
    assert result.fits == case.want_fits
    if not case.want_fits:
        assert result.reasons == ("node(s) didn't match Pod's node affinity/selector",)
        assert result.unresolvable


def test_cordoned_node_needs_the_unschedulable_toleration() -> None:
    cordoned = node("n", unschedulable=True)
    assert check_fit(cordoned, pod()) == FitResult(("node(s) were unschedulable",), True)
    tolerate = Toleration("node.kubernetes.io/unschedulable", TolerationOperator.EXISTS)
    assert check_fit(cordoned, pod(tolerations=(tolerate,))).fits


def test_first_failing_filter_answers() -> None:
    tainted_and_full = node("n", "nvidia.com/gpu=8", "nvidia.com/gpu=8",
                            taints=(taint("gpu"),))
    assert check_fit(tainted_and_full, pod()).reasons == (
        "node(s) had untolerated taint {gpu: }",)


def test_summary_counts_reasons_over_nodes() -> None:
    results = [FitResult(("Insufficient cpu",)), FitResult(("Insufficient cpu",
                                                            "Insufficient memory")),
               FitResult(("node(s) were unschedulable",), True)]
    assert summarize(results, 4) == ("0/4 nodes are available: 2 Insufficient cpu, "
                                     "1 Insufficient memory, 1 node(s) were unschedulable.")


@pytest.mark.parametrize("build, want_message", [
    (lambda: Toleration("", TolerationOperator.EQUAL, "x"), "empty key requires operator Exists"),
    (lambda: Toleration("k", TolerationOperator.EXISTS, "x"), "Exists takes no value"),
    (lambda: expr("k", "In"), "values must not be empty"),
    (lambda: expr("k", "Exists", "v"), "values must be empty"),
    (lambda: expr("k", "Gt", "1", "2"), "exactly one value"),
    (lambda: expr("k", "Lt", "x"), "'x' is not an integer"),
    (lambda: NodeSelectorTerm(match_fields=(expr("metadata.labels", "In", "a"),)),
     "only metadata.name"),
    (lambda: PodRequirements({"cpu": -1}, name="p"), "pod p: requests[cpu] must not be negative"),
    (lambda: PodRequirements({"pods": 1000}), "every pod takes one slot"),
    (lambda: Node("", {}), "name must not be empty"),
])
def test_invalid_values_are_refused(build: object, want_message: str) -> None:
    with pytest.raises(ModelError, match=re.escape(want_message)):
        build()  # type: ignore[operator]
