"""Topology between the cluster and the engine: Nodes and Topologies in, assignments out and back.

Pure translations (values in, values out) used by the controller and the writer:

* :func:`node_from_body` — a ``v1.Node`` as placement sees it: allocatable,
  labels, taints, and ``unschedulable`` when cordoned *or* not Ready (as
  Kueue's topology-aware scheduling counts only Ready, schedulable nodes). A
  node without a Ready condition at all counts as ready.
* :func:`topology_from_body` — a ``Topology`` object, checked with the API model.
* :func:`assignment_for` — the ``topologyAssignment`` written into a Workload's
  ``status.admission``: pods per domain of the *lowest* level of the flavor's
  topology (per node when that level is ``kubernetes.io/hostname``), every
  level's value spelled out, e.g. ``rack=r1, hostname=node-3``. Pods pinned to
  a node land exactly where the engine counted them. (Kueue keeps only the
  hostname level in that case; kuota keeps the upper levels too so a reader
  sees the rack without looking the node up. Both decode the same way.) If a
  node the engine placed pods on is no longer known, the engine's domains at
  the asked level are written instead: pods are then pinned to that domain only.
* :func:`placement_from_assignment` — the reverse, when a Workload that holds
  quota is restored: which nodes its pods take (so the engine counts their
  capacity as used again) and its domains at the asked level. A domain of a
  level above nodes is spread evenly over the known nodes inside it — the
  assignment does not say more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from placement.model import Node
from placement.objects import ObjectError, node_from_object
from placement.topology import Topology, from_object
from quota import api
from quota.api.topology import HOSTNAME_LABEL
from quota.config import FlavorConfig
from quota.workload import PodSetAdmission

Body = dict[str, Any]
#: One domain: label values, one per level, and its pod count.
Domains = list[tuple[tuple[str, ...], int]]


class NodeError(ObjectError):
    """A Node body that cannot be used (the message names the node and the field)."""


def node_from_body(body: Mapping[str, Any]) -> Node:
    """The placement :class:`Node` of a ``v1.Node`` body; raises :class:`NodeError`."""
    try:
        node = node_from_object(body)
    except ObjectError as exc:
        raise NodeError(str(exc)) from None
    conditions = (body.get("status") or {}).get("conditions") or []
    if not isinstance(conditions, list):
        raise NodeError(f"node {node.name}: status.conditions: expected a list")
    ready = next((c.get("status") for c in conditions
                  if isinstance(c, Mapping) and c.get("type") == "Ready"), "True")
    if ready != "True" and not node.unschedulable:
        node = Node(node.name, node.allocatable, node.requested, node.labels, node.taints,
                    unschedulable=True)
    return node


def topology_from_body(body: Body) -> Topology:
    """The placement :class:`Topology` of a ``Topology`` object; raises ``api.ObjectError``."""
    obj = api.parse_object(dict(body, kind="Topology"), source="")
    assert isinstance(obj, api.Topology)
    return from_object(obj)


def assignment_for(pod_set: PodSetAdmission, levels: tuple[str, ...] | None,
                   nodes: Mapping[str, Node]) -> api.TopologyAssignment | None:
    """The ``topologyAssignment`` of an admitted pod set; None if it was not placed.

    ``levels``: every level of the flavor's topology (None if it is unknown);
    ``nodes``: the nodes the engine knows, by name.
    """
    if not pod_set.topology_levels:
        return None
    if levels and pod_set.nodes:
        per_domain: dict[tuple[str, ...], int] = {}
        for name, count in pod_set.nodes:
            node = nodes.get(name)
            values = tuple((node.labels.get(level) if node is not None else None) or ""
                           for level in levels)
            if node is None or not all(values):
                break  # cannot spell this node's domain: fall back to the asked level
            per_domain[values] = per_domain.get(values, 0) + count
        else:
            return api.TopologyAssignment.from_domains(levels, sorted(per_domain.items()))
    return api.TopologyAssignment.from_domains(pod_set.topology_levels,
                                               sorted(pod_set.topology))


def topology_of(flavor_names: Iterable[str], flavors: Mapping[str, FlavorConfig],
                topologies: Mapping[str, Topology]) -> Topology | None:
    """The topology of the first of a pod set's flavors that names a known one."""
    for flavor in dict.fromkeys(flavor_names):
        config = flavors.get(flavor)
        name = config.topology_name if config is not None else None
        if name and name in topologies:
            return topologies[name]
    return None


def placement_from_assignment(
        assignment: api.TopologyAssignment, *, topology: Topology | None,
        asked: str | None, nodes: Mapping[str, Node],
) -> tuple[tuple[str, ...], Domains, list[tuple[str, int]]]:
    """(levels down to the asked one, pods per domain at that level, pods per node).

    ``topology``: the flavor's topology if known; ``asked``: the level the pod
    set asked for. Without them the assignment's own levels and domains are kept.
    """
    levels = tuple(assignment.levels)
    per_node: dict[str, int] = {}
    per_domain: dict[tuple[str, ...], int] = {}
    if topology is not None and asked in topology.levels:
        down = topology.levels[:topology.levels.index(asked) + 1]
    else:
        down = levels
    for values, count in assignment.domains():
        where = dict(zip(levels, values, strict=False))
        inside = _nodes_in(where, nodes)
        for name, share in _spread(inside, count):
            per_node[name] = per_node.get(name, 0) + share
            node = nodes.get(name)
            labels = {**(node.labels if node is not None else {}), **where}
            domain = tuple(labels.get(level, "") for level in down)
            per_domain[domain] = per_domain.get(domain, 0) + share
        if not inside:
            domain = tuple(where.get(level, "") for level in down)
            per_domain[domain] = per_domain.get(domain, 0) + count
    return down, sorted(per_domain.items()), sorted(per_node.items())


def _nodes_in(where: Mapping[str, str], nodes: Mapping[str, Node]) -> list[str]:
    """Names of the nodes inside a domain. A hostname domain no known node carries is
    taken as that node's name: it may not be seen yet, and counts once it is."""
    inside = sorted(name for name, node in nodes.items()
                    if all(node.labels.get(k) == v for k, v in where.items()))
    host = where.get(HOSTNAME_LABEL)
    return inside or ([host] if host else [])


def _spread(names: Iterable[str], count: int) -> list[tuple[str, int]]:
    """``count`` pods over ``names`` as evenly as possible (the first ones get the rest)."""
    names = list(names)
    if not names:
        return []
    share, rest = divmod(count, len(names))
    out = [(name, share + (1 if i < rest else 0)) for i, name in enumerate(names)]
    return [(name, n) for name, n in out if n]
