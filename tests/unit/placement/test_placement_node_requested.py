"""Node.with_requested and add_amounts: pods counted elsewhere added to a node (pure)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from placement.model import PODS, Node, add_amounts


@dataclass
class Case:
    name: str
    node: Node
    amounts: dict[str, int]
    want_requested: dict[str, int]
    want_nonzero: dict[str, int] | None


CASES = [
    Case("adds to what is requested",
         Node("n", {"cpu": 4000}, {"cpu": 1000, PODS: 1000}), {"cpu": 500, "memory": 7},
         {"cpu": 1500, PODS: 1000, "memory": 7}, None),
    Case("keeps the non-zero defaults already counted",
         Node("n", {"cpu": 4000}, {"cpu": 0}, nonzero_requested={"cpu": 100}), {"cpu": 500},
         {"cpu": 500}, {"cpu": 600}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_with_requested(case: Case) -> None:
    got = case.node.with_requested(case.amounts)
    assert dict(got.requested) == case.want_requested
    assert got.nonzero_requested == case.want_nonzero
    assert (got.name, got.allocatable) == (case.node.name, case.node.allocatable)


def test_with_requested_nothing_is_the_same_node_and_the_input_is_unchanged() -> None:
    node = Node("n", {"cpu": 1}, {"cpu": 1})
    assert node.with_requested({}) is node
    node.with_requested({"cpu": 1})
    assert node.requested == {"cpu": 1}


def test_add_amounts_in_place() -> None:
    total = {"cpu": 1}
    add_amounts(total, {"cpu": 2, "gpu": 1})
    assert total == {"cpu": 3, "gpu": 1}
