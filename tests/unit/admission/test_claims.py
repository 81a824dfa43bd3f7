"""Claims: what a preemptor waiting for its victims holds in each cycle's snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from admission.claims import Claims
from queueing.manager import Head
from quota.config import LocalQueueConfig
from quota.resources import FlavorResource
from quota.tree import CellQuota, QuotaTree
from tests.builders import WorkloadBuilder

CPU = FlavorResource("default", "cpu")


def tree(*queues: str) -> QuotaTree:
    return QuotaTree.build(queues={q: ("team", {CPU: CellQuota(10)}) for q in queues},
                           cohorts={})


def claims(**by_key: tuple[str, int]) -> Claims:
    held = Claims()
    for key, (cq, cpu) in by_key.items():
        held.claim(key, cq, {CPU: cpu})
    return held


def head(name: str, cq: str) -> Head:
    return Head(WorkloadBuilder(name).pod_set(cpu=1).obj(), cq, LocalQueueConfig("ns", "lq", cq))


@dataclass
class CycleCase:
    name: str
    tried: set[str]
    waiting: set[str] = field(default_factory=lambda: {"p", "q", "r"})
    queues: tuple[str, ...] = ("a", "b")
    want_usage: dict[str, int] = field(default_factory=dict)
    want_held: set[str] = field(default_factory=set)
    want_left: int = 0


CYCLE_CASES = [
    CycleCase("no claimant tried: every claim counts", tried=set(),
              want_usage={"a": 3, "b": 2}, want_held=set(), want_left=3),
    CycleCase("a claimant tried asks again itself", tried={"p"},
              want_usage={"a": 0, "b": 2}, want_held={"p"}, want_left=2),
    CycleCase("every claimant tried", tried={"p", "q", "r"},
              want_usage={"a": 0, "b": 0}, want_held={"p", "q", "r"}, want_left=0),
    CycleCase("a claimant no longer waiting gives its claim up", tried=set(), waiting={"q"},
              want_usage={"a": 0, "b": 2}, want_left=1),
    CycleCase("a claim on a ClusterQueue gone from the tree counts nowhere, and is kept",
              tried=set(), queues=("a",), want_usage={"a": 3}, want_left=3),
]


@pytest.mark.parametrize("case", CYCLE_CASES, ids=lambda c: c.name)
def test_a_cycle_counts_the_claims_of_heads_it_does_not_try(case: CycleCase) -> None:
    held = claims(p=("a", 3), q=("b", 2), r=("c", 5))
    snapshot = tree(*case.queues)
    got = held.for_cycle(snapshot, case.tried, waiting=case.waiting.__contains__)
    assert {q: snapshot.queues[q].usage.get(CPU, 0) for q in case.queues} == case.want_usage
    assert set(got) == case.want_held
    assert len(held) == case.want_left


def test_heads_left_untried_keep_their_claims_the_others_give_them_up() -> None:
    p, q = head("p", "a"), head("q", "b")
    held = Claims()
    held.claim(p.info.key, "a", {CPU: 3})
    held.claim(q.info.key, "b", {CPU: 2})
    taken = held.for_cycle(tree("a", "b"), {p.info.key, q.info.key}, waiting=lambda key: True)
    held.keep_untried([q], taken)
    snapshot = tree("a", "b")
    held.for_cycle(snapshot, set(), waiting=lambda key: True)
    assert (snapshot.queues["a"].usage.get(CPU, 0), snapshot.queues["b"].usage.get(CPU, 0)) \
        == (0, 2)


def test_a_dropped_claim_counts_no_more() -> None:
    held = claims(p=("a", 3))
    held.drop("p")
    held.drop("never-claimed")
    snapshot = tree("a")
    assert held.for_cycle(snapshot, {"p"}, waiting=lambda key: True) == {}
    assert snapshot.queues["a"].usage.get(CPU, 0) == 0
