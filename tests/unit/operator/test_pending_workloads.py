"""The visibility.kuota.dev documents: positions in admission order, paging, errors."""

from __future__ import annotations

from typing import Any

import pytest

from admission.engine import Engine
from kuota.operator import pendingworkloads as pw
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine_with_waiting() -> Engine:
    """One cpu in ClusterQueue cq: 'running' holds it; five more wait in two LocalQueues."""
    engine = Engine()
    engine.apply(flavor("f"))
    engine.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 1}).obj())
    engine.apply(local_queue("cq", name="a"))
    engine.apply(local_queue("cq", name="b"))
    engine.submit(WorkloadBuilder("running", queue="a").pod_set(cpu=1).created(0).obj())
    engine.run_until_idle(0)
    for name, queue, priority, at in [("a1", "a", 0, 1), ("b1", "b", 0, 2), ("a2", "a", 5, 3),
                                      ("b2", "b", 0, 4), ("a3", "a", 0, 5)]:
        engine.submit(WorkloadBuilder(name, queue=queue).pod_set(cpu=1).priority(priority)
                      .created(at).obj())
    engine.run_until_idle(10)
    return engine


def bodies(key: str) -> dict[str, Any] | None:
    if key == "ns/a1":
        return {"metadata": {"name": "a1", "namespace": "ns",
                             "creationTimestamp": "2026-11-24T06:00:00Z",
                             "ownerReferences": [{"kind": "Job", "name": "a1"}]},
                "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                                           "reason": "Pending",
                                           "message": "couldn't assign flavors"}]}}
    return None


def names(summary: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
            for i in summary["items"]]


@pytest.mark.parametrize(("offset", "limit", "want"), [
    pytest.param(0, 1000, [("a2", 0, 0), ("a1", 1, 1), ("b1", 2, 0), ("b2", 3, 1),
                           ("a3", 4, 2)], id="priority first, then creation; positions per queue"),
    pytest.param(1, 2, [("a1", 1, 1), ("b1", 2, 0)], id="a page"),
    pytest.param(9, 10, [], id="past the end"),
])
def test_cluster_queue_positions(offset: int, limit: int,
                                 want: list[tuple[str, int, int]]) -> None:
    summary = pw.cluster_queue(engine_with_waiting(), "cq", pw.Page(offset, limit), bodies)
    assert summary["kind"] == "PendingWorkloadsSummary"
    assert summary["apiVersion"] == "visibility.kuota.dev/v1beta2"
    assert names(summary) == want


@pytest.mark.parametrize(("queue", "offset", "want"), [
    pytest.param("a", 0, [("a2", 0, 0), ("a1", 1, 1), ("a3", 4, 2)], id="all of a"),
    pytest.param("b", 1, [("b2", 3, 1)], id="offset counts LocalQueue positions"),
])
def test_local_queue_positions(queue: str, offset: int,
                               want: list[tuple[str, int, int]]) -> None:
    summary = pw.local_queue(engine_with_waiting(), "ns", queue, pw.Page(offset), bodies)
    assert names(summary) == want


def test_an_item_carries_kueues_fields_and_the_waiting_reason() -> None:
    summary = pw.local_queue(engine_with_waiting(), "ns", "a", pw.Page(), bodies)
    a1 = next(i for i in summary["items"] if i["metadata"]["name"] == "a1")
    assert a1 == {"metadata": {"name": "a1", "namespace": "ns",
                               "creationTimestamp": "2026-11-24T06:00:00Z",
                               "ownerReferences": [{"kind": "Job", "name": "a1"}]},
                  "priority": 0, "localQueueName": "a", "positionInClusterQueue": 1,
                  "positionInLocalQueue": 1, "reason": "Pending",
                  "message": "couldn't assign flavors"}


@pytest.mark.parametrize(("call", "want_message"), [
    pytest.param(lambda e: pw.cluster_queue(e, "nope", pw.Page(), bodies),
                 'clusterqueues.visibility.kuota.dev "nope" not found', id="clusterqueue"),
    pytest.param(lambda e: pw.local_queue(e, "ns", "nope", pw.Page(), bodies),
                 'localqueues.visibility.kuota.dev "nope" not found in namespace ns',
                 id="localqueue"),
])
def test_an_unknown_queue_is_a_404(call: Any, want_message: str) -> None:
    with pytest.raises(pw.RequestError) as caught:
        call(engine_with_waiting())
    assert (caught.value.code, caught.value.reason, caught.value.message) == \
        (404, "NotFound", want_message)


@pytest.mark.parametrize(("query", "want_page", "want_error"), [
    pytest.param({}, pw.Page(0, 1000), None, id="defaults"),
    pytest.param({"offset": "3", "limit": "7"}, pw.Page(3, 7), None, id="given"),
    pytest.param({"limit": "0"}, pw.Page(0, 1000), None, id="limit 0 is the default"),
    pytest.param({"limit": "10000000"}, pw.Page(0, pw.MAX_LIMIT), None, id="limit capped"),
    pytest.param({"offset": "x"}, None, "query parameter offset: 'x' is not an integer",
                 id="not a number"),
    pytest.param({"limit": "-1"}, None, "query parameter limit: must be >= 0, got -1",
                 id="negative"),
])
def test_page_options(query: dict[str, str], want_page: pw.Page | None,
                      want_error: str | None) -> None:
    if want_error is None:
        assert pw.page(query) == want_page
        return
    with pytest.raises(pw.RequestError) as caught:
        pw.page(query)
    assert (caught.value.code, caught.value.message) == (400, want_error)


def test_discovery_lists_only_the_subresources() -> None:
    # Listing `clusterqueues` itself would let this group answer `kubectl get cq`.
    resources = pw.api_resource_list()["resources"]
    assert [(r["name"], r["namespaced"], r["verbs"]) for r in resources] == [
        ("clusterqueues/pendingworkloads", False, ["get"]),
        ("localqueues/pendingworkloads", True, ["get"])]


def test_a_workload_that_can_never_fit_comes_last_marked_as_blocking_no_one() -> None:
    engine = engine_with_waiting()
    engine.submit(WorkloadBuilder("huge", queue="a").pod_set(cpu=8).priority(100)
                  .created(6).obj())
    engine.run_until_idle(20)
    summary = pw.cluster_queue(engine, "cq", pw.Page(0, 1000), bodies)
    last = summary["items"][-1]
    assert last["metadata"]["name"] == "huge", "the highest priority, but it never fits"
    assert last["inadmissible"] is True
    assert last["reason"] == "ExceedsMaxQuota"
    assert all("inadmissible" not in item for item in summary["items"][:-1])
