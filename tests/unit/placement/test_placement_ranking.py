"""Ranked nodes: the same answer as place_gang's scan, whatever changed in between."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from placement_builders import gpu_node, node, pod, taint

from placement.gang import GangPlacement, place_gang
from placement.model import ModelError, Node, PodRequirements, Toleration
from placement.ranking import NodeRanking
from placement.scoring import DEFAULT_RESOURCES, ResourceAllocationScorer, ResourceSpec, Strategy

SCORED = (*DEFAULT_RESOURCES, ResourceSpec("nvidia.com/gpu"))
BINPACK = ResourceAllocationScorer(Strategy.MOST_ALLOCATED, SCORED)
SPREAD = ResourceAllocationScorer(Strategy.LEAST_ALLOCATED, SCORED)


def scan(ranking: NodeRanking, pods: list[PodRequirements],
         scorer: ResourceAllocationScorer = BINPACK) -> GangPlacement | None:
    result = place_gang(pods, list(ranking.nodes.values()), scorer)
    return result if isinstance(result, GangPlacement) else None


@dataclass
class RankingCase:
    name: str
    nodes: list[Node]
    #: Gangs placed (and kept) one after the other: pod requests each.
    gangs: list[list[str]]
    want_nodes: list[tuple[str, ...] | None]
    #: Applied to the pool after the first gang: node name -> its value from then on.
    change: dict[str, Node] = field(default_factory=dict)
    scorer: ResourceAllocationScorer = BINPACK


CASES = [
    RankingCase("binpack keeps filling the node it chose",
                [gpu_node("a"), gpu_node("b")], [["nvidia.com/gpu=1"]] * 3,
                [("a",), ("a",), ("a",)]),
    RankingCase("spread moves on once the node is fuller",
                [gpu_node("a"), gpu_node("b")], [["nvidia.com/gpu=1"]] * 3,
                [("a",), ("b",), ("a",)], scorer=SPREAD),
    RankingCase("a gang's pods see each other", [gpu_node("a", 4), gpu_node("b")],
                [["nvidia.com/gpu=3"] * 3], [("a", "b", "b")]),
    RankingCase("a refused gang leaves the pool as it was", [gpu_node("a", 4)],
                [["nvidia.com/gpu=3"] * 2, ["nvidia.com/gpu=4"]], [None, ("a",)]),
    RankingCase("a node freed since the last gang is chosen again",
                [gpu_node("a", 7), gpu_node("b", 6)], [["nvidia.com/gpu=1"]] * 2,
                [("a",), ("a",)], change={"a": gpu_node("a", 7)}),
    RankingCase("a node cordoned since the last gang is passed over",
                [gpu_node("a"), gpu_node("b")], [["nvidia.com/gpu=1"]] * 2,
                [("a",), ("b",)], change={"a": node("a", unschedulable=True)}),
    RankingCase("a node that left is never chosen", [gpu_node("a"), gpu_node("b")],
                [["nvidia.com/gpu=1"]] * 2, [("a",), ("b",)], change={"a": None}),  # type: ignore[dict-item]
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_ranked_placement(case: RankingCase) -> None:
    ranking = NodeRanking(case.scorer, case.nodes)
    got = []
    for i, gang in enumerate(case.gangs):
        if i == 1 and case.change:
            current = dict(ranking.nodes)
            current.update(case.change)
            ranking.sync(n for n in current.values() if n is not None)
        pods = [pod(r) for r in gang]
        before = dict(ranking.nodes)
        result = ranking.place_gang(pods)
        assert dict(ranking.nodes) == before  # (only the caller's update changes the pool)
        assert result == scan(ranking, pods, case.scorer)
        got.append(result.assignments if result else None)
        if result:
            ranking.update(result.nodes.values())
    assert got == case.want_nodes


def test_a_node_listed_twice_is_refused() -> None:
    with pytest.raises(ModelError, match="node a is listed twice"):
        NodeRanking(BINPACK, [gpu_node("a"), gpu_node("a")])


# -- against the scan, after any sequence of placements and node changes -----------------

NAMES = ("n1", "n2", "n3", "n4", "n5", "n6")
POD_SHAPES = st.sampled_from([
    pod("cpu=1"), pod("cpu=1"), pod("cpu=4,memory=8Gi"), pod("cpu=16"),
    pod("cpu=2", selector={"zone": "a"}),
    pod("cpu=1", tolerations=(Toleration("spot"),)),
    pod("cpu=1,nvidia.com/gpu=1"),
])


@st.composite
def a_node(draw: st.DrawFn, name: str) -> Node:
    cpus = draw(st.sampled_from([8, 16, 32]))
    used = draw(st.integers(0, cpus))
    gpus = draw(st.sampled_from([0, 0, 4]))
    spot = draw(st.booleans())
    return node(name, f"cpu={cpus},memory=64Gi,pods=20" + (f",nvidia.com/gpu={gpus}" if gpus
                                                            else ""),
                f"cpu={used}" if used else "", pods=1 if used else 0,
                labels={"zone": draw(st.sampled_from("ab"))},
                taints=(taint("spot"),) if spot else (),
                unschedulable=draw(st.integers(0, 9)) == 0)


@st.composite
def steps(draw: st.DrawFn) -> tuple[list[Node], list[tuple[str, object]]]:
    nodes = [draw(a_node(name)) for name in NAMES[:draw(st.integers(1, len(NAMES)))]]
    out: list[tuple[str, object]] = []
    for _ in range(draw(st.integers(1, 30))):
        what = draw(st.sampled_from(["gang", "gang", "gang", "change", "leave", "sync"]))
        if what == "gang":
            out.append((what, draw(st.lists(POD_SHAPES, min_size=1, max_size=4))))
        else:
            name = draw(st.sampled_from(NAMES))
            out.append((what, draw(a_node(name))))
    return nodes, out


@settings(max_examples=300, deadline=None)
@given(steps(), st.sampled_from([BINPACK, SPREAD]))
def test_the_ranking_answers_as_the_scan(
        case: tuple[list[Node], list[tuple[str, object]]],
        scorer: ResourceAllocationScorer) -> None:
    nodes, ops = case
    ranking = NodeRanking(scorer, nodes, kinds=3)  # (few kinds: heaps are dropped too)
    for what, arg in ops:
        current = dict(ranking.nodes)
        if what == "gang":
            pods = arg
            assert isinstance(pods, list)
            result = ranking.place_gang(pods)
            assert result == scan(ranking, pods, scorer)
            assert dict(ranking.nodes) == current
            if result:
                ranking.update(result.nodes.values())
        elif what == "change":  # one node's usage or labels changed
            assert isinstance(arg, Node)
            ranking.update([arg])
        elif what == "leave":
            assert isinstance(arg, Node)
            current.pop(arg.name, None)
            ranking.sync(current.values())
        else:  # the view read again: every node a new object, one of them different
            assert isinstance(arg, Node)
            current[arg.name] = arg
            ranking.sync(Node(n.name, n.allocatable, n.requested, n.labels, n.taints,
                              n.unschedulable) for n in current.values())
