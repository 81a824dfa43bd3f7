"""Topology-aware admission: a gang is admitted only where its pods sit close.

A ResourceFlavor with ``topologyName`` is *topology-aware*: its nodes are
known (nodes of a Redis pool, or nodes observed in a cluster), and a Topology
orders their labels from the widest level to the narrowest (block > rack >
hostname). A pod set may ask, through its pod template's annotations,

* ``kuota.dev/podset-required-topology: <level label>`` — all its pods
  inside one domain of that level, or not admitted at all;
* ``kuota.dev/podset-preferred-topology: <level label>`` — in as few domains
  as possible, starting from that level.

(The ``kueue.x-k8s.io/…`` spellings are accepted too; see
:func:`quota.convert.topology_request`.) Quota is checked
first; then :func:`placement.domains.assign_domains` picks the tightest
domain that holds the pods (best fit keeps roomy domains whole for larger
gangs) against the nodes' free capacity. The admission records pods per
domain and per node, so the operator can pin pods (scheduling gates plus a
nodeSelector per pod) and a pool can start them on those nodes.

:class:`TopologyState` tracks node capacity minus what admitted pod sets were
placed on; a cycle works on a :class:`TopologyView` that layers this cycle's
placements on top without copying the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from placement.domains import DomainAssignment, DomainUnfit, assign_domains
from placement.model import POD_SLOT, PODS, Node, PodRequirements
from placement.topology import Topology
from quota.config import FlavorConfig
from quota.resources import Amount
from quota.workload import Admission, PodSetAdmission, PodSetInfo


@dataclass(eq=False)
class TopologyState:
    """Known nodes and topologies, and what admitted pod sets take of each node."""

    topologies: dict[str, Topology] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    #: Node -> resources taken by admitted pod sets placed there.
    used: dict[str, dict[str, Amount]] = field(default_factory=dict)

    def set_topology(self, topology: Topology) -> None:
        self.topologies[topology.name] = topology

    def delete_topology(self, name: str) -> None:
        """Forget a topology: flavors naming it place nothing until it is back."""
        self.topologies.pop(name, None)

    def set_node(self, node: Node) -> None:
        self.nodes[node.name] = node

    def delete_node(self, name: str) -> None:
        self.nodes.pop(name, None)

    def assume(self, info_pod_sets: Iterable[PodSetInfo], admission: Admission) -> None:
        self._apply(info_pod_sets, admission, +1)

    def release(self, info_pod_sets: Iterable[PodSetInfo], admission: Admission) -> None:
        self._apply(info_pod_sets, admission, -1)

    def _apply(self, pod_sets: Iterable[PodSetInfo], admission: Admission, sign: int) -> None:
        requests = {ps.name: ps.requests for ps in pod_sets}
        for ps in admission.pod_sets:
            for node, count in ps.nodes:
                used = self.used.setdefault(node, {})
                for resource, amount in {**requests.get(ps.name, {}), PODS: POD_SLOT}.items():
                    used[resource] = used.get(resource, 0) + sign * amount * count

    def view(self) -> TopologyView:
        return TopologyView(self)


@dataclass(eq=False)
class TopologyView:
    """One cycle's view: the state plus this cycle's placements."""

    state: TopologyState
    extra: dict[str, dict[str, Amount]] = field(default_factory=dict)

    def place(self, pod_set: PodSetInfo, flavor: FlavorConfig,
              count: int) -> DomainAssignment | DomainUnfit | None:
        """Where ``count`` pods of ``pod_set`` go on ``flavor``'s nodes; None if the
        pod set asks for no topology or the flavor is not topology-aware."""
        if pod_set.topology is None or flavor.topology_name is None:
            return None
        topology = self.state.topologies.get(flavor.topology_name)
        if topology is None:
            return DomainUnfit(f"flavor {flavor.name} names Topology {flavor.topology_name}, "
                               "which does not exist")
        kind, level = pod_set.topology
        if level not in topology.levels:
            return DomainUnfit(f"pod set {pod_set.name} asks for topology level {level}, "
                               f"which Topology {topology.name} does not have "
                               f"(levels: {', '.join(topology.levels)})")
        # Taints were settled when the flavor was matched against the pods'
        # tolerations (plus the flavor's own, injected at admission).
        nodes = [self._free(node) for node in self.state.nodes.values()
                 if _selected(node, flavor)]
        pod = PodRequirements(requests=pod_set.requests, node_selector=pod_set.node_selector,
                              name=pod_set.name)
        if kind == "required":
            return assign_domains(nodes, topology, pod, count, required=level)
        return assign_domains(nodes, topology, pod, count, preferred=level)

    def take(self, pod_set: PodSetInfo, placed: PodSetAdmission) -> None:
        """Count a placement of this cycle so later decisions see it."""
        for node, count in placed.nodes:
            extra = self.extra.setdefault(node, {})
            for resource, amount in {**pod_set.requests, PODS: POD_SLOT}.items():
                extra[resource] = extra.get(resource, 0) + amount * count

    def _free(self, node: Node) -> Node:
        used = self.state.used.get(node.name, {})
        extra = self.extra.get(node.name, {})
        requested = dict(node.requested)
        for source in (used, extra):
            for resource, amount in source.items():
                requested[resource] = requested.get(resource, 0) + amount
        return Node(node.name, node.allocatable, requested, node.labels, (),
                    node.unschedulable)


def _selected(node: Node, flavor: FlavorConfig) -> bool:
    """A flavor's nodes are those carrying all of its nodeLabels."""
    return all(node.labels.get(k) == v for k, v in flavor.node_labels.items())


def annotate(admission: PodSetAdmission, placed: DomainAssignment) -> PodSetAdmission:
    """``admission`` with the domains and nodes chosen for its pods."""
    return replace(admission, topology_levels=placed.levels,
                   topology=tuple((d.values, d.count) for d in placed.domains),
                   nodes=tuple((n.node, n.count) for n in placed.nodes))
