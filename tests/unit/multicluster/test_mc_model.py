"""The member model: label index, pool totals, and usage updates that keep memos correct."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from multicluster_builders import GPU, MODEL, gpu_nodes, member, node, pod_set, request, workload

from multicluster import capacity
from multicluster.model import ClusterInfo, PoolSummary
from placement.model import ModelError, Node
from quota.resources import parse_vector

A100 = ((MODEL, "a100"),)


def fleet_member() -> ClusterInfo:
    return member("m", (*gpu_nodes("a", (8, 4, 0)), *gpu_nodes("t", (8,), model="t4"),
                        node("cordoned", f"cpu=64,memory=512Gi,{GPU}=8,pods=110",
                             labels={MODEL: "a100"}, unschedulable=True)))


def test_label_index_and_pool_totals() -> None:
    cluster = fleet_member()
    assert [n.name for n in cluster.nodes_with(A100)] == ["a-0", "a-1", "a-2", "cordoned"]
    pool = cluster.pool((A100,))
    assert pool.nodes == 3  # the cordoned node takes nothing, so it is not counted
    assert (pool.allocatable[GPU], pool.requested[GPU], pool.free[GPU]) == (24000, 12000, 12000)
    everything = cluster.pool(((),))
    assert everything.free[GPU] == 20000
    assert "pods" not in everything.allocatable


def test_usage_update_keeps_layout_and_patches_totals() -> None:
    cluster = fleet_member()
    req = request(workload(pod_set(count=3, requests=f"{GPU}=4")))
    assert capacity.shortfall(req, cluster) is None  # fills the memo: pool, count, eligible
    busier = Node("a-0", cluster.nodes[0].allocatable, parse_vector(f"{GPU}=8,pods=2"),
                  cluster.nodes[0].labels)
    updated = cluster.with_usage([busier])
    assert updated.layout is cluster.layout
    assert updated.nodes[0] is busier and updated.nodes[1:] == cluster.nodes[1:]
    assert updated.pool((A100,)).free[GPU] == 4000
    assert capacity.copies(updated, req.groups[0]) == 1
    assert capacity.shortfall(req, updated) is not None
    # The old value still answers for the old nodes.
    assert capacity.shortfall(req, cluster) is None


def test_layout_change_starts_afresh() -> None:
    cluster = fleet_member()
    cluster.pool((A100,))
    relabelled = Node("t-0", cluster.nodes[3].allocatable, {}, {MODEL: "a100"})
    updated = cluster.with_usage([relabelled])
    assert updated.layout is not cluster.layout
    assert updated.memo == {}
    assert updated.pool((A100,)).nodes == 4


def test_updating_an_unknown_node_is_an_error() -> None:
    with pytest.raises(ModelError, match="member cluster m: no node ghost to update"):
        fleet_member().with_usage([node("ghost")])


USAGE = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8), st.integers(0, 40)),
                 min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(changes=st.lists(USAGE, min_size=1, max_size=4), counts=st.lists(st.integers(1, 12),
                                                                          min_size=1,
                                                                          max_size=4))
def test_patched_answers_equal_answers_computed_afresh(
        changes: list[list[tuple[int, int, int]]], counts: list[int]) -> None:
    cluster = member("m", tuple(node(f"n{i}", f"cpu=64,memory=256Gi,{GPU}=8,pods=110",
                                     labels={MODEL: "a100"}) for i in range(5)))
    groups = [request(workload(pod_set(count=c, requests=f"{GPU}={g},cpu=4"))).groups[0]
              for c, g in zip(counts, (1, 2, 4, 8), strict=False)]
    for round_ in changes:
        for group in groups:
            capacity.copies(cluster, group, group.count)  # partial counts, resumed later
        cluster.pool((A100,))
        changed = {}
        for index, gpus, cpus in round_:
            old = cluster.nodes[index]
            changed[old.name] = Node(old.name, old.allocatable,
                                     parse_vector(f"{GPU}={gpus},cpu={cpus}"), old.labels)
        cluster = cluster.with_usage(changed.values())
        fresh = member("m", cluster.nodes)
        for group in groups:
            assert capacity.copies(cluster, group) == capacity.copies(fresh, group)
        patched = cluster.pool((A100,))
        assert isinstance(patched, PoolSummary)
        assert patched == fresh.pool((A100,))
