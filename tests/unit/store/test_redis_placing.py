"""Placing admitted gangs on pool nodes: flavor labels select nodes; all pods or none."""

from __future__ import annotations

import pytest

from kuota.service import placing
from placement.model import Node, PodRequirements
from placement.ranking import NodeRanking
from quota.config import FlavorConfig
from quota.workload import Admission, PodSetAdmission, PodSetInfo, WorkloadInfo


def gang(count: int, cpu: int = 1000, *, selector: dict[str, str] | None = None,
         flavor: str = "fast") -> tuple[WorkloadInfo, Admission]:
    info = WorkloadInfo("ns", "w", "lq", (PodSetInfo("main", count, {"cpu": cpu},
                                                     node_selector=selector or {}),))
    admission = Admission("cq", (PodSetAdmission("main", count, {"cpu": flavor},
                                                 {"cpu": cpu * count}),))
    return info, admission


FLAVORS = {"fast": FlavorConfig("fast", {"tier": "fast"})}


def nodes(*specs: tuple[str, int, dict[str, str]]) -> list[Node]:
    return [Node(name, {"cpu": cpu * 1000}, labels=labels) for name, cpu, labels in specs]


def test_flavor_labels_and_the_pod_sets_selector_both_apply() -> None:
    info, admission = gang(1, selector={"zone": "a"})
    [pod] = placing.gang_pods(info, admission, FLAVORS)
    assert dict(pod.requirements.node_selector) == {"zone": "a", "tier": "fast"}


@pytest.mark.parametrize("ranked", [False, True], ids=["lists", "rankings"])
def test_the_whole_gang_lands_in_one_pool_or_nowhere(ranked: bool) -> None:
    info, admission = gang(3)
    pods = placing.gang_pods(info, admission, FLAVORS)
    fast = {"tier": "fast"}
    lists = {"a": nodes(("a1", 2, fast)), "b": nodes(("b1", 2, fast), ("b2", 2, fast))}
    pools: dict[str, placing.Pool] = (
        {name: NodeRanking(placing.SCORER, members) for name, members in lists.items()}
        if ranked else dict(lists))
    result = placing.place(pods, pools)
    assert isinstance(result, placing.Placed)
    assert (result.pool, sorted(result.nodes)) == ("b", ["b1", "b1", "b2"])
    too_big = placing.place(placing.gang_pods(*gang(5), FLAVORS), pools)
    assert isinstance(too_big, placing.Unplaceable)
    assert too_big.reason == (
        "pool a: main: 0/1 nodes are available: 1 Insufficient cpu.; "
        "pool b: main: 0/2 nodes are available: 2 Insufficient cpu.")


def test_nodes_without_the_flavor_labels_are_never_chosen() -> None:
    pods = placing.gang_pods(*gang(1), FLAVORS)
    result = placing.place(pods, {"a": nodes(("plain", 64, {}))})
    assert isinstance(result, placing.Unplaceable)
    assert "didn't match Pod's node affinity/selector" in result.reason


def test_removing_a_pod_undoes_adding_it() -> None:
    node = Node("n", {"cpu": 4000, "memory": 10})
    with_two = placing.with_requests(node, [{"cpu": 1000, "memory": 4}, {"cpu": 500}])
    back = placing.without_requests(with_two, {"cpu": 500})
    assert back.requested == placing.with_requests(node, [{"cpu": 1000, "memory": 4}]).requested
    assert placing.without_requests(back, {"cpu": 1000, "memory": 4}).requested == {}


@pytest.mark.parametrize("requests", [
    [],
    [{"cpu": 1000}],
    [{"cpu": 1000, "memory": 4}, {"cpu": 500}, {"nvidia.com/gpu": 1000}],
])
def test_adding_pods_at_once_is_adding_them_one_by_one(requests: list[dict[str, int]]) -> None:
    node = Node("n", {"cpu": 4000, "memory": 10}, {"cpu": 250})
    one_by_one = node
    for vector in requests:
        one_by_one = one_by_one.with_pod(PodRequirements(requests=vector))
    assert placing.with_requests(node, requests) == one_by_one
