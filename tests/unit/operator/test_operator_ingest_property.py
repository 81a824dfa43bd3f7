"""Watch events ingested one by one leave the engine as a rebuild from the same objects.

A replica that leads takes every change as a watch event, and keeps indexes and
derived state between them (the specs it applied, its queues' routing, the quota
each queue holds). A replica that starts leading reads the same objects once, in
its own order. Whatever the sequence of queue-object and Workload changes, both
must see the same thing: the same workloads waiting, in the same queues, parked
for the same reasons, the same quota held — or a change applied incrementally
was lost. No cycle runs here: nothing is decided, only ingested."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kuota.operator.controller import Controller
from kuota.operator.settings import Options
from quota import tree as qt
from quota.lifecycle import State
from quota.resources import FlavorResource
from tests.unit.operator.test_operator_controller import API, FakeActions, meta

_CPU = FlavorResource("spot", "cpu")
QUEUES = ("a", "b")
LOCAL_QUEUES = ("la", "lb")
WORKLOADS = 6


def cluster_queue(name: str, cpu: int, cohort: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [
        {"coveredResources": ["cpu"], "flavors": [
            {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}
    if cohort:
        spec["cohortName"] = "co"
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": meta(name), "spec": spec}


def cohort(cpu: int) -> dict[str, Any]:
    """Cohort ``co`` with a quota of its own."""
    return {"apiVersion": API, "kind": "Cohort", "metadata": meta("co"), "spec": {
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}}


def local_queue(name: str, target: str) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": meta(name, "ns"),
            "spec": {"clusterQueue": target}}


def workload(i: int, shape: tuple[str, int, str | None], *, finished: bool = False,
             active: bool = True) -> dict[str, Any]:
    """Workload ``w<i>``: its LocalQueue, cpus and the ClusterQueue it holds quota in
    (None: waiting) are fixed per workload, as the spec is immutable and only kuota
    writes an admission (nor does it clear one here: only waiting ones are deactivated)."""
    lq, cpus, holds = shape
    body: dict[str, Any] = {
        "apiVersion": API, "kind": "Workload",
        "metadata": meta(f"w{i}", "ns", creationTimestamp=f"2026-01-01T00:00:0{i}Z"),
        "spec": {"queueName": lq, "active": active, "podSets": [
            {"name": "main", "count": cpus, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {"conditions": []}}
    if holds is not None:
        body["status"] = {
            "admission": {"clusterQueue": holds, "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "spot"}, "count": cpus,
                 "resourceUsage": {"cpu": str(cpus)}}]},
            "conditions": [{"type": "QuotaReserved", "status": "True"},
                           {"type": "Admitted", "status": "True"}]}
    if finished:
        body["status"]["conditions"].append({"type": "Finished", "status": "True"})
    return body


_shape = st.tuples(st.sampled_from(LOCAL_QUEUES), st.integers(1, 3),
                   st.one_of(st.none(), st.sampled_from(QUEUES)))
_event = st.one_of(
    # (a quota change alone is taken in place, a cohort change rebuilds the tree: both)
    st.tuples(st.just("cq"), st.sampled_from(QUEUES), st.integers(0, 6),
              st.sampled_from([True, True, True, False])),
    st.tuples(st.just("cq-delete"), st.sampled_from(QUEUES)),
    st.tuples(st.just("lq"), st.sampled_from(LOCAL_QUEUES), st.sampled_from(QUEUES)),
    st.tuples(st.just("lq-delete"), st.sampled_from(LOCAL_QUEUES)),
    st.tuples(st.just("cohort"), st.integers(0, 6)),
    st.tuples(st.just("cohort-delete")),
    st.tuples(st.just("deactivate"), st.integers(0, WORKLOADS - 1)),
    st.tuples(st.just("workload"), st.integers(0, WORKLOADS - 1)),
    st.tuples(st.just("finish"), st.integers(0, WORKLOADS - 1)),
    st.tuples(st.just("workload-delete"), st.integers(0, WORKLOADS - 1)),
)


def _view(controller: Controller) -> dict[str, Any]:
    engine = controller.engine
    assert engine is not None
    # (a rebuild takes in no inactive workload that holds no quota: nothing to count)
    live = {key: r for key, r in engine.records.items()
            if r.state not in (State.FINISHED, State.INACTIVE)}
    return {
        "states": {key: r.state for key, r in live.items()},
        "waiting in": {key: engine.queues.cluster_queue_of(key) for key in live},
        "why": {key: engine.queues.why_waiting(key) for key in live},
        "holding": {key: (a.admission.cluster_queue, dict(a.admission.usage()))
                    for key, a in ((k, engine.cache.holding(k)) for k in live) if a},
        "available": {name: (qt.available(node, _CPU), qt.potential_available(node, _CPU))
                      for name, node in engine.cache.tree.queues.items()},
        "inactive": dict(engine.cache.inactive),
        "problems": dict(controller.problems),
    }


@settings(max_examples=1000, deadline=None)
@given(shapes=st.lists(_shape, min_size=WORKLOADS, max_size=WORKLOADS),
       events=st.lists(_event, min_size=4, max_size=30))
def test_events_one_by_one_leave_the_engine_as_a_rebuild_from_the_objects(
        shapes: list[tuple[str, int, str | None]], events: list[tuple[Any, ...]]) -> None:
    controller = Controller(Options(), clock=lambda: 1000.0)
    for kind, body in (
            ("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("ns")}),
            ("ResourceFlavor", {"apiVersion": API, "kind": "ResourceFlavor",
                                "metadata": meta("spot"), "spec": {}})):
        controller.observe(kind, body)
    controller.rebuild(FakeActions())
    for event in events:
        op, *args = event
        if op == "cq":
            controller.observe("ClusterQueue", cluster_queue(*args))
        elif op == "cq-delete":
            controller.observe("ClusterQueue", cluster_queue(args[0], 0, False), deleted=True)
        elif op == "lq":
            controller.observe("LocalQueue", local_queue(*args))
        elif op == "lq-delete":
            controller.observe("LocalQueue", local_queue(args[0], "a"), deleted=True)
        elif op == "cohort":
            controller.observe("Cohort", cohort(*args))
        elif op == "cohort-delete":
            controller.observe("Cohort", cohort(0), deleted=True)
        elif op == "deactivate" and shapes[args[0]][2] is not None:
            continue  # (see workload())
        else:
            i = args[0]
            body = workload(i, shapes[i], finished=op == "finish", active=op != "deactivate")
            controller.observe("Workload", body, deleted=op == "workload-delete")
    afresh = Controller(Options(), clock=lambda: 1000.0)
    for kind in ("Namespace", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue",
                 "Workload"):
        for body in controller.objects.all(kind):
            afresh.observe(kind, body)
    afresh.rebuild(FakeActions())
    assert _view(controller) == _view(afresh)
