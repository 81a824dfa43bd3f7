"""Placing a gang where admission and dispatch allow: pinned nodes, one pool, or any pool."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from kuota.service import pinning, placing
from placement.model import Node
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission, PodSetInfo, WorkloadInfo

FLAVORS = {"f": FlavorConfig("f", {})}


def nodes(*specs: tuple[str, int]) -> list[Node]:
    return [Node(name, {"cpu": cpu * 1000}) for name, cpu in specs]


POOLS = {"a": nodes(("a1", 2), ("a2", 2)), "b": nodes(("b1", 4), ("b2", 1))}


def gang(*pod_sets: tuple[str, int, tuple[tuple[str, int], ...]],
         cluster: str | None = None) -> tuple[list[placing.GangPod], Admission]:
    info = WorkloadInfo("ns", "w", "lq", tuple(PodSetInfo(name, count, {"cpu": 1000})
                                               for name, count, _ in pod_sets))
    admission = Admission("cq", tuple(
        PodSetAdmission(name, count, {"cpu": "f"}, {"cpu": 1000 * count}, nodes=pinned)
        for name, count, pinned in pod_sets), cluster=cluster)
    return placing.gang_pods(info, admission, FLAVORS), admission


@dataclass
class Case:
    name: str
    pod_sets: tuple[tuple[str, int, tuple[tuple[str, int], ...]], ...]
    pool: str | None = None
    pools: dict[str, list[Node]] = field(default_factory=lambda: POOLS)
    want_pool: str | None = None
    want_nodes: tuple[str, ...] = ()
    want_error: str = ""


CASES = [
    Case("no pins: first pool that takes the gang", (("main", 2, ()),),
         want_pool="a", want_nodes=("a1", "a1")),
    Case("pinned pods go exactly where admission put them",
         (("main", 3, (("b2", 1), ("b1", 2))),), want_pool="b", want_nodes=("b2", "b1", "b1")),
    Case("a pinned node that is full makes the gang wait",
         (("main", 2, (("b2", 2),)),), want_error="pinned to node b2"),
    Case("a pinned node that is gone makes the gang wait",
         (("main", 1, (("zz", 1),)),), want_error="zz chosen by topology-aware admission"),
    Case("pins across pools are refused",
         (("main", 2, (("a1", 1), ("b1", 1))),), want_error="span pools a, b"),
    Case("unpinned pod sets of a pinned gang stay in its pool",
         (("main", 1, (("b2", 1),)), ("side", 2, ())), want_pool="b",
         want_nodes=("b2", "b1", "b1")),
    Case("dispatch chose a pool: only that one (binpacked there)", (("main", 1, ()),),
         pool="b", want_pool="b", want_nodes=("b2",)),
    Case("dispatch chose a pool with no Ready nodes", (("main", 1, ()),), pool="c",
         want_error="pool c (chosen by multi-cluster dispatch) has no Ready nodes"),
    Case("dispatch chose a member that is not a pool", (("main", 1, ()),), pool="",
         want_error="not a Redis worker pool"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_place(case: Case) -> None:
    pods, admission = gang(*case.pod_sets)
    result = pinning.place(pods, admission, case.pools, pool=case.pool)
    if case.want_error:
        assert isinstance(result, placing.Unplaceable)
        assert case.want_error in result.reason
        return
    assert isinstance(result, placing.Placed), result
    assert (result.pool, result.nodes) == (case.want_pool, case.want_nodes)
    # The touched nodes carry the gang's pods, so later gangs of the round see them.
    for name in set(result.nodes):
        assert result.updated[name].requested["cpu"] == 1000 * result.nodes.count(name)


def test_placement_key_tells_pinned_and_dispatched_gangs_apart() -> None:
    _, plain = gang(("main", 1, ()))
    _, pinned = gang(("main", 1, (("a1", 1),)))
    dispatched = replace(plain, cluster="east")
    pools = {"east": "pool-east"}
    assert pinning.placement_key(plain, pools) == ""
    keys = {pinning.placement_key(a, pools) for a in (plain, pinned, dispatched)}
    assert len(keys) == 3
