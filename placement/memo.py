"""Equivalence memo: reuse per-node answers for pods that ask the same things.

A gang's pods share one template, so kube-scheduler asks the extender about
many pods with identical requirements, over nodes that mostly did not change
since the last call. Whether such a pod fits a node, and its resource score
there, depend only on the pod's requirements and the node — so the answer
computed for one pod holds for its equivalents until the node changes
(kube-scheduler once kept an "equivalence cache" on the same idea).

Nodes are immutable values here: any change (a pod bound, a label edited)
makes a new :class:`~placement.model.Node` object. The memo therefore keeps
the node object next to each answer and reuses the answer only while the
caller passes that very object (``is``), so it can never serve a stale
answer; a new object simply recomputes. Answers are grouped by the pod's
:func:`signature`, and only the most recently used signatures are kept.

Only answers that depend on (pod, node) alone may be memoised: fit, and the
resource scorers. The topology score also depends on where gang mates sit,
so :class:`MemoizedScorer` must not wrap a :class:`~placement.topology.TopologyScorer`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from placement.model import Node, PodRequirements
from placement.scoring import Scorer

T = TypeVar("T")


def signature(pod: PodRequirements) -> Hashable:
    """Everything about the pod that fit and resource scores read."""
    return (tuple(sorted(pod.requests.items())), tuple(sorted(pod.score_requests.items())),
            tuple(sorted(pod.node_selector.items())), pod.required_terms, pod.tolerations)


class NodeMemo(Generic[T]):
    """Per-node answers for equivalent pods; ``compute`` answers a batch."""

    def __init__(self, compute: Callable[[PodRequirements, Sequence[Node]], list[T]], *,
                 signatures: int = 32) -> None:
        self._compute = compute
        self._limit = signatures
        self._tables: OrderedDict[Hashable, dict[str, tuple[Node, T]]] = OrderedDict()

    def answers(self, pod: PodRequirements, nodes: Sequence[Node]) -> list[T]:
        key = signature(pod)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = {}
            if len(self._tables) > self._limit:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(key)
        out: list[T | None] = []
        missing: list[int] = []
        get = table.get
        for node in nodes:
            hit = get(node.name)
            if hit is not None and hit[0] is node:
                out.append(hit[1])
            else:
                missing.append(len(out))
                out.append(None)
        if missing:
            fresh = self._compute(pod, [nodes[i] for i in missing])
            for i, answer in zip(missing, fresh, strict=True):
                table[nodes[i].name] = (nodes[i], answer)
                out[i] = answer
        return out  # type: ignore[return-value]  # every None was filled above


class MemoizedScorer:
    """A (pod, node)-only scorer with its answers memoised; ignores peers."""

    def __init__(self, inner: Scorer, *, signatures: int = 32) -> None:
        self.inner = inner
        self._memo: NodeMemo[int] = NodeMemo(
            lambda pod, nodes: inner.score_nodes(pod, nodes), signatures=signatures)

    def score_nodes(
        self, pod: PodRequirements, nodes: Sequence[Node], peers: Sequence[Node] = ()
    ) -> list[int]:
        return self._memo.answers(pod, nodes)

