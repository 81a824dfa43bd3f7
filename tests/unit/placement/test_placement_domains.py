"""Topology-aware domain assignment: required and preferred levels, best fit."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from placement_builders import RACKS, gpu_node, node, pod, taint

from placement.domains import (
    DomainAssignment,
    DomainCount,
    DomainUnfit,
    NodeCount,
    assign_domains,
    node_capacity,
)
from placement.model import ModelError
from placement.topology import Topology

BLOCK, RACK, HOST = RACKS
TOPOLOGY = Topology(RACKS, name="gpus")

# Free GPUs: b1/r1: n1 8, n2 8 (16) · b1/r2: n3 4, n4 2 (6)
#            b2/r3: n5 8, n6 8, n7 8 (24) · b2/r4: n8 5 (5)
NODES = [
    gpu_node("n1", 0, block="b1", rack="r1"), gpu_node("n2", 0, block="b1", rack="r1"),
    gpu_node("n3", 4, block="b1", rack="r2"), gpu_node("n4", 6, block="b1", rack="r2"),
    gpu_node("n5", 0, block="b2", rack="r3"), gpu_node("n6", 0, block="b2", rack="r3"),
    gpu_node("n7", 0, block="b2", rack="r3"), gpu_node("n8", 3, block="b2", rack="r4"),
]


@dataclass
class DomainCase:
    name: str
    count: int
    level: str
    required: bool
    want_domains: dict[tuple[str, ...], int] | None = None
    want_nodes: dict[str, int] | None = None
    want_reason: str = ""


CASES = [
    DomainCase("required: the tightest rack that fits", 5, RACK, True,
               {("b2", "r4"): 5}, {"n8": 5}),
    DomainCase("required: best fit then fill largest node first", 6, RACK, True,
               {("b1", "r2"): 6}, {"n3": 4, "n4": 2}),
    DomainCase("required: rest goes to the tightest node that holds it", 10, RACK, True,
               {("b1", "r1"): 10}, {"n1": 8, "n2": 2}),
    DomainCase("required: no rack is big enough", 25, RACK, True,
               want_reason="25 pod(s) of nvidia.com/gpu=1 do not fit in one "
                           "cloud.provider.com/topology-rack domain: the roomiest, b2/r3, "
                           "fits 24"),
    DomainCase("required: one host, ties by name", 8, HOST, True,
               {("b1", "r1", "n1"): 8}, {"n1": 8}),
    DomainCase("required: one block, fewest racks inside", 20, BLOCK, True,
               {("b1",): 20}, {"n1": 8, "n2": 8, "n3": 4}),
    DomainCase("preferred: one rack when one fits", 20, RACK, False,
               {("b2", "r3"): 20}, {"n5": 8, "n6": 8, "n7": 4}),
    DomainCase("preferred: widen to the block, fewest racks", 26, RACK, False,
               {("b2", "r3"): 24, ("b2", "r4"): 2}, {"n5": 8, "n6": 8, "n7": 8, "n8": 2}),
    DomainCase("preferred: across blocks when no block fits", 40, RACK, False,
               {("b1", "r1"): 11, ("b2", "r3"): 24, ("b2", "r4"): 5},
               {"n1": 8, "n2": 3, "n5": 8, "n6": 8, "n7": 8, "n8": 5}),
    DomainCase("preferred: more than everything", 60, RACK, False,
               want_reason="60 pod(s) of nvidia.com/gpu=1 do not fit: all nodes of topology "
                           "gpus together fit 51"),
    DomainCase("nothing asked, nothing assigned", 0, RACK, True, {}, {}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_assign_domains(case: DomainCase) -> None:
    level = {"required": case.level} if case.required else {"preferred": case.level}
    result = assign_domains(NODES, TOPOLOGY, pod("nvidia.com/gpu=1"), case.count, **level)
    if case.want_reason:
        assert result == DomainUnfit(case.want_reason)
        return
    assert isinstance(result, DomainAssignment)
    assert result.levels == RACKS[: RACKS.index(case.level) + 1]
    assert {d.values: d.count for d in result.domains} == case.want_domains
    assert {n.node: n.count for n in result.nodes} == case.want_nodes
    assert result.count == case.count


def test_answer_is_sorted_and_respects_every_node() -> None:
    result = assign_domains(NODES, TOPOLOGY, {"nvidia.com/gpu": 2000}, 12, preferred=RACK)
    assert isinstance(result, DomainAssignment)
    assert result.domains == (DomainCount(("b2", "r3"), 12),)
    assert result.nodes == (NodeCount("n5", 4), NodeCount("n6", 4), NodeCount("n7", 4))
    free = {n.name: n.free("nvidia.com/gpu") // 2000 for n in NODES}
    assert all(c.count <= free[c.node] for c in result.nodes)


def test_nodes_that_cannot_take_the_pod_are_left_out() -> None:
    tainted = node("t1", "nvidia.com/gpu=8", labels={BLOCK: "b9", RACK: "r9", HOST: "t1"},
                   taints=(taint("maintenance"),))
    unlocated = node("u1", "nvidia.com/gpu=8", labels={BLOCK: "b9", HOST: "u1"})
    result = assign_domains([tainted, unlocated], TOPOLOGY, pod(), 1, required=RACK)
    assert result == DomainUnfit("1 pod(s) of nvidia.com/gpu=1 do not fit in one "
                                 "cloud.provider.com/topology-rack domain: no located node "
                                 "has room for one")


@pytest.mark.parametrize("allocatable, used, pods_used, requests, want_capacity", [
    ("cpu=10,nvidia.com/gpu=8", "", 0, "cpu=2,nvidia.com/gpu=1", 5),     # cpu: 10 // 2
    ("cpu=10,nvidia.com/gpu=8,pods=3", "", 1, "cpu=2,nvidia.com/gpu=1", 2),  # pod slots
    ("cpu=10,nvidia.com/gpu=8", "nvidia.com/gpu=9", 0, "nvidia.com/gpu=1", 0),  # overcommitted
    ("cpu=10", "", 0, "", 7),                                             # capped at the count
])
def test_node_capacity(allocatable: str, used: str, pods_used: int, requests: str,
                       want_capacity: int) -> None:
    n = node("n", allocatable, used, pods=pods_used)
    assert node_capacity(n, pod(requests), 7) == want_capacity


@pytest.mark.parametrize("kwargs, want_message", [
    ({"required": RACK, "preferred": RACK}, "exactly one of"),
    ({}, "exactly one of"),
    ({"required": "topology.kubernetes.io/zone"}, "is not one of its levels"),
])
def test_bad_calls_are_refused(kwargs: dict[str, str], want_message: str) -> None:
    with pytest.raises(ModelError, match=want_message):
        assign_domains(NODES, TOPOLOGY, pod(), 1, **kwargs)  # type: ignore[arg-type]
