"""The cluster cache under in-memory event sequences."""

from __future__ import annotations

from placement_builders import node, pod

from placement.cache import ClusterCache
from placement.model import PodRequirements

GPU1 = pod("nvidia.com/gpu=1,cpu=1")


def cache_with(*names: str) -> ClusterCache:
    cache = ClusterCache()
    for name in names:
        cache.upsert_node(node(name, "cpu=8,nvidia.com/gpu=8,pods=110"))
    return cache


def requested(cache: ClusterCache, name: str) -> dict[str, int]:
    found = cache.node(name)
    assert found is not None
    return dict(found.requested)


def test_bound_pods_add_their_requests_and_a_pod_slot() -> None:
    cache = cache_with("a")
    cache.upsert_pod("u1", "a", GPU1)
    cache.upsert_pod("u2", "a", GPU1)
    assert requested(cache, "a") == {"nvidia.com/gpu": 2000, "cpu": 2000, "pods": 2000}
    assert cache.pod_count == 2


def test_unbound_and_finished_pods_use_nothing() -> None:
    cache = cache_with("a")
    cache.upsert_pod("pending", None, GPU1)
    cache.upsert_pod("done", "a", GPU1, finished=True)
    assert requested(cache, "a") == {}
    assert cache.pod_count == 0


def test_a_modified_pod_replaces_its_contribution() -> None:
    cache = cache_with("a", "b")
    cache.upsert_pod("u1", None, GPU1)          # created
    cache.upsert_pod("u1", "a", GPU1)           # bound
    cache.upsert_pod("u1", "a", GPU1)           # re-delivered: no double count
    assert requested(cache, "a") == {"nvidia.com/gpu": 1000, "cpu": 1000, "pods": 1000}
    cache.upsert_pod("u1", "a", GPU1, finished=True)  # Succeeded
    assert requested(cache, "a") == {}
    cache.delete_pod("u1")                      # deleting twice is harmless
    assert requested(cache, "b") == {}


def test_pods_may_arrive_before_their_node() -> None:
    cache = ClusterCache()
    cache.upsert_pod("u1", "late", GPU1)
    assert cache.node("late") is None
    cache.upsert_node(node("late", "cpu=8,nvidia.com/gpu=8"))
    assert requested(cache, "late") == {"nvidia.com/gpu": 1000, "cpu": 1000, "pods": 1000}


def test_node_updates_keep_usage_and_deletes_forget_the_node() -> None:
    cache = cache_with("a")
    cache.upsert_pod("u1", "a", GPU1)
    cache.upsert_node(node("a", "cpu=16,nvidia.com/gpu=8", labels={"rack": "r1"}))
    updated = cache.node("a")
    assert updated is not None
    assert updated.labels == {"rack": "r1"}
    assert updated.allocatable["cpu"] == 16000
    assert updated.requested["nvidia.com/gpu"] == 1000
    cache.delete_node("a")
    assert cache.node("a") is None and len(cache) == 0


def test_nonzero_usage_is_kept_apart() -> None:
    cache = cache_with("a")
    best_effort = PodRequirements({}, nonzero_requests={"cpu": 100, "memory": 7})
    cache.upsert_pod("u1", "a", best_effort)
    found = cache.node("a")
    assert found is not None
    assert found.requested == {"pods": 1000}
    assert found.score_requested("cpu") == 100


def test_gang_members_are_tracked_by_node() -> None:
    cache = cache_with("a", "b")
    cache.upsert_pod("u1", "a", GPU1, gang="ml/job-1")
    cache.upsert_pod("u2", "b", GPU1, gang="ml/job-1")
    cache.upsert_pod("u3", "a", GPU1, gang="ml/job-2")
    assert cache.gang_nodes("ml/job-1") == ["a", "b"]
    cache.upsert_pod("u2", "b", GPU1, gang="ml/job-1", finished=True)
    assert cache.gang_nodes("ml/job-1") == ["a"]
    cache.delete_pod("u1")
    assert cache.gang_nodes("ml/job-1") == []
    assert cache.gang_nodes("ml/job-2") == ["a"]


def test_clear_forgets_everything() -> None:
    cache = cache_with("a")
    cache.upsert_pod("u1", "a", GPU1, gang="g")
    cache.synced = True
    cache.clear()
    assert (len(cache), cache.pod_count, cache.gang_nodes("g"), cache.synced) == (0, 0, [], False)
