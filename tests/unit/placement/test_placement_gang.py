"""Gang placement: all pods or none, best score first, deterministic ties."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from placement_builders import RACKS, gpu_node, node, pod, taint

from placement.gang import GangPlacement, GangUnplaceable, place_gang
from placement.model import ModelError, Node
from placement.scoring import ResourceAllocationScorer, ResourceSpec, Strategy, WeightedScorer
from placement.topology import Topology, TopologyScorer

GPU = (ResourceSpec("nvidia.com/gpu"),)
BINPACK = ResourceAllocationScorer(Strategy.MOST_ALLOCATED, GPU)
SPREAD = ResourceAllocationScorer(Strategy.LEAST_ALLOCATED, GPU)


@dataclass
class GangCase:
    name: str
    nodes: list[Node]
    pods: list[str]
    want_nodes: tuple[str, ...] | None  # None: the gang must be refused
    scorer: object = BINPACK
    want_reason: str = ""


CASES = [
    GangCase("binpack fills the fuller node first", [gpu_node("a"), gpu_node("b", 5)],
             ["nvidia.com/gpu=1"] * 3, ("b", "b", "b")),
    # spread: b scores 75 then 62 (free share after placing); then both 50 → a
    GangCase("spread goes to the emptier node", [gpu_node("a", 3), gpu_node("b", 1)],
             ["nvidia.com/gpu=1"] * 3, ("b", "b", "a"), SPREAD),
    GangCase("ties go to the first name", [gpu_node("c"), gpu_node("a"), gpu_node("b")],
             ["nvidia.com/gpu=8"] * 2, ("a", "b")),
    GangCase("pods placed in the call count", [gpu_node("a"), gpu_node("b")],
             ["nvidia.com/gpu=6"] * 2, ("a", "b")),
    GangCase("all of it fits exactly", [gpu_node("a", 4), gpu_node("b", 4)],
             ["nvidia.com/gpu=4"] * 2, ("a", "b")),
    GangCase("one pod too many refuses the whole gang", [gpu_node("a", 4), gpu_node("b", 4)],
             ["nvidia.com/gpu=4"] * 3, None,
             want_reason="pod 2: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
    GangCase("an empty gang is trivially placed", [gpu_node("a")], [], ()),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gang_placement(case: GangCase) -> None:
    result = place_gang([pod(r) for r in case.pods], case.nodes, case.scorer)  # type: ignore[arg-type]
    if case.want_nodes is None:
        assert isinstance(result, GangUnplaceable)
        assert result.reason == case.want_reason
    else:
        assert isinstance(result, GangPlacement)
        assert result.assignments == case.want_nodes


def test_refusal_names_the_first_pod_that_found_no_node() -> None:
    nodes = [gpu_node("a"), node("cpu-only", "cpu=8", taints=(taint("dedicated"),))]
    pods = [pod("nvidia.com/gpu=8", name="ns/w-0"), pod("nvidia.com/gpu=1", name="ns/w-1")]
    result = place_gang(pods, nodes, BINPACK)
    assert result == GangUnplaceable(1, "ns/w-1: 0/2 nodes are available: 1 Insufficient "
                                        "nvidia.com/gpu, 1 node(s) had untolerated taint "
                                        "{dedicated: }.")


def test_returned_nodes_carry_the_gang_and_inputs_are_untouched() -> None:
    a, b = gpu_node("a"), gpu_node("b", 7)
    result = place_gang([pod("nvidia.com/gpu=1")] * 2, [a, b], BINPACK)
    assert isinstance(result, GangPlacement)
    assert result.assignments == ("b", "a")
    assert result.nodes["b"].requested == {"nvidia.com/gpu": 8000, "pods": 2000}
    assert result.nodes["a"].requested == {"nvidia.com/gpu": 1000, "pods": 1000}
    assert b.requested == {"nvidia.com/gpu": 7000, "pods": 1000}
    assert a.requested == {}


def test_topology_pulls_the_second_pod_next_to_the_first() -> None:
    nodes = [gpu_node("a-r2", block="b1", rack="r2"), gpu_node("b-r1", block="b1", rack="r1"),
             gpu_node("c-r1", block="b1", rack="r1"), gpu_node("z-r2", block="b1", rack="r2")]
    pods = [pod("nvidia.com/gpu=8")] * 2
    with_topology = WeightedScorer(((BINPACK, 1), (TopologyScorer(Topology(RACKS)), 2)))
    assert place_gang(pods, nodes, BINPACK).assignments == ("a-r2", "b-r1")  # type: ignore[union-attr]
    assert place_gang(pods, nodes, with_topology).assignments == ("a-r2", "z-r2")  # type: ignore[union-attr]


def test_topology_outweighs_binpack_toward_earlier_peers() -> None:
    # binpack: r1-a 6/8 → 75, r2-x 8/8 → 100; topology: r1-a shares the rack
    # with the peer → 66, r2-x only the block → 33. Weights 1:2 →
    # r1-a (75 + 132) // 3 = 69 beats r2-x (100 + 66) // 3 = 55.
    nodes = [gpu_node("r1-a", 4, block="b1", rack="r1"), gpu_node("r2-x", 6, block="b1", rack="r2")]
    peers = [gpu_node("r1-peer", 8, block="b1", rack="r1")]
    scorer = WeightedScorer(((BINPACK, 1), (TopologyScorer(Topology(RACKS)), 2)))
    alone = place_gang([pod("nvidia.com/gpu=2")], nodes, BINPACK, peers=peers)
    together = place_gang([pod("nvidia.com/gpu=2")], nodes, scorer, peers=peers)
    assert isinstance(alone, GangPlacement) and alone.assignments == ("r2-x",)
    assert isinstance(together, GangPlacement) and together.assignments == ("r1-a",)


def test_duplicate_node_names_are_refused() -> None:
    with pytest.raises(ModelError, match="unique"):
        place_gang([pod()], [gpu_node("a"), gpu_node("a")], BINPACK)
