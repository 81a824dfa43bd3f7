"""Queue objects changed under a running Redis leader are taken in place.

A ``config`` entry used to end the leader and load the whole store again — about a
second without admissions at 1,000 ClusterQueues and 50,000 pending — to raise one
quota. The engine now takes ClusterQueue, Cohort, LocalQueue, ResourceFlavor and
namespace label changes as it runs; what the leader reads only when it starts
(topologies, admission checks, priority classes, pool members) still rebuilds it.
Either way the engine ends as a leader built afresh from the store would have it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from store_builders import LOCAL_QUEUE, SteppedPool

from admission.engine import Engine
from kuota.service import rebuild
from quota import tree as qt
from quota.resources import FlavorResource
from tests.integration.redis.harness import CQ, queues

_CPU = FlavorResource("default", "cpu")


def _engine_view(engine: Engine) -> dict[str, Any]:
    """What a decision reads: each queue's quota figures, state and waiting workloads."""
    tree = engine.cache.tree
    return {
        "queues": {name: (qt.available(node, _CPU), qt.potential_available(node, _CPU),
                          node.parent.name if node.parent else None)
                   for name, node in tree.queues.items()},
        "inactive": dict(engine.cache.inactive),
        "local queues": sorted(engine.cache.local_queues),
        "waiting": {name: sorted(i.key for i, _, _ in engine.queues.positions(name))
                    for name in engine.queues.queues},
        "parked": sorted(engine.queues.parked),
        "namespaces": dict(engine.cache.namespaces),
    }


def _as_rebuilt(pool: SteppedPool) -> dict[str, Any]:
    return _engine_view(rebuild.load(pool.store).engine)


@dataclass(frozen=True)
class Change:
    name: str
    #: YAML applied (or "delete Kind/name")
    change: str
    want_in_place: bool


TEAM = CQ("cq", {"cpu": 4}, cohort="all")
OTHER = CQ("other", {"cpu": 2}, cohort="all")
CHANGES = [
    Change("a quota raised", queues(CQ("cq", {"cpu": 8}, cohort="all")), True),
    Change("a borrowing limit set",
           queues(CQ("cq", {"cpu": 4}, cohort="all", borrowing_limit={"cpu": 1})), True),
    Change("a ClusterQueue and its LocalQueue added",
           queues(CQ("new", {"cpu": 3}, cohort="all")), True),
    Change("a ClusterQueue moved to another cohort",
           queues(CQ("other", {"cpu": 2}, cohort="elsewhere")), True),
    Change("a Cohort with a quota of its own",
           "apiVersion: kuota.dev/v1alpha1\nkind: Cohort\nmetadata: {name: all}\n"
           "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
           "    - name: default\n      resources: [{name: cpu, nominalQuota: 5}]\n", True),
    Change("a LocalQueue deleted", "delete LocalQueue/default/lq-other", True),
    Change("a ClusterQueue deleted", "delete ClusterQueue/other", True),
    Change("namespace labels", "apiVersion: v1\nkind: Namespace\n"
           "metadata: {name: default, labels: {team: a}}\n", True),
    Change("a ResourceFlavor's node labels",
           "apiVersion: kuota.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: default}\n"
           "spec: {nodeLabels: {pool: gpu}}\n", True),
    Change("a ResourceFlavor added",
           "apiVersion: kuota.dev/v1alpha1\nkind: ResourceFlavor\nmetadata: {name: spot}\n"
           "spec: {nodeLabels: {capacity: spot}}\n", True),
    Change("a ResourceFlavor deleted", "delete ResourceFlavor/default", True),
    Change("a priority class", "apiVersion: kuota.dev/v1alpha1\nkind: WorkloadPriorityClass\n"
           "metadata: {name: high}\nvalue: 1000\n", False),
]


@pytest.mark.parametrize("case", CHANGES, ids=[c.name for c in CHANGES])
def test_a_change_is_taken_in_place_or_rebuilds_and_the_engine_is_as_rebuilt(
        case: Change) -> None:
    pool = SteppedPool()
    pool.client.apply(queues(TEAM, OTHER))
    pool.run()
    for i in range(3):
        pool.submit(f"w{i}", cpu=3)
    pool.client.submit(["true"], queue="default/lq-other", name="o", requests={"cpu": 2})
    pool.run()
    leader = pool.scheduler.leader
    assert leader is not None
    if case.change.startswith("delete "):
        kind, _, name = case.change.removeprefix("delete ").partition("/")
        pool.client.delete(kind, name)
    else:
        pool.client.apply(case.change)
    pool.run()
    now = pool.scheduler.leader
    assert now is not None
    assert (now is leader) == case.want_in_place
    assert _engine_view(now.engine) == _as_rebuilt(pool)


def test_a_quota_raised_admits_what_waited_for_it_without_a_new_leader() -> None:
    pool = SteppedPool()
    first = pool.submit("first", cpu=4)
    waiting = pool.submit("waiting", cpu=4)
    pool.run()
    assert (pool.state(first), pool.state(waiting)) == ("Admitted", "Pending")
    leader = pool.scheduler.leader
    pool.client.apply(queues(CQ("cq", {"cpu": 8})))
    pool.run()
    assert pool.state(waiting) == "Admitted"
    assert pool.scheduler.leader is leader


def test_a_local_queue_in_a_new_namespace_takes_its_requests() -> None:
    """Requests are read from the streams of the namespaces with LocalQueues: one added
    in place brings its namespace's stream in."""
    pool = SteppedPool()
    pool.run()
    leader = pool.scheduler.leader
    assert leader is not None
    pool.client.apply("apiVersion: kuota.dev/v1alpha1\nkind: LocalQueue\n"
                      "metadata: {name: lq, namespace: team-b}\nspec: {clusterQueue: cq}\n")
    pool.run()
    assert pool.scheduler.leader is leader
    assert "team-b" in leader.intake.namespaces
    assert LOCAL_QUEUE.partition("/")[0] in leader.intake.namespaces


def test_reading_the_queue_objects_again_parses_only_those_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pool = SteppedPool()
    pool.client.apply(queues(TEAM, OTHER))
    first = rebuild.load_configs(pool.store)
    parsed: list[str] = []
    parse = rebuild.api.parse_object

    def counting(manifest: Any, **kw: Any) -> Any:
        parsed.append(f"{manifest['kind']}/{manifest['metadata']['name']}")
        return parse(manifest, **kw)

    monkeypatch.setattr(rebuild.api, "parse_object", counting)
    pool.client.apply(queues(CQ("cq", {"cpu": 8}, cohort="all")))
    pool.client.delete("LocalQueue", "default/lq-other")
    parsed.clear()  # (the client checks what it stores)
    again = rebuild.load_configs(pool.store, first.parsed)
    assert parsed == ["ClusterQueue/cq"]
    assert again.objects == rebuild.load_configs(pool.store).objects  # (parses all: fresh)
    assert ("LocalQueue", "default/lq-other") not in again.parsed._seen
