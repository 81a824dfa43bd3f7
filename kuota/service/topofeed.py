"""Feeding topology-aware admission from the pools: Topologies and the nodes workers register.

Topology-aware admission (:mod:`admission.topology`) chooses domains and
nodes from what :attr:`Engine.topology` knows. In Redis mode that is:

* every **Topology** applied with ``kuota apply`` (the levels, widest first);
* every **Ready node** of every pool: the capacity and labels its worker
  registered, plus ``kubernetes.io/hostname: <node name>`` when the worker did
  not set it (so a Topology may end with the hostname level, as on
  Kubernetes). A node declared lost is taken out; one that registers again
  comes back. The leader calls :meth:`TopologyFeed.sync` after every read of
  the nodes (a node registered or was lost, and every node check).

What pods already hold on a node comes from two places that must not be
counted twice: the engine counts pod sets it placed itself (admissions with
``nodes``), so the node value fed to it carries only the requests of the
*other* live pods there (gangs without topology sharing the node).

Nothing is fed while no ResourceFlavor names a ``topologyName``: then the
engine's cycles skip the topology view entirely, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from admission.engine import Engine
from kuota.service.nodeview import NodeView
from placement.model import ModelError, Node
from placement.topology import from_object
from queueing.store import NodeRecord
from quota import api
from quota.api.topology import HOSTNAME_LABEL
from quota.lifecycle import HOLDS_QUOTA
from quota.resources import ResourceVector

log = logging.getLogger(__name__)


def node_value(record: NodeRecord, requested: ResourceVector) -> Node:
    """A Ready pool node as topology-aware admission sees it."""
    labels = {HOSTNAME_LABEL: record.name, **record.labels}
    return Node(record.name, dict(record.capacity), dict(requested), labels)


class TopologyFeed:
    def __init__(self, engine: Engine, topologies: Iterable[api.Topology]) -> None:
        self.engine = engine
        for obj in topologies:
            try:
                engine.topology.set_topology(from_object(obj))
            except ModelError as exc:  # checked by the API already; a store edited by hand
                log.warning("skipping Topology %s: %s", obj.metadata.name, exc)

    @property
    def active(self) -> bool:
        """Does any flavor ask for topology-aware admission?"""
        return any(f.topology_name for f in self.engine.cache.flavors.values())

    def sync(self, view: NodeView) -> None:
        """Make the engine's nodes the pools' Ready nodes (see the module docstring)."""
        if not self.active:
            return
        state = self.engine.topology
        other = view.usage_by_node(lambda key: not self._pinned(key))
        ready = {name: r for name, r in view.records.items() if r.ready}
        for name in [n for n in state.nodes if n not in ready]:
            state.delete_node(name)
        for name, record in ready.items():
            try:
                state.set_node(node_value(record, other.get(name, {})))
            except ModelError as exc:  # a registration written around the worker
                log.warning("node %s left out of topology-aware admission: %s", name, exc)
                state.delete_node(name)

    def _pinned(self, key: str) -> bool:
        """Does the engine count this workload's pods on their nodes itself?"""
        record = self.engine.records.get(key)
        return (record is not None and record.state in HOLDS_QUOTA
                and record.admission is not None
                and any(ps.nodes for ps in record.admission.pod_sets))


def lost_pins(engine: Engine, unplaced: Iterable[str],
              ready: Mapping[str, NodeRecord]) -> dict[str, list[str]]:
    """Admitted, unplaced workloads whose pinned nodes are not Ready -> those nodes.

    They can never be placed where admission put them: the caller evicts them
    (``NodeFailures``) so they are admitted again on the nodes that are left.
    """
    out: dict[str, list[str]] = {}
    for key in unplaced:
        record = engine.records.get(key)
        if record is None or record.admission is None or record.state not in HOLDS_QUOTA:
            continue
        gone = sorted({node for ps in record.admission.pod_sets for node, _ in ps.nodes
                       if not _ready(ready.get(node))})
        if gone:
            out[key] = gone
    return out


def _ready(record: NodeRecord | None) -> bool:
    return record is not None and record.ready

