"""The controller feeds Nodes and Topologies to the engine and restores topology usage."""

from __future__ import annotations

import itertools
from typing import Any

from kuota.operator.controller import Controller
from kuota.operator.settings import Options
from quota import api
from quota.lifecycle import State
from quota.workload import Admission

API = "kuota.dev/v1alpha1"
RACK, HOST = "rack", "kubernetes.io/hostname"
_rv = itertools.count(100)


class Actions:
    def __init__(self) -> None:
        self.ungated: list[str] = []
        self.adopted: dict[str, Admission] = {}

    def adopt(self, key: str, admission: Admission) -> None:
        self.adopted[key] = admission

    def ungate(self, owner: str) -> None:
        self.ungated.append(owner)

    def create_workload(self, job_key: str) -> None: ...
    def sync_owner(self, job_key: str) -> None: ...
    def sync_group(self, group_key: str) -> None: ...
    def create_group_workload(self, group_key: str) -> None: ...
    def workload_problem(self, key: str, message: str) -> None: ...
    def pods_ready(self, key: str) -> None: ...


def meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resourceVersion": str(next(_rv)), **extra}
    if namespace:
        out["namespace"] = namespace
    return out


def node(name: str, rack: str, cpu: str = "4") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": meta(name, labels={RACK: rack, HOST: name, "pool": "tas"}),
            "status": {"allocatable": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def dc(*levels: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Topology", "metadata": meta("dc"),
            "spec": {"levels": [{"nodeLabel": level} for level in levels]}}


def queues() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("ns")}),
        ("Topology", dc(RACK, HOST)),
        ("ResourceFlavor", {"apiVersion": API, "kind": "ResourceFlavor", "metadata": meta("tas"),
                            "spec": {"topologyName": "dc",
                                     "nodeLabels": {"pool": "tas"}}}),
        ("ClusterQueue", {"apiVersion": API, "kind": "ClusterQueue", "metadata": meta("team"),
                          "spec": {"namespaceSelector": {}, "resourceGroups": [
                              {"coveredResources": ["cpu"], "flavors": [
                                  {"name": "tas", "resources": [
                                      {"name": "cpu", "nominalQuota": "100"}]}]}]}}),
        ("LocalQueue", {"apiVersion": API, "kind": "LocalQueue", "metadata": meta("main", "ns"),
                        "spec": {"clusterQueue": "team"}}),
        *(("Node", node(f"{rack}-n{i}", rack)) for rack in ("r1", "r2") for i in (1, 2)),
    ]


def workload(name: str, pods: int, *, on: list[tuple[tuple[str, ...], int]] | None = None
             ) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API, "kind": "Workload",
        "metadata": meta(name, "ns", creationTimestamp="2026-01-01T00:00:00Z"),
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": pods, "template": {
            "metadata": {"annotations": {"kuota.dev/podset-required-topology": RACK}},
            "spec": {"containers": [{"name": "c",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    if on is not None:
        assignment = api.TopologyAssignment.from_domains((RACK, HOST), on).to_dict()
        body["status"] = {
            "admission": {"clusterQueue": "team", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "tas"}, "count": pods,
                 "resourceUsage": {"cpu": str(pods)}, "topologyAssignment": assignment}]},
            "conditions": [{"type": "QuotaReserved", "status": "True"},
                           {"type": "Admitted", "status": "True"}]}
    return body


def leading(*objects: tuple[str, dict[str, Any]]) -> tuple[Controller, Actions]:
    controller = Controller(Options(), clock=lambda: 1000.0)
    for kind, body in objects:
        controller.observe(kind, body)
    actions = Actions()
    controller.rebuild(actions)
    return controller, actions


def racks(controller: Controller, key: str) -> set[str]:
    assert controller.engine is not None
    admission = controller.engine.records[key].admission
    assert admission is not None
    return {values[0] for values, _ in admission.pod_sets[0].topology}


class TestNodesAndTopologies:
    def test_a_malformed_node_keeps_what_was_known(self) -> None:
        controller, _ = leading(*queues())
        assert controller.engine is not None
        nodes = controller.engine.topology.nodes
        assert nodes["r1-n1"].allocatable["cpu"] == 4000
        bad = node("r1-n1", "r1")
        bad["status"]["allocatable"]["cpu"] = "lots"
        controller.observe("Node", bad)  # must not raise
        assert nodes["r1-n1"].allocatable["cpu"] == 4000
        assert "allocatable.cpu" in controller.problems["Node/r1-n1"]
        controller.observe("Node", node("r1-n1", "r1", cpu="8"))
        assert nodes["r1-n1"].allocatable["cpu"] == 8000
        assert "Node/r1-n1" not in controller.problems
        controller.observe("Node", node("r1-n1", "r1"), deleted=True)
        assert "r1-n1" not in nodes

    def test_a_heartbeat_wakes_nothing(self) -> None:
        controller, _ = leading(*queues())
        woken: list[int] = []
        controller.on_change = lambda: woken.append(1)
        beat = node("r1-n1", "r1")
        beat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:01:00Z"
        controller.observe("Node", beat)
        assert woken == []
        controller.observe("Node", node("r1-n1", "r2"))  # moved: admission must look again
        assert woken == [1]

    def test_a_malformed_topology_keeps_the_previous_levels(self) -> None:
        controller, _ = leading(*queues())
        assert controller.engine is not None
        controller.observe("Topology", dc(HOST, RACK))  # hostname must be last
        assert controller.engine.topology.topologies["dc"].levels == (RACK, HOST)
        assert "nodeLabel" in controller.problems["Topology/dc"]
        controller.observe("Topology", dc(RACK))
        assert controller.engine.topology.topologies["dc"].levels == (RACK,)
        controller.observe("Topology", dc(RACK), deleted=True)
        assert "dc" not in controller.engine.topology.topologies


class TestRestore:
    def test_restored_hosts_count_before_any_cycle(self) -> None:
        held = workload("held", 7, on=[(("r1", "r1-n1"), 4), (("r1", "r1-n2"), 3)])
        controller, actions = leading(*queues(), ("Workload", workload("new", 2)),
                                      ("Workload", held))
        engine = controller.engine
        assert engine is not None
        assert engine.records["ns/held"].state is State.ADMITTED
        assert dict(actions.adopted["ns/held"].pod_sets[0].nodes) == {"r1-n1": 4, "r1-n2": 3}
        assert engine.topology.used["r1-n2"]["cpu"] == 3000
        engine.run_until_idle(1000)
        # r1 has 1 CPU left: best fit would have taken r1 had the usage been forgotten.
        assert racks(controller, "ns/new") == {"r2"}


class TestPods:
    def test_a_gated_pod_of_a_job_asks_for_its_owner_to_be_ungated(self) -> None:
        controller, actions = leading(*queues())
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": meta("train-0", "ns", labels={"kuota.dev/tas": "true"},
                                ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job",
                                                  "name": "train"}]),
               "spec": {"schedulingGates": [{"name": "kuota.dev/topology"}]}}
        controller.observe("Pod", pod)
        assert actions.ungated == ["job:ns/train"]
        assert controller.owners.topology_pods["job:ns/train"] == {"ns/train-0"}
        controller.observe("Pod", dict(pod, metadata=meta("train-0", "ns",
                                                            labels={"kuota.dev/tas": "true"}),
                                       spec={}))
        assert actions.ungated == ["job:ns/train"]  # nothing gated any more: nothing asked
