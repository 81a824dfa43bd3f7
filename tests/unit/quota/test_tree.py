"""The quota tree: subtree quota, usage bubbling, available and potential available."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quota.resources import FlavorResource
from quota.tree import CellQuota, QuotaTree, available, borrowing_height, potential_available

FR = FlavorResource("default", "cpu")


def cell(nominal: int, borrowing: int | None = None, lending: int | None = None) -> dict:
    return {FR: CellQuota(nominal, borrowing, lending)}


@dataclass
class Case:
    name: str
    queues: dict
    cohorts: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    want_available: dict = field(default_factory=dict)
    want_potential: dict = field(default_factory=dict)
    want_cohort_usage: dict = field(default_factory=dict)


CASES = [
    Case("lone queue has only its nominal",
         queues={"a": (None, cell(10))}, usage={"a": 4},
         want_available={"a": 6}, want_potential={"a": 10}),
    Case("two queues share a cohort",
         queues={"a": ("co", cell(10)), "b": ("co", cell(10))}, usage={"a": 14},
         want_available={"a": 6, "b": 6}, want_potential={"a": 20, "b": 20},
         want_cohort_usage={"co": 14}),
    Case("borrowing limit caps what a queue takes from the cohort",
         queues={"a": ("co", cell(10, borrowing=2)), "b": ("co", cell(10))},
         want_available={"a": 12, "b": 20}, want_potential={"a": 12, "b": 20}),
    Case("lending limit keeps part of the quota for its owner",
         queues={"a": ("co", cell(10)), "b": ("co", cell(10, lending=4))}, usage={"a": 14},
         want_available={"a": 0, "b": 6}, want_potential={"a": 14, "b": 20},
         want_cohort_usage={"co": 14}),
    Case("usage inside the local part does not reach the parent",
         queues={"a": ("co", cell(10)), "b": ("co", cell(10, lending=4))}, usage={"b": 5},
         want_available={"a": 14, "b": 15}, want_cohort_usage={"co": 0}),
    Case("usage beyond the local part spills up",
         queues={"a": ("co", cell(10)), "b": ("co", cell(10, lending=4))}, usage={"b": 9},
         want_available={"a": 11, "b": 11}, want_cohort_usage={"co": 3}),
    Case("a cohort's own pool is shared by its queues",
         queues={"a": ("co", cell(0)), "b": ("co", cell(0))}, cohorts={"co": (None, cell(8))},
         usage={"a": 5}, want_available={"a": 3, "b": 3}, want_potential={"a": 8}),
    Case("nested cohorts: borrowing reaches the grandparent",
         queues={"a": ("team", cell(4)), "b": ("other", cell(6))},
         cohorts={"team": ("org", {}), "other": ("org", {}), "org": (None, cell(10))},
         usage={"b": 12}, want_available={"a": 8, "b": 8}, want_potential={"a": 20, "b": 20},
         want_cohort_usage={"org": 12, "other": 12}),
    Case("a cohort's lending limit keeps its pool inside the subtree",
         queues={"a": ("team", cell(4)), "b": ("other", cell(6))},
         cohorts={"team": ("org", cell(0, lending=2)), "other": ("org", {}),
                  "org": (None, {})},
         want_available={"a": 10, "b": 8}, want_potential={"a": 10, "b": 8}),
    Case("a cohort's borrowing limit caps its whole subtree",
         queues={"a": ("team", cell(4)), "b": ("other", cell(6))},
         cohorts={"team": ("org", cell(0, borrowing=1)), "other": ("org", {}),
                  "org": (None, {})},
         want_available={"a": 5, "b": 10}, want_potential={"a": 5}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_tree(case: Case) -> None:
    tree = QuotaTree.build(queues=case.queues, cohorts=case.cohorts)
    for name, amount in case.usage.items():
        tree.add(name, {FR: amount})
    for name, want in case.want_available.items():
        assert available(tree.queues[name], FR) == want, name
    for name, want in case.want_potential.items():
        assert potential_available(tree.queues[name], FR) == want, name
    for name, want in case.want_cohort_usage.items():
        assert tree.cohorts[name].usage.get(FR, 0) == want, name


def test_remove_usage_restores_every_level() -> None:
    tree = QuotaTree.build(queues={"a": ("team", cell(4, lending=1)), "b": ("org", cell(3))},
                           cohorts={"team": ("org", cell(2, lending=1)), "org": (None, {})})
    before = {n.name: dict(n.usage) for n in [*tree.queues.values(), *tree.cohorts.values()]}
    for amount in (1, 3, 5, 2):
        tree.add("a", {FR: amount})
    for amount in (2, 5, 3, 1):
        tree.remove("a", {FR: amount})
    after = {n.name: {k: v for k, v in n.usage.items() if v}
             for n in [*tree.queues.values(), *tree.cohorts.values()]}
    assert after == {k: {f: v for f, v in u.items() if v} for k, u in before.items()}


def test_clone_has_private_usage() -> None:
    tree = QuotaTree.build(queues={"a": ("co", cell(4)), "b": ("co", cell(4))}, cohorts={})
    snap = tree.clone()
    snap.add("a", {FR: 6})
    assert available(snap.queues["b"], FR) == 2
    assert available(tree.queues["b"], FR) == 8
    assert snap.queues["a"].parent is snap.cohorts["co"]


@pytest.mark.parametrize(("usage", "request_", "want_height"), [
    (0, 4, 0), (0, 5, 1), (3, 2, 1), (0, 9, 2), (0, 12, 2)])
def test_borrowing_height(usage: int, request_: int, want_height: int) -> None:
    tree = QuotaTree.build(queues={"a": ("team", cell(4)), "b": ("team", cell(2)),
                                   "c": ("org", cell(6))},
                           cohorts={"team": ("org", {}), "org": (None, {})})
    tree.add("a", {FR: usage})
    assert borrowing_height(tree.queues["a"], FR, request_) == want_height


# Kueue's height (FindHeightOfLowestSubtreeThatFits): of the lowest cohort whose subtree holds
# the request, not the levels climbed. "c" hangs directly under org, next to the cohort team:
# one level up is org, of height 2; "a" one level up is team, of height 1.
@pytest.mark.parametrize(("queue", "usage", "request_", "want_height"), [
    ("c", {}, 6, 0),                    # its own quota
    ("c", {}, 7, 2),                    # one level up, but org's height is 2
    ("a", {}, 6, 1),                    # fits in team (4 + 2)
    ("a", {}, 7, 2),                    # only org holds it
    ("a", {"b": 2}, 5, 2),              # team is full: org, though a climbs two levels
    ("c", {"a": 4, "b": 2}, 7, 2),      # fits nowhere: the root's height
])
def test_borrowing_height_is_the_lowest_fitting_subtree_height(
        queue: str, usage: dict[str, int], request_: int, want_height: int) -> None:
    tree = QuotaTree.build(queues={"a": ("team", cell(4)), "b": ("team", cell(2)),
                                   "c": ("org", cell(6))},
                           cohorts={"team": ("org", {}), "org": (None, {})})
    for name, amount in usage.items():
        tree.add(name, {FR: amount})
    assert borrowing_height(tree.queues[queue], FR, request_) == want_height
    assert borrowing_height(tree.clone().queues[queue], FR, request_) == want_height


def test_parent_loop_is_reported_and_isolated() -> None:
    tree = QuotaTree.build(queues={"a": ("x", cell(4)), "ok": ("z", cell(1))},
                           cohorts={"x": ("y", {}), "y": ("x", {}), "z": (None, {})})
    assert "x -> y -> x" in (tree.in_broken_tree("a") or "") or \
        "y -> x -> y" in (tree.in_broken_tree("a") or "")
    assert tree.in_broken_tree("ok") is None


def borrowing_children(tree: QuotaTree) -> dict[str, list[str]]:
    """Each cohort's children using more than their subtree's quota: the tree's index, and
    the same found by looking at every child."""
    return {name: sorted(c.name for c in node.borrowers.get(FR, {})) for name, node in
            tree.cohorts.items()}


def scanned(tree: QuotaTree) -> dict[str, list[str]]:
    return {name: sorted(c.name for c in node.children
                         if c.usage.get(FR, 0) > c.subtree.get(FR, 0))
            for name, node in tree.cohorts.items()}


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(1, 9), st.booleans()),
                max_size=40))
def test_the_borrowers_index_is_what_a_scan_finds(steps: list[tuple[str, int, bool]]) -> None:
    tree = QuotaTree.build(
        queues={"a": ("team", cell(4)), "b": ("team", cell(6, lending=2)),
                "c": ("other", cell(5, borrowing=3)), "d": ("org", cell(2))},
        cohorts={"team": ("org", cell(1)), "other": ("org", {}), "org": (None, cell(3))})
    held: dict[str, list[int]] = {q: [] for q in "abcd"}
    for queue, amount, add in steps:
        if add or not held[queue]:
            tree.add(queue, {FR: amount})
            held[queue].append(amount)
        else:
            tree.remove(queue, {FR: held[queue].pop()})
        assert borrowing_children(tree) == scanned(tree)
        assert borrowing_children(tree.clone()) == scanned(tree)


def test_clone_copies_nested_cohorts_in_the_same_order_and_dismantles() -> None:
    tree = QuotaTree.build(
        queues={"q1": ("team", cell(2)), "q2": ("org", cell(3)), "q3": ("team", cell(1)),
                "solo": (None, cell(1))},
        cohorts={"team": ("org", cell(4)), "org": (None, {}), "other": (None, cell(5))})
    tree.add("q1", {FR: 3})

    def shape(t: QuotaTree) -> dict[str, tuple[str | None, list[str], dict]]:
        return {n.name: (n.parent.name if n.parent else None, [c.name for c in n.children],
                         dict(n.usage))
                for n in [*t.cohorts.values(), *t.queues.values()]}

    snap = tree.clone()
    assert shape(snap) == shape(tree)
    assert all(snap.queues[n] is not tree.queues[n] for n in tree.queues)
    snap.dismantle()
    assert snap.queues == {} and snap.cohorts == {}
    assert shape(tree.clone()) == shape(tree)  # the original is untouched
    assert available(tree.queues["q2"], FR) == 7  # org: 10 cpu, 3 used by q1
