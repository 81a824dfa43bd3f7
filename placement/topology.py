"""Topology: ordered node-label levels, domains, and the topology scorer.

A :class:`Topology` lists node-label keys from the widest level to the
narrowest, e.g. ``block > rack > hostname``::

    Topology(("cloud.provider.com/topology-block",
              "cloud.provider.com/topology-rack",
              "kubernetes.io/hostname"))

A *domain* at level *i* is the tuple of a node's label values for levels
``0..i``. Keeping the whole prefix matters: rack ``r1`` of block ``b1`` and
rack ``r1`` of block ``b2`` are different racks. A node that lacks a level's
label has no domain at that level (nor below it).

Pods of one gang talk to each other (all-reduce), and the closer they sit the
faster they train: same node (NVLink) beats same rack (one top-of-rack switch)
beats same block. :class:`TopologyScorer` scores a candidate node by the
deepest level at which it shares a domain with any already-placed gang mate
("peer"): ``100 * shared_levels // len(levels)``. Sharing the hostname
scores 100, sharing only the block scores 33 in a three-level topology, and a
node sharing nothing — or any node while no peer is placed yet — scores 0, so
the first pod of a gang is placed by the other scorers alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from placement.model import ModelError, Node, PodRequirements
from placement.scoring import MAX_NODE_SCORE

if TYPE_CHECKING:
    from quota.api.topology import Topology as ApiTopology

#: A domain: label values from the widest level down to some level.
Domain = tuple[str, ...]


class TopologyError(ModelError):
    """A topology or a level name that cannot be used."""


@dataclass(frozen=True, slots=True)
class Topology:
    levels: tuple[str, ...]
    name: str = ""

    def __post_init__(self) -> None:
        what = f"topology {self.name!r}" if self.name else "topology"
        if not self.levels:
            raise TopologyError(f"{what}: levels must not be empty")
        if any(not level for level in self.levels):
            raise TopologyError(f"{what}: a level's node label must not be empty")
        if len(set(self.levels)) != len(self.levels):
            raise TopologyError(f"{what}: levels repeat a node label: {list(self.levels)}")

    def index(self, level: str) -> int:
        """Position of ``level`` (a node-label key), 0 = widest."""
        try:
            return self.levels.index(level)
        except ValueError:
            raise TopologyError(
                f"topology {self.name or '?'}: {level!r} is not one of its levels "
                f"{list(self.levels)}") from None

    def domain(self, labels: Mapping[str, str], depth: int) -> Domain | None:
        """The node's domain at level index ``depth``; None if a label is missing."""
        values = []
        for level in self.levels[: depth + 1]:
            value = labels.get(level)
            if value is None:
                return None
            values.append(value)
        return tuple(values)

    def path(self, labels: Mapping[str, str]) -> Domain:
        """The node's label values from the widest level down, stopping at the
        first missing label (so its length is how deep the node is located)."""
        values = []
        for level in self.levels:
            value = labels.get(level)
            if value is None:
                break
            values.append(value)
        return tuple(values)


def shared_depth(a: Domain, b: Domain) -> int:
    """How many levels, from the widest, two paths share."""
    depth = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        depth += 1
    return depth


def from_object(obj: ApiTopology) -> Topology:
    """The topology a ``Topology`` API object describes (levels widest first)."""
    return Topology(obj.spec.node_labels, obj.metadata.name)


@dataclass(frozen=True, slots=True)
class TopologyScorer:
    """Prefers nodes sharing the narrowest domain with the gang's placed pods."""

    topology: Topology

    def score_nodes(
        self, pod: PodRequirements, nodes: Sequence[Node], peers: Sequence[Node] = ()
    ) -> list[int]:
        if not peers:
            return [0] * len(nodes)
        levels = self.topology.levels
        # One set of peer domains per depth: a candidate's check is then a few
        # set look-ups, however many peers the gang has.
        peer_domains: list[set[Domain]] = [set() for _ in levels]
        for peer in peers:
            path = self.topology.path(peer.labels)
            for depth in range(len(path)):
                peer_domains[depth].add(path[: depth + 1])
        scores = []
        count = len(levels)
        for node in nodes:
            labels = node.labels
            prefix: Domain = ()
            shared = 0
            for depth, level in enumerate(levels):
                value = labels.get(level)
                if value is None:
                    break
                prefix = (*prefix, value)
                if prefix not in peer_domains[depth]:
                    break  # domains nest: nothing narrower can be shared either
                shared = depth + 1
            scores.append(shared * MAX_NODE_SCORE // count)
        return scores
