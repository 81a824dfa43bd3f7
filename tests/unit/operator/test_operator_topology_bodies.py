"""Nodes and Topologies read from the API; topology assignments written and read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kuota.operator import topology
from placement.model import Node
from placement.topology import Topology
from quota import api
from quota.workload import PodSetAdmission

RACK, HOST = "rack", "kubernetes.io/hostname"
DC = Topology((RACK, HOST), "dc")


def node_body(name: str = "n1", **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": name, "labels": {RACK: "r1", HOST: name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}
    for path, value in changes.items():
        section, key = path.split("__")
        body[section][key] = value
    return body


@dataclass
class NodeCase:
    name: str
    body: dict[str, Any]
    want_unschedulable: bool = False
    want_error: str | None = None
    want_cpu: int = 4000


NODE_CASES = [
    NodeCase("ready", node_body()),
    NodeCase("cordoned", node_body(spec__unschedulable=True), want_unschedulable=True),
    NodeCase("not ready", node_body(status__conditions=[{"type": "Ready", "status": "False"}]),
             want_unschedulable=True),
    NodeCase("ready unknown", node_body(status__conditions=[{"type": "Ready",
                                                             "status": "Unknown"}]),
             want_unschedulable=True),
    NodeCase("no Ready condition counts as ready", node_body(status__conditions=[])),
    NodeCase("bad allocatable", node_body(status__allocatable={"cpu": "four"}),
             want_error=r"node n1: status\.allocatable\.cpu"),
    NodeCase("bad taint", node_body(spec__taints=[{"key": "k", "effect": "Sometimes"}]),
             want_error=r"spec\.taints\[0\]\.effect"),
    NodeCase("bad conditions", node_body(status__conditions="Ready"),
             want_error="status.conditions"),
    NodeCase("no name", {"metadata": {}}, want_error="metadata.name"),
]


@pytest.mark.parametrize("case", NODE_CASES, ids=[c.name for c in NODE_CASES])
def test_node_from_body(case: NodeCase) -> None:
    if case.want_error is not None:
        with pytest.raises(topology.NodeError, match=case.want_error):
            topology.node_from_body(case.body)
        return
    node = topology.node_from_body(case.body)
    assert node.unschedulable is case.want_unschedulable
    assert node.allocatable["cpu"] == case.want_cpu
    assert node.labels[RACK] == "r1"


def test_topology_from_body() -> None:
    body = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Topology",
            "metadata": {"name": "dc"},
            "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}}
    assert topology.topology_from_body(body) == DC
    body["spec"]["levels"].reverse()  # the hostname may only be the last level
    with pytest.raises(api.ObjectError, match=r"levels\[0\]\.nodeLabel"):
        topology.topology_from_body(body)


def nodes(*spec: tuple[str, str]) -> dict[str, Node]:
    return {name: Node(name, {"cpu": 4000}, labels={RACK: rack, HOST: name})
            for name, rack in spec}


PLACED = PodSetAdmission("main", 5, {"cpu": "tas"}, {"cpu": 5000},
                         topology_levels=(RACK,), topology=((("r1",), 5),),
                         nodes=(("n1", 4), ("n2", 1)))


@dataclass
class WriteCase:
    name: str
    pod_set: PodSetAdmission
    levels: tuple[str, ...] | None
    known: dict[str, Node] = field(default_factory=dict)
    want_levels: tuple[str, ...] | None = None
    want_domains: list[tuple[tuple[str, ...], int]] = field(default_factory=list)


WRITE_CASES = [
    WriteCase("every level, one domain per node", PLACED, DC.levels,
              nodes(("n1", "r1"), ("n2", "r1")),
              (RACK, HOST), [(("r1", "n1"), 4), (("r1", "n2"), 1)]),
    WriteCase("a node no longer known: the asked level only", PLACED, DC.levels,
              nodes(("n1", "r1")), (RACK,), [(("r1",), 5)]),
    WriteCase("topology unknown: the asked level only", PLACED, None,
              nodes(("n1", "r1"), ("n2", "r1")), (RACK,), [(("r1",), 5)]),
    WriteCase("lowest level above nodes: nodes add up per domain",
              PLACED, (RACK,), nodes(("n1", "r1"), ("n2", "r1")), (RACK,), [(("r1",), 5)]),
    WriteCase("not placed: no assignment",
              PodSetAdmission("main", 2, {"cpu": "tas"}, {"cpu": 2000}), DC.levels),
]


@pytest.mark.parametrize("case", WRITE_CASES, ids=[c.name for c in WRITE_CASES])
def test_assignment_for(case: WriteCase) -> None:
    got = topology.assignment_for(case.pod_set, case.levels, case.known)
    if case.want_levels is None:
        assert got is None
        return
    assert got is not None
    assert got.levels == case.want_levels
    assert list(got.domains()) == case.want_domains
    # What is written reads back the same (camelCase, Kueue's shape).
    again = api.TopologyAssignment.model_validate(got.to_dict())
    assert list(again.domains()) == case.want_domains


@dataclass
class ReadCase:
    name: str
    levels: tuple[str, ...]
    domains: list[tuple[tuple[str, ...], int]]
    known: dict[str, Node]
    topology: Topology | None = DC
    asked: str | None = RACK
    want_levels: tuple[str, ...] = (RACK,)
    want_domains: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    want_nodes: list[tuple[str, int]] = field(default_factory=list)


READ_CASES = [
    ReadCase("per node: nodes and the asked level", (RACK, HOST),
             [(("r1", "n1"), 4), (("r1", "n2"), 1)], nodes(("n1", "r1"), ("n2", "r1")),
             want_domains=[(("r1",), 5)], want_nodes=[("n1", 4), ("n2", 1)]),
    ReadCase("Kueue's hostname-only spelling: racks from the nodes' labels", (HOST,),
             [(("n1",), 2), (("n3",), 1)], nodes(("n1", "r1"), ("n3", "r2")),
             want_domains=[(("r1",), 2), (("r2",), 1)], want_nodes=[("n1", 2), ("n3", 1)]),
    ReadCase("a host not seen yet is counted by name", (RACK, HOST),
             [(("r1", "n9"), 3)], {}, want_domains=[(("r1",), 3)], want_nodes=[("n9", 3)]),
    ReadCase("a rack domain is spread evenly over its nodes", (RACK,),
             [(("r2",), 5)], nodes(("n1", "r1"), ("n3", "r2"), ("n4", "r2")),
             want_domains=[(("r2",), 5)], want_nodes=[("n3", 3), ("n4", 2)]),
    ReadCase("a rack without known nodes keeps its domain, takes no node", (RACK,),
             [(("r7",), 2)], nodes(("n1", "r1")),
             want_domains=[(("r7",), 2)], want_nodes=[]),
    ReadCase("topology unknown: the assignment's own levels", (RACK, HOST),
             [(("r1", "n1"), 1)], nodes(("n1", "r1")), topology=None,
             want_levels=(RACK, HOST), want_domains=[(("r1", "n1"), 1)],
             want_nodes=[("n1", 1)]),
]


@pytest.mark.parametrize("case", READ_CASES, ids=[c.name for c in READ_CASES])
def test_placement_from_assignment(case: ReadCase) -> None:
    stored = api.TopologyAssignment.from_domains(case.levels, case.domains)
    levels, domains, placed = topology.placement_from_assignment(
        stored, topology=case.topology, asked=case.asked, nodes=case.known)
    assert levels == case.want_levels
    assert domains == case.want_domains
    assert placed == case.want_nodes
