"""The equivalence memo reuses answers only for the very same node object."""

from __future__ import annotations

from collections.abc import Sequence

from placement_builders import gpu_node, pod

from placement.memo import MemoizedScorer, NodeMemo, signature
from placement.model import Node, PodRequirements
from placement.scoring import ResourceAllocationScorer, ResourceSpec


class Counting:
    """A compute function that records which nodes it was asked about."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, pod: PodRequirements, nodes: Sequence[Node]) -> list[str]:
        self.asked.append([n.name for n in nodes])
        return [f"{n.name}:{n.requested.get('nvidia.com/gpu', 0)}" for n in nodes]


def test_answers_are_reused_until_the_node_changes() -> None:
    compute = Counting()
    memo: NodeMemo[str] = NodeMemo(compute)
    a, b = gpu_node("a"), gpu_node("b", 2)
    assert memo.answers(pod(name="p1"), [a, b]) == ["a:0", "b:2000"]
    assert memo.answers(pod(name="p2"), [b, a]) == ["b:2000", "a:0"]  # an equivalent pod
    a2 = a.with_pod(pod())
    assert memo.answers(pod(), [a2, b]) == ["a:1000", "b:2000"]
    assert compute.asked == [["a", "b"], ["a"]]


def test_equal_but_new_node_objects_are_recomputed() -> None:
    compute = Counting()
    memo: NodeMemo[str] = NodeMemo(compute)
    memo.answers(pod(), [gpu_node("a")])
    memo.answers(pod(), [gpu_node("a")])
    assert compute.asked == [["a"], ["a"]]


def test_different_requirements_do_not_share_answers() -> None:
    compute = Counting()
    memo: NodeMemo[str] = NodeMemo(compute)
    a = gpu_node("a")
    memo.answers(pod("nvidia.com/gpu=1"), [a])
    memo.answers(pod("nvidia.com/gpu=2"), [a])
    memo.answers(pod("nvidia.com/gpu=1", selector={"zone": "z1"}), [a])
    assert len(compute.asked) == 3
    assert signature(pod("nvidia.com/gpu=1", name="x")) == signature(pod("nvidia.com/gpu=1"))


def test_least_recently_used_signatures_are_dropped() -> None:
    compute = Counting()
    memo: NodeMemo[str] = NodeMemo(compute, signatures=2)
    a = gpu_node("a")
    one, two, three = pod("cpu=1"), pod("cpu=2"), pod("cpu=3")
    for p in (one, two, one, three):  # three evicts two, the least recently used
        memo.answers(p, [a])
    memo.answers(one, [a])
    memo.answers(two, [a])
    assert len(compute.asked) == 4  # one, two, three, and two again


def test_memoized_scorer_matches_its_inner_scorer() -> None:
    inner = ResourceAllocationScorer(resources=(ResourceSpec("nvidia.com/gpu"),))
    memo = MemoizedScorer(inner)
    nodes = [gpu_node("a", 4), gpu_node("b"), gpu_node("c", 7)]
    for _ in range(2):
        assert memo.score_nodes(pod(), nodes) == inner.score_nodes(pod(), nodes) == [62, 12, 100]
