"""Scorers against values computed by hand with kube-scheduler's formulas.

Each ``want_score`` below is worked out in the comment beside it: per-resource
scores with integer division, then the weighted mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from placement_builders import RACKS, node, pod

from placement.model import ModelError, Node
from placement.scoring import (
    BINPACK_SHAPE,
    ResourceAllocationScorer,
    ResourceSpec,
    ShapePoint,
    Strategy,
    WeightedScorer,
    broken_linear,
    to_extender_priority,
)
from placement.topology import Topology, TopologyScorer

CPU_MEM = (ResourceSpec("cpu"), ResourceSpec("memory"))
WITH_GPU = (ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec("nvidia.com/gpu", 3))


@dataclass
class ScoreCase:
    name: str
    allocatable: str
    used: str
    request: str
    want_score: int
    resources: tuple[ResourceSpec, ...] = CPU_MEM
    shape: tuple[ShapePoint, ...] = ()


MOST_ALLOCATED = [
    # cpu 4/4 → 100, memory 7000/10000 → 70; (100 + 70) // 2
    ScoreCase("weights 1:1", "cpu=4,memory=10000", "cpu=3,memory=5000", "cpu=1,memory=2000", 85),
    # (100*2 + 70*1) // 3 = 270 // 3
    ScoreCase("cpu weighs double", "cpu=4,memory=10000", "cpu=3,memory=5000",
              "cpu=1,memory=2000", 90, (ResourceSpec("cpu", 2), ResourceSpec("memory"))),
    # cpu 5 > 4 is clamped to 4 → 100; memory 20; 120 // 2
    ScoreCase("over-requested is clamped", "cpu=4,memory=10000", "cpu=4", "cpu=1,memory=2000",
              60),
    # cpu 100/3 → 33, memory 200/3 → 66; 99 // 2
    ScoreCase("integer division floors", "cpu=3,memory=3", "", "cpu=1,memory=2", 49),
    # cpu 4/8 → 50, memory 60, gpu 6/8 → 75 weight 3; (50 + 60 + 225) // 5
    ScoreCase("gpu with its weight", "cpu=8,memory=100,nvidia.com/gpu=8",
              "cpu=2,memory=50,nvidia.com/gpu=4", "cpu=2,memory=10,nvidia.com/gpu=2", 67,
              WITH_GPU),
    # gpu not requested → left out: (50 + 60) // 2
    ScoreCase("unrequested gpu is left out", "cpu=8,memory=100,nvidia.com/gpu=8",
              "cpu=2,memory=50,nvidia.com/gpu=4", "cpu=2,memory=10", 55, WITH_GPU),
    # node has no gpu (allocatable 0) → left out: cpu 25, memory 10; 35 // 2
    ScoreCase("node without the gpu", "cpu=8,memory=100", "", "cpu=2,memory=10,nvidia.com/gpu=1",
              17, WITH_GPU),
    # memory allocatable 0 → left out: cpu 1/4 → 25
    ScoreCase("resource the node lacks", "cpu=4", "", "cpu=1", 25),
    ScoreCase("nothing to score", "cpu=4", "", "cpu=1", 0, (ResourceSpec("nvidia.com/gpu"),)),
    # gpu only: 3/8 → 37
    ScoreCase("gpu only", "nvidia.com/gpu=8", "nvidia.com/gpu=2", "nvidia.com/gpu=1", 37,
              (ResourceSpec("nvidia.com/gpu"),)),
]

LEAST_ALLOCATED = [
    # cpu (4-4)*100/4 → 0, memory 3000*100/10000 → 30; 30 // 2
    ScoreCase("weights 1:1", "cpu=4,memory=10000", "cpu=3,memory=5000", "cpu=1,memory=2000", 15),
    # (0*2 + 30) // 3
    ScoreCase("cpu weighs double", "cpu=4,memory=10000", "cpu=3,memory=5000",
              "cpu=1,memory=2000", 10, (ResourceSpec("cpu", 2), ResourceSpec("memory"))),
    # cpu over-requested → 0, memory 80; 80 // 2
    ScoreCase("over-requested scores 0", "cpu=4,memory=10000", "cpu=4", "cpu=1,memory=2000", 40),
    # cpu 200/3 → 66, memory 100/3 → 33; 99 // 2
    ScoreCase("integer division floors", "cpu=3,memory=3", "", "cpu=1,memory=2", 49),
    # cpu 50, memory 40, gpu 25 * 3; (50 + 40 + 75) // 5
    ScoreCase("gpu with its weight", "cpu=8,memory=100,nvidia.com/gpu=8",
              "cpu=2,memory=50,nvidia.com/gpu=4", "cpu=2,memory=10,nvidia.com/gpu=2", 33,
              WITH_GPU),
    # empty node, gpu only: 7/8 free → 87
    ScoreCase("gpu only", "nvidia.com/gpu=8", "", "nvidia.com/gpu=1", 87,
              (ResourceSpec("nvidia.com/gpu"),)),
]

DOWN = (ShapePoint(0, 10), ShapePoint(100, 0))
RATIO = [
    # binpack shape is the identity times 10: cpu 100, memory 70; round(170 / 2)
    ScoreCase("binpack shape", "cpu=4,memory=10000", "cpu=3,memory=5000", "cpu=1,memory=2000",
              85, shape=BINPACK_SHAPE),
    # utilisation cpu 33, memory 66 → 33 + 66 = 99; round(49.5) = 50 (half away from zero)
    ScoreCase("mean is rounded", "cpu=3,memory=3", "", "cpu=1,memory=2", 50, shape=BINPACK_SHAPE),
    # falling shape: cpu at 100% scores 0 and is left out of the mean; memory 70% → 30
    ScoreCase("zero scores leave the mean", "cpu=4,memory=10000", "cpu=3,memory=5000",
              "cpu=1,memory=2000", 30, shape=DOWN),
    # shape 100 → 0 over 0..30: 100 + trunc(-100 * 10 / 30) = 100 - 33 (Go truncates to zero)
    ScoreCase("slope truncates toward zero", "cpu=10", "", "cpu=1", 67,
              shape=(ShapePoint(0, 10), ShapePoint(30, 0))),
    # peak at 50: utilisation 70 → 100 + trunc(-100 * 20 / 50) = 60
    ScoreCase("three points", "cpu=10", "", "cpu=7", 60,
              shape=(ShapePoint(0, 0), ShapePoint(50, 10), ShapePoint(100, 0))),
    # over-requested counts as 100% utilisation → shape(100) = 100
    ScoreCase("over-requested is full", "cpu=4", "cpu=4", "cpu=1", 100, shape=BINPACK_SHAPE),
    # gpu 3/8 → 37 → 37, weight 3; cpu 25 → 25; round((25 + 111) / 4) = round(34.0)
    ScoreCase("gpu weight", "cpu=8,nvidia.com/gpu=8", "cpu=1,nvidia.com/gpu=2",
              "cpu=1,nvidia.com/gpu=1", 34,
              (ResourceSpec("cpu"), ResourceSpec("nvidia.com/gpu", 3)), BINPACK_SHAPE),
]


def _check(strategy: Strategy, case: ScoreCase) -> None:
    scorer = ResourceAllocationScorer(strategy, case.resources, case.shape)
    n = node("n", case.allocatable, case.used)
    assert scorer.score(n, pod(case.request)) == case.want_score
    assert scorer.score_nodes(pod(case.request), [n, n]) == [case.want_score] * 2


@pytest.mark.parametrize("case", MOST_ALLOCATED, ids=lambda c: c.name)
def test_most_allocated(case: ScoreCase) -> None:
    _check(Strategy.MOST_ALLOCATED, case)


@pytest.mark.parametrize("case", LEAST_ALLOCATED, ids=lambda c: c.name)
def test_least_allocated(case: ScoreCase) -> None:
    _check(Strategy.LEAST_ALLOCATED, case)


@pytest.mark.parametrize("case", RATIO, ids=lambda c: c.name)
def test_requested_to_capacity_ratio(case: ScoreCase) -> None:
    _check(Strategy.REQUESTED_TO_CAPACITY_RATIO, case)


@pytest.mark.parametrize("utilization, want_score", [
    (0, 50), (20, 50),      # constant up to the first point
    (50, 75),               # 50 + (100 - 50) * 30 // 60
    (80, 100), (95, 100),   # constant after the last point
])
def test_broken_linear(utilization: int, want_score: int) -> None:
    assert broken_linear((ShapePoint(20, 5), ShapePoint(80, 10)), utilization) == want_score


def test_nonzero_requests_are_used_for_scoring() -> None:
    # A pod without a cpu request scores as 100m (kube-scheduler's stand-in):
    # 100 * 100 // 1000 = 10; the fit check still sees no cpu request.
    from placement.model import PodRequirements

    best_effort = PodRequirements({}, nonzero_requests={"cpu": 100})
    scorer = ResourceAllocationScorer(resources=(ResourceSpec("cpu"),))
    assert scorer.score(node("n", "cpu=1"), best_effort) == 10


def test_binpack_prefers_the_fuller_node_spread_the_emptier() -> None:
    fuller, emptier = node("a", "nvidia.com/gpu=8", "nvidia.com/gpu=6"), node("b",
                                                                             "nvidia.com/gpu=8")
    gpu = (ResourceSpec("nvidia.com/gpu"),)
    most = ResourceAllocationScorer(Strategy.MOST_ALLOCATED, gpu)
    least = ResourceAllocationScorer(Strategy.LEAST_ALLOCATED, gpu)
    assert most.score_nodes(pod(), [fuller, emptier]) == [87, 12]
    assert least.score_nodes(pod(), [fuller, emptier]) == [12, 87]


@pytest.mark.parametrize("build, want_message", [
    (lambda: ResourceSpec("cpu", 0), "weight 0 is not in 1..100"),
    (lambda: ResourceSpec("cpu", 101), "weight 101 is not in 1..100"),
    (lambda: ResourceAllocationScorer(resources=()), "resources must not be empty"),
    (lambda: ResourceAllocationScorer(resources=(ResourceSpec("cpu"), ResourceSpec("cpu"))),
     "listed twice"),
    (lambda: ResourceAllocationScorer(Strategy.REQUESTED_TO_CAPACITY_RATIO),
     "shape must not be empty"),
    (lambda: ResourceAllocationScorer(Strategy.REQUESTED_TO_CAPACITY_RATIO,
                                      shape=(ShapePoint(50, 1), ShapePoint(50, 2))),
     "strictly increase"),
    (lambda: ResourceAllocationScorer(shape=BINPACK_SHAPE), "only to RequestedToCapacityRatio"),
    (lambda: ShapePoint(101, 0), "utilization 101"),
    (lambda: ShapePoint(0, 11), "score 11"),
    (lambda: WeightedScorer(()), "at least one part"),
    (lambda: WeightedScorer(((ResourceAllocationScorer(), 0),)), "must not all be zero"),
])
def test_invalid_scorers_are_refused(build: object, want_message: str) -> None:
    with pytest.raises(ModelError, match=want_message):
        build()  # type: ignore[operator]


def located(name: str, block: str | None, rack: str | None) -> Node:
    labels = {RACKS[2]: name}
    if block:
        labels[RACKS[0]] = block
    if rack:
        labels[RACKS[1]] = rack
    return node(name, labels=labels)


A, B, C = located("a", "b1", "r1"), located("b", "b1", "r1"), located("c", "b1", "r2")
D, F = located("d", "b2", "r3"), located("f", "b2", "r1")
UNLABELLED = node("e")
TOPOLOGY = Topology(RACKS)


@dataclass
class TopologyCase:
    name: str
    peers: tuple[Node, ...]
    want_scores: list[int]  # for A, B, C, D, F, UNLABELLED


TOPOLOGY_CASES = [
    TopologyCase("no peers placed yet", (), [0, 0, 0, 0, 0, 0]),
    # same host 3/3 → 100, same rack 2/3 → 66, same block 1/3 → 33
    TopologyCase("one peer on a", (A,), [100, 66, 33, 0, 0, 0]),
    TopologyCase("the narrowest shared domain counts", (C, D), [33, 33, 100, 100, 33, 0]),
    # rack r1 of block b2 is not rack r1 of block b1
    TopologyCase("a rack is known by its block", (F,), [0, 0, 0, 33, 100, 0]),
    TopologyCase("an unlabelled peer shares nothing", (UNLABELLED,), [0, 0, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("case", TOPOLOGY_CASES, ids=lambda c: c.name)
def test_topology_scorer(case: TopologyCase) -> None:
    scorer = TopologyScorer(TOPOLOGY)
    assert scorer.score_nodes(pod(), [A, B, C, D, F, UNLABELLED], case.peers) == case.want_scores


def test_weighted_combination_is_the_floored_weighted_mean() -> None:
    binpack = ResourceAllocationScorer(resources=(ResourceSpec("nvidia.com/gpu"),))
    combined = WeightedScorer(((binpack, 2), (TopologyScorer(TOPOLOGY), 1)))
    nodes = [node("x", "nvidia.com/gpu=8", "nvidia.com/gpu=6", labels=dict(B.labels)),
             node("y", "nvidia.com/gpu=8", labels=dict(D.labels))]
    # x: binpack 87, topology 66 (shares rack with A) → (174 + 66) // 3 = 80
    # y: binpack 12, topology 0 → 24 // 3 = 8
    assert combined.score_nodes(pod(), nodes, (A,)) == [80, 8]


@pytest.mark.parametrize("score, want_priority", [(0, 0), (9, 0), (10, 1), (85, 8), (100, 10)])
def test_extender_priority_range(score: int, want_priority: int) -> None:
    assert to_extender_priority(score) == want_priority


@pytest.mark.parametrize("levels, want_message", [
    ((), "levels must not be empty"),
    (("a", ""), "must not be empty"),
    (("a", "b", "a"), "repeat"),
])
def test_invalid_topologies_are_refused(levels: tuple[str, ...], want_message: str) -> None:
    with pytest.raises(ModelError, match=want_message):
        Topology(levels)


def test_unknown_level_is_named() -> None:
    with pytest.raises(ModelError, match="'zone' is not one of its levels"):
        TOPOLOGY.index("zone")
