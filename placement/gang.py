"""Gang placement: every pod of a gang gets a node, or none does.

kube-scheduler places pods one at a time, so half a gang can start and hold
GPUs while it waits forever for the other half (the partial-start deadlock).
:func:`place_gang` works on a private copy of the nodes and commits nothing:
it walks the pods in order, and for each

1. keeps the nodes the pod fits (:func:`placement.fit.check_fit`), counting
   the pods already placed in this call;
2. scores them with the given scorer, passing the nodes that host the gang
   mates placed so far as ``peers`` (so a topology scorer pulls the gang
   together);
3. takes the highest score; ties go to the node whose name sorts first, so the
   same input always gives the same answer.

If some pod fits nowhere the whole gang is refused with kube-scheduler-style
reasons and nothing is returned for the others. The walk is greedy (like
kube-scheduler itself): it may refuse a gang that a cleverer search could
squeeze in, never the reverse.

Values in, values out: the caller applies :attr:`GangPlacement.nodes` (the
nodes with the gang's requests added) to its own state when it commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from placement.fit import check_fit, summarize
from placement.model import ModelError, Node, PodRequirements
from placement.scoring import Scorer


@dataclass(frozen=True, slots=True)
class GangPlacement:
    """``assignments[i]`` is the node of ``pods[i]``."""

    assignments: tuple[str, ...]
    #: Every node touched, with the gang's pods added, by name.
    nodes: dict[str, Node]


@dataclass(frozen=True, slots=True)
class GangUnplaceable:
    """The gang does not fit; ``pod_index`` is the first pod that found no node."""

    pod_index: int
    reason: str


def place_gang(
    pods: Sequence[PodRequirements],
    nodes: Sequence[Node],
    scorer: Scorer,
    *,
    peers: Sequence[Node] = (),
    ignored_resources: frozenset[str] = frozenset(),
) -> GangPlacement | GangUnplaceable:
    """Place all ``pods`` on ``nodes`` or none; ``peers`` are nodes already
    hosting members of the same gang (placed in earlier calls)."""
    names = [node.name for node in nodes]
    if len(set(names)) != len(names):
        raise ModelError("place_gang: node names must be unique")
    current: dict[str, Node] = {node.name: node for node in nodes}
    order = sorted(current)  # the deterministic tie-break
    placed_peers: list[Node] = list(peers)
    assignments: list[str] = []
    touched: set[str] = set()
    for index, pod in enumerate(pods):
        candidates: list[Node] = []
        failures = []
        for name in order:
            node = current[name]
            result = check_fit(node, pod, ignored_resources=ignored_resources)
            if result.fits:
                candidates.append(node)
            else:
                failures.append(result)
        if not candidates:
            who = pod.name or f"pod {index}"
            return GangUnplaceable(index, f"{who}: {summarize(failures, len(order))}")
        scores = scorer.score_nodes(pod, candidates, placed_peers)
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        chosen = candidates[best].with_pod(pod)
        current[chosen.name] = chosen
        touched.add(chosen.name)
        placed_peers.append(chosen)
        assignments.append(chosen.name)
    return GangPlacement(tuple(assignments), {name: current[name] for name in sorted(touched)})
