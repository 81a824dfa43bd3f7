"""Node scores with kube-scheduler's exact integer formulas, 0-100.

kube-scheduler's ``NodeResourcesFit`` plugin scores a node for a pod from, per
configured resource *r* with weight *w*:

* ``allocatable`` — the node's allocatable amount of *r*;
* ``requested`` — what pods already on the node request **plus this pod**
  (CPU and memory with the non-zero defaults, see :mod:`placement.model`).

A resource is left out of the score when the node has none of it
(allocatable 0), and an extended resource (``nvidia.com/gpu``) is left out when
the pod does not request it — so a CPU-only pod is not pulled toward GPU nodes.
Then, with Go's integer arithmetic:

``MostAllocated`` (binpack)
    per resource ``min(requested, allocatable) * 100 // allocatable``; node score
    ``sum(score_r * w_r) // sum(w_r)``. Fuller nodes score higher.
``LeastAllocated`` (spread, kube-scheduler's default)
    per resource ``(allocatable - requested) * 100 // allocatable`` (0 when
    over-requested); same weighted mean. Emptier nodes score higher.
``RequestedToCapacityRatio``
    per resource the utilisation ``requested * 100 // allocatable`` (100 when
    over-requested) goes through a piecewise-linear *shape*: points
    ``(utilization 0..100, score 0..10)``, scores scaled by 10 to 0..100,
    constant before the first point and after the last, linear in between
    with Go's truncating division. Resources scoring 0 are left out of the
    mean, which is rounded half away from zero.

The default resources are ``cpu`` and ``memory`` with weight 1, as in
kube-scheduler. Weights must lie in 1..100.

Every scorer here implements :class:`Scorer`: ``score_nodes(pod, nodes,
peers)`` scores a batch (one list in, one list out, so per-call preparation is
paid once); ``peers`` are the nodes hosting the pod's gang mates, used by the
topology scorer and ignored by the resource scorers. :class:`WeightedScorer`
combines scorers by weighted mean, staying in 0..100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol

from placement.model import ModelError, Node, PodRequirements, is_scalar_resource

#: kube-scheduler's score range for a node.
MAX_NODE_SCORE: Final = 100
#: The score range of a RequestedToCapacityRatio shape point.
MAX_CUSTOM_PRIORITY_SCORE: Final = 10
MAX_UTILIZATION: Final = 100
#: kube-scheduler's score range for an extender's answer (MaxExtenderPriority).
MAX_EXTENDER_PRIORITY: Final = 10
MAX_RESOURCE_WEIGHT: Final = 100


class Scorer(Protocol):
    def score_nodes(
        self, pod: PodRequirements, nodes: Sequence[Node], peers: Sequence[Node] = ()
    ) -> list[int]:
        """One score in 0..100 per node, in order."""
        ...


class Strategy(StrEnum):
    MOST_ALLOCATED = "MostAllocated"
    LEAST_ALLOCATED = "LeastAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("scoring resource: name must not be empty")
        if not 1 <= self.weight <= MAX_RESOURCE_WEIGHT:
            raise ModelError(f"scoring resource {self.name}: weight {self.weight} "
                             f"is not in 1..{MAX_RESOURCE_WEIGHT}")


DEFAULT_RESOURCES: Final = (ResourceSpec("cpu"), ResourceSpec("memory"))


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """``utilization`` in 0..100 maps to ``score`` in 0..10."""

    utilization: int
    score: int

    def __post_init__(self) -> None:
        if not 0 <= self.utilization <= MAX_UTILIZATION:
            raise ModelError(f"shape point: utilization {self.utilization} is not in 0..100")
        if not 0 <= self.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ModelError(f"shape point: score {self.score} is not in 0..10")


#: A shape that rewards full nodes: 0% → 0, 100% → 10.
BINPACK_SHAPE: Final = (ShapePoint(0, 0), ShapePoint(100, 10))


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on int64."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def most_requested_score(requested: int, allocatable: int) -> int:
    if allocatable == 0:
        return 0
    return min(requested, allocatable) * MAX_NODE_SCORE // allocatable


def least_requested_score(requested: int, allocatable: int) -> int:
    if allocatable == 0 or requested > allocatable:
        return 0
    return (allocatable - requested) * MAX_NODE_SCORE // allocatable


def broken_linear(shape: Sequence[ShapePoint], utilization: int) -> int:
    """The shape's value at ``utilization``, already scaled to 0..100."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    for i, point in enumerate(shape):
        if utilization <= point.utilization:
            if i == 0:
                return point.score * scale
            prev = shape[i - 1]
            rise = (point.score - prev.score) * scale * (utilization - prev.utilization)
            return prev.score * scale + _go_div(rise, point.utilization - prev.utilization)
    return shape[-1].score * scale


def ratio_utilization(requested: int, allocatable: int) -> int:
    if requested > allocatable:
        return MAX_UTILIZATION
    return requested * MAX_UTILIZATION // allocatable


@dataclass(frozen=True, slots=True)
class ResourceAllocationScorer:
    """kube-scheduler's ``NodeResourcesFit`` scoring strategies."""

    strategy: Strategy = Strategy.MOST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] = ()

    def __post_init__(self) -> None:
        if not self.resources:
            raise ModelError(f"{self.strategy} scorer: resources must not be empty")
        names = [r.name for r in self.resources]
        if len(set(names)) != len(names):
            raise ModelError(f"{self.strategy} scorer: resources are listed twice: {names}")
        if self.strategy is Strategy.REQUESTED_TO_CAPACITY_RATIO:
            if not self.shape:
                raise ModelError("RequestedToCapacityRatio scorer: shape must not be empty")
            for a, b in zip(self.shape, self.shape[1:], strict=False):
                if b.utilization <= a.utilization:
                    raise ModelError("RequestedToCapacityRatio scorer: shape utilizations "
                                     "must strictly increase")
        elif self.shape:
            raise ModelError(f"{self.strategy} scorer: shape applies only to "
                             "RequestedToCapacityRatio")

    def score(self, node: Node, pod: PodRequirements) -> int:
        return self.score_nodes(pod, [node])[0]

    def _terms(self, pod: PodRequirements) -> list[tuple[str, int, int]]:
        """(resource, weight, pod request) for every resource this pod is scored on."""
        wanted = pod.score_requests
        terms = []
        for spec in self.resources:
            request = wanted.get(spec.name, 0)
            if request == 0 and is_scalar_resource(spec.name):
                continue
            terms.append((spec.name, spec.weight, request))
        return terms

    def score_nodes(
        self, pod: PodRequirements, nodes: Sequence[Node], peers: Sequence[Node] = ()
    ) -> list[int]:
        # One tight loop per batch: the extender scores thousands of nodes per
        # call, so the per-pod work (which resources count) is done once.
        terms = self._terms(pod)
        strategy, shape = self.strategy, self.shape
        most = strategy is Strategy.MOST_ALLOCATED
        least = strategy is Strategy.LEAST_ALLOCATED
        scores = []
        for node in nodes:
            allocatable = node.allocatable
            used = node.requested if node.nonzero_requested is None else node.nonzero_requested
            total = weights = 0
            for name, weight, request in terms:
                alloc = allocatable.get(name, 0)
                if alloc == 0:
                    continue
                requested = used.get(name, 0) + request
                if most:
                    part = (requested if requested < alloc else alloc) * MAX_NODE_SCORE // alloc
                elif least:
                    part = (0 if requested > alloc
                            else (alloc - requested) * MAX_NODE_SCORE // alloc)
                else:
                    part = broken_linear(shape, ratio_utilization(requested, alloc))
                    if part <= 0:
                        continue
                total += part * weight
                weights += weight
            if weights == 0:
                scores.append(0)
            elif most or least:
                scores.append(total // weights)
            else:
                scores.append((2 * total + weights) // (2 * weights))  # Go's math.Round
        return scores


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    """The weighted mean of several scorers, 0..100, floored."""

    parts: tuple[tuple[Scorer, int], ...]

    def __post_init__(self) -> None:
        if not self.parts:
            raise ModelError("weighted scorer: needs at least one part")
        for _, weight in self.parts:
            if weight < 0:
                raise ModelError(f"weighted scorer: weight {weight} must not be negative")
        if sum(w for _, w in self.parts) == 0:
            raise ModelError("weighted scorer: weights must not all be zero")

    def score_nodes(
        self, pod: PodRequirements, nodes: Sequence[Node], peers: Sequence[Node] = ()
    ) -> list[int]:
        totals = [0] * len(nodes)
        weights = 0
        for scorer, weight in self.parts:
            if weight == 0:
                continue
            weights += weight
            part = scorer.score_nodes(pod, nodes, peers)
            totals = [t + s * weight for t, s in zip(totals, part, strict=True)]
        return [t // weights for t in totals]


def to_extender_priority(score: int) -> int:
    """0..100 → kube-scheduler's extender range 0..10 (MaxExtenderPriority), floored."""
    return score * MAX_EXTENDER_PRIORITY // MAX_NODE_SCORE
