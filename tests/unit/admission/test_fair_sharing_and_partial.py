"""Dominant resource shares, the tournament order, and the partial-admission search."""

from __future__ import annotations

import math

import pytest

from admission import fairsharing, partial
from quota.cache import QuotaCache
from quota.resources import FlavorResource
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


def test_zero_weight_share_sorts_after_every_finite_share() -> None:
    assert (False, 1e9) < (True, 0.1)


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
