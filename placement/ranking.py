"""A pool's nodes kept ranked for each kind of pod, so that a gang costs what changed.

:func:`placement.gang.place_gang` checks and scores every node of the pool for every
pod. That suits the extender, which kube-scheduler asks about a list of nodes once per
pod. A Redis leader places up to a thousand gangs a round on the same pool, and between
two gangs only the nodes the first one took have changed: with a few hundred nodes the
scan was most of the leader's time (``benchmarks/leader_step.py --nodes``).

A :class:`NodeRanking` holds the pool's nodes (immutable values, so a change is a new
object) and, for every kind of pod it was asked about (:func:`placement.memo.signature`:
everything fit and a resource score read), a heap of the nodes that kind fits, best
first in place_gang's order: the highest score, then the name that sorts first.
Entries are never changed in place:

* a node that changes goes on a log of changes; a heap catches up with the log when it
  is next asked, ranking each changed node again (a new entry);
* an entry whose node is no longer the pool's value under its name is stale, and is
  dropped when it comes to the top.

So every node a kind fits has a valid entry with its current score, and the first valid
entry is the node place_gang would choose. A heap behind by more changes than the pool
has nodes is dropped and built again when next asked, and one grown past a few entries
per node is rebuilt from its valid entries: a placement never costs more than
place_gang's scan.

Only a scorer whose answer depends on the pod and the node alone may rank (the resource
scorers). A topology scorer also looks at where gang mates sit, and may not; the same
rule as :mod:`placement.memo`.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from placement.fit import check_fit
from placement.gang import GangPlacement
from placement.memo import signature
from placement.model import ModelError, Node, PodRequirements
from placement.scoring import Scorer

#: (minus the score, node name, insertion count, node): a min-heap gives place_gang's
#: choice first; the count keeps two entries of one name from comparing their nodes.
_Entry = tuple[int, str, int, Node]


@dataclass(slots=True)
class _Heap:
    """The nodes one kind of pod fits, best first (stale entries included)."""

    pod: PodRequirements
    entries: list[_Entry]
    #: Position in the log of changes up to which these entries are current.
    seen: int


class NodeRanking:
    """One pool's nodes, ranked per kind of pod for a (pod, node)-only ``scorer``."""

    def __init__(self, scorer: Scorer, nodes: Iterable[Node] = (), *, kinds: int = 16) -> None:
        self._scorer = scorer
        self._kinds = kinds
        self._nodes: dict[str, Node] = {}
        self._heaps: OrderedDict[Hashable, _Heap] = OrderedDict()
        #: Names of changed nodes; ``_log[0]`` is change number ``_base``.
        self._log: list[str] = []
        self._base = 0
        self._count = itertools.count()
        self.sync(nodes)

    @property
    def nodes(self) -> Mapping[str, Node]:
        """The pool's nodes now, by name."""
        return self._nodes

    def sync(self, nodes: Iterable[Node]) -> None:
        """Make ``nodes`` the pool. A node is taken as changed unless it is the very object
        held: the caller's values are immutable, so that costs no comparison."""
        fresh: dict[str, Node] = {}
        for node in nodes:
            if node.name in fresh:
                raise ModelError(f"node ranking: node {node.name} is listed twice")
            fresh[node.name] = node
        held = self._nodes
        changed = [name for name, node in fresh.items() if held.get(name) is not node]
        self._nodes = fresh  # (a node left out goes stale in every heap)
        self._changed(changed)

    def update(self, nodes: Iterable[Node]) -> None:
        """The pool holds these values now (nodes a placement added pods to)."""
        changed = []
        for node in nodes:
            if self._nodes.get(node.name) is not node:
                self._nodes[node.name] = node
                changed.append(node.name)
        self._changed(changed)

    def best(self, pod: PodRequirements) -> Node | None:
        """The node place_gang would give ``pod`` alone, or None when it fits none."""
        entries, nodes = self._heap(pod).entries, self._nodes
        while entries:
            node = entries[0][3]
            if nodes.get(node.name) is node:
                return node
            heapq.heappop(entries)
        return None

    def place_gang(self, pods: Sequence[PodRequirements]) -> GangPlacement | None:
        """What :func:`placement.gang.place_gang` answers for ``pods`` on this pool, or None
        when the gang does not fit (place_gang's scan tells why). The pool is left as it
        was: the caller :meth:`update` s it with the placement it keeps."""
        taken: dict[str, Node] = {}  # node -> its value before this gang
        after: dict[str, Node] = {}
        assignments: list[str] = []
        try:
            for index, pod in enumerate(pods):
                node = self.best(pod)
                if node is None:
                    return None
                taken.setdefault(node.name, node)
                after[node.name] = node = node.with_pod(pod)
                if index + 1 < len(pods):  # (the gang's later pods see it)
                    self.update((node,))
                assignments.append(node.name)
            return GangPlacement(tuple(assignments), {n: after[n] for n in sorted(after)})
        finally:
            self.update(taken.values())

    def _changed(self, names: list[str]) -> None:
        if not names:
            return
        self._log += names
        end = self._base + len(self._log)
        behind = len(self._nodes) + 64
        for kind in [k for k, heap in self._heaps.items() if end - heap.seen > behind]:
            del self._heaps[kind]  # built again when asked: cheaper than catching up
        first = min((heap.seen for heap in self._heaps.values()), default=end)
        del self._log[:first - self._base]
        self._base = first

    def _heap(self, pod: PodRequirements) -> _Heap:
        kind = signature(pod)
        end = self._base + len(self._log)
        heap = self._heaps.get(kind)
        if heap is None:
            heap = self._heaps[kind] = _Heap(pod, self._ranked(pod, self._nodes.values()), end)
            heapq.heapify(heap.entries)
            if len(self._heaps) > self._kinds:
                self._heaps.popitem(last=False)
            return heap
        self._heaps.move_to_end(kind)
        if heap.seen < end:
            names = dict.fromkeys(self._log[heap.seen - self._base:])
            heap.seen = end
            for entry in self._ranked(heap.pod, [self._nodes[n] for n in names
                                                 if n in self._nodes]):
                heapq.heappush(heap.entries, entry)
            if len(heap.entries) > 4 * len(self._nodes) + 64:
                nodes = self._nodes
                heap.entries = [e for e in heap.entries if nodes.get(e[1]) is e[3]]
                heapq.heapify(heap.entries)
        return heap

    def _ranked(self, pod: PodRequirements, nodes: Iterable[Node]) -> list[_Entry]:
        fitting = [node for node in nodes if check_fit(node, pod).fits]
        scores = self._scorer.score_nodes(pod, fitting)
        count = self._count
        return [(-score, node.name, next(count), node)
                for score, node in zip(scores, fitting, strict=True)]
