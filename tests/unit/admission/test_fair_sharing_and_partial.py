"""Dominant resource shares, the tournament order, and the partial-admission search."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from admission import fairsharing, partial
from quota.cache import QuotaCache, Snapshot
from quota.resources import FlavorResource
from quota.tree import QuotaNode
from quota.workload import Admission, PodSetAdmission
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, cohort, flavor

CPU = FlavorResource("default", "cpu")
MEM = FlavorResource("default", "memory")


def cache_with(weights: dict[str, int], pool_cpu: int = 10, pool_mem: int = 10) -> QuotaCache:
    cache = QuotaCache()
    cache.flavors["default"] = flavor("default")
    cache.cohorts["pool"] = cohort("pool", cpu=pool_cpu, memory=pool_mem)
    for name, weight in weights.items():
        cache.cluster_queues[name] = ClusterQueueBuilder(name).cohort("pool") \
            .flavor("default", {"cpu": 0, "memory": 0}).set(fair_weight=weight).obj()
    cache.rebuild()
    return cache


def use(cache: QuotaCache, cq: str, cpu: int, mem: int = 0) -> None:
    info = WorkloadBuilder(f"{cq}-{cpu}-{mem}", queue=cq).pod_set(cpu=cpu, memory=mem).obj()
    usage = {"cpu": cpu * 1000, "memory": mem * 1000}
    cache.assume(info, Admission(cq, (PodSetAdmission("main", 1, {"cpu": "default",
                                                                  "memory": "default"},
                                                      usage),)), 0)


@pytest.mark.parametrize(("cpu", "mem", "weight", "want"), [
    (0, 0, 1000, (False, 0.0)),
    (5, 0, 1000, (False, 500.0)),        # 5 of 10 lendable cpu
    (5, 8, 1000, (False, 800.0)),        # memory dominates
    (5, 0, 2000, (False, 250.0)),        # weight 2 halves the share
    (5, 0, 0, (True, 500.0)),            # weight 0 while borrowing: infinite
])
def test_dominant_resource_share(cpu: int, mem: int, weight: int,
                                 want: tuple[bool, float]) -> None:
    cache = cache_with({"a": weight})
    use(cache, "a", cpu, mem)
    snapshot = cache.snapshot()
    got = fairsharing.share(snapshot, snapshot.tree.queues["a"])
    assert got[0] is want[0] and math.isclose(got[1], want[1])


def test_a_zero_weight_borrower_sorts_after_every_finite_share() -> None:
    cache = cache_with({"zero": 0, "busy": 1000}, pool_cpu=100)
    use(cache, "zero", 1)   # borrows a little with weight 0: an infinite share
    use(cache, "busy", 90)  # borrows much with a weight: a large, finite share
    snapshot = cache.snapshot()
    zero = fairsharing.share(snapshot, snapshot.tree.queues["zero"])
    busy = fairsharing.share(snapshot, snapshot.tree.queues["busy"])
    assert zero[0] is True and busy[0] is False and busy < zero
    entries = [("zero", WorkloadBuilder("wz", queue="zero").pod_set(cpu=1).priority(9).obj()),
               ("busy", WorkloadBuilder("wb", queue="busy").pod_set(cpu=1).obj())]
    order = fairsharing.fair_order(snapshot, entries, cluster_queue=lambda e: e[0],
                                   usage=lambda e: {CPU: 1000},
                                   order=lambda e: (-e[1].priority, e[1].created, e[1].key))
    assert [e[1].name for e in order] == ["wb", "wz"]  # whatever the priorities


def test_tournament_prefers_the_lower_share_then_priority() -> None:
    cache = cache_with({"a": 1000, "b": 1000, "c": 1000})
    use(cache, "a", 4)
    snapshot = cache.snapshot()
    entries = [("a", WorkloadBuilder("wa", queue="a").pod_set(cpu=1).priority(9).obj()),
               ("b", WorkloadBuilder("wb", queue="b").pod_set(cpu=1).priority(1).obj()),
               ("c", WorkloadBuilder("wc", queue="c").pod_set(cpu=1).priority(5).obj())]
    order = fairsharing.fair_order(snapshot, entries, cluster_queue=lambda e: e[0],
                                   usage=lambda e: {CPU: 1000},
                                   order=lambda e: (-e[1].priority, e[1].created, e[1].key))
    # b and c would both share 100 after admission; c has the higher priority. a is at 500.
    assert [e[1].name for e in order] == ["wc", "wb", "wa"]


@pytest.mark.parametrize(("sets", "fits_up_to", "want"), [
    # (count, minCount) per pod set; the workload fits when total pods <= fits_up_to.
    ([(10, 4)], 7, {"a": 7}),
    ([(10, 4)], 3, None),
    ([(10, 9)], 8, None),
    ([(4, 1), (4, 1)], 2, {"a": 1, "b": 1}),
    ([(4, 2), (6, None)], 9, {"a": 3, "b": 6}),
    ([(8, 2), (4, 2)], 8, {"a": 5, "b": 3}),
])
def test_partial_search(sets: list[tuple[int, int | None]], fits_up_to: int,
                        want: dict[str, int] | None) -> None:
    builder = WorkloadBuilder("w")
    for name, (count, min_count) in zip("ab", sets, strict=False):
        builder.pod_set(name, count=count, min_count=min_count, cpu=1)
    info = builder.obj()
    tried: list[dict[str, int]] = []

    def attempt(counts: dict[str, int]) -> dict[str, int] | None:
        tried.append(counts)
        for ps in info.pod_sets:
            assert counts[ps.name] >= (ps.min_count or ps.count)
        return counts if sum(counts.values()) <= fits_up_to else None

    assert partial.search(info, attempt) == want
    assert len(tried) <= 1 + max(c - (m or c) for c, m in sets).bit_length() + 1


# -- the tournament kept between admissions: the order of one run afresh every time -----

def fresh_order(snapshot: Snapshot, entries: list[Pending]) -> Iterator[Pending]:
    """The tournament order by its definition: before every yield, every share computed
    again for the last entry left of every queue of the tree (what fair_order did before
    it kept its tournaments)."""
    remaining = list(entries)
    while remaining:
        first = min(remaining, key=Pending.rank)
        node = snapshot.tree.queues[first.cq]
        if node.parent is None:
            remaining.remove(first)
            yield first
            continue
        root = node.root()
        contenders = {e.cq: e for e in remaining if snapshot.tree.queues[e.cq].root() is root}
        shares = {}
        for cq, e in contenders.items():
            snapshot.tree.add(cq, e.usage)
            path, at = {}, snapshot.tree.queues[cq]
            while at.parent is not None:
                path[at.parent.name] = fairsharing.share(snapshot, at)
                at = at.parent
            snapshot.tree.remove(cq, e.usage)
            shares[cq] = path
        won = winner_under(root, contenders, shares)
        assert won is not None
        remaining.remove(won)
        yield won


def winner_under(cohort: QuotaNode, contenders: dict[str, Pending],
                 shares: dict[str, dict[str, fairsharing.Share]]) -> Pending | None:
    best, best_key = None, None
    for child in cohort.children:
        w = (winner_under(child, contenders, shares) if child.is_cohort
             else contenders.get(child.name))
        if w is None:
            continue
        waits, *rest = w.rank()
        key = (waits, shares[w.cq][cohort.name], *rest)
        if best_key is None or key < best_key:
            best, best_key = w, key
    return best


@dataclass(frozen=True)
class Pending:
    name: str
    cq: str
    priority: int
    cpu: int
    mem: int
    preempting: bool

    @property
    def usage(self) -> dict[FlavorResource, int]:
        return {CPU: self.cpu * 1000, MEM: self.mem * 1000}

    def rank(self) -> tuple[bool, int, float, str]:
        return (not self.preempting, -self.priority, 0.0, self.name)


@st.composite
def trees(draw: st.DrawFn) -> tuple[QuotaCache, list[tuple[str, int, int]]]:
    """A cohort tree two levels deep (queues under the root too, and a queue outside),
    its queues' quotas and weights, and the usage admitted before the cycle."""
    cache = QuotaCache()
    cache.flavors["default"] = flavor("default")
    cache.cohorts["root"] = cohort("root", cpu=draw(st.integers(0, 12)),
                                   memory=draw(st.integers(0, 12)))
    parents = ["root"]
    for i in range(draw(st.integers(0, 3))):
        name = f"c{i}"
        cache.cohorts[name] = replace(
            cohort(name, "root", cpu=draw(st.integers(0, 6)), memory=draw(st.integers(0, 6))),
            fair_weight=draw(st.sampled_from([0, 500, 1000, 2000])))
        parents.append(name)
    used = []
    for i in range(draw(st.integers(1, 7))):
        name = f"q{i}"
        parent = draw(st.sampled_from([*parents, None]))
        builder = ClusterQueueBuilder(name).flavor(
            "default", {"cpu": draw(st.integers(0, 4)), "memory": draw(st.integers(0, 4))},
            borrowing=draw(st.sampled_from([None, {"cpu": 2}])),
            lending=draw(st.sampled_from([None, {"cpu": 1}])))
        if parent is not None:
            builder = builder.cohort(parent)
        cache.cluster_queues[name] = builder.set(
            fair_weight=draw(st.sampled_from([0, 500, 1000, 2000]))).obj()
        used += [(name, draw(st.integers(0, 4)), draw(st.integers(0, 4)))
                 for _ in range(draw(st.integers(0, 2)))]
    cache.rebuild()
    used = list(dict.fromkeys(used))  # (one workload each)
    for cq, cpu, mem in used:
        use(cache, cq, cpu, mem)
    return cache, used


@settings(max_examples=300, deadline=None)
@given(trees(), st.data())
def test_the_kept_tournament_yields_the_order_of_one_run_afresh(
        tree: tuple[QuotaCache, list[tuple[str, int, int]]], data: st.DataObject) -> None:
    cache, used = tree
    queues = sorted(cache.cluster_queues)
    entries = [Pending(f"w{i}", data.draw(st.sampled_from(queues)),
                       data.draw(st.integers(0, 2)), data.draw(st.integers(0, 3)),
                       data.draw(st.integers(0, 3)), data.draw(st.integers(0, 4)) == 0)
               for i in range(data.draw(st.integers(1, 12)))]
    # What the caller does after each yield: admit it, pass, or also evict something.
    moves = data.draw(st.lists(st.sampled_from(["admit", "admit", "pass", "evict"]),
                               min_size=len(entries), max_size=len(entries)))
    got = []
    for run in (fairsharing.fair_order, fresh_order):
        snapshot, victims, yielded = cache.snapshot(), list(used), []
        order = (run(snapshot, entries, cluster_queue=lambda e: e.cq,
                     usage=lambda e: e.usage, order=lambda e: e.rank()[1:],
                     preempting=lambda e: e.preempting)
                 if run is fairsharing.fair_order else run(snapshot, entries))
        for entry, move in zip(order, moves, strict=False):
            yielded.append(entry.name)
            if move == "admit":
                snapshot.tree.add(entry.cq, entry.usage)
            elif move == "evict" and victims:
                cq, cpu, mem = victims.pop()
                snapshot.tree.remove(cq, {CPU: cpu * 1000, MEM: mem * 1000})
        got.append(yielded)
    assert got[0] == got[1]
