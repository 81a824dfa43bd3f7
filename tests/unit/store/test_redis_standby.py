"""A standby's warm copy of the store equals the store read whole, and a leader starting
from it decides as one that read the store itself (kuota.service.standby)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from store_builders import SteppedPool, workload_spec

from kuota.service import rebuild
from kuota.service.standby import WarmCopy
from quota.config import EngineConfig
from quota.lifecycle import State
from tests.integration.redis.harness import CQ, queues


def view(loaded: rebuild.Loaded) -> dict[str, Any]:
    """What a leader starts from, in comparable form."""
    engine = loaded.engine
    return {
        "records": {k: (r.state, r.admission, r.info.created, r.info.priority,
                        r.info.pod_sets)
                    for k, r in engine.records.items() if r.state is not State.FINISHED},
        "holding": sorted((e.info.key, e.admission) for e in engine.cache.all_holding()),
        "waiting": {cq: [info.key for info, _, _ in engine.queues.positions(cq)]
                    for cq in engine.cache.cluster_queues},
        "workloads": {k: (r.state, r.attempt, r.placement) for k, r in loaded.workloads.items()},
        "invalid": sorted(loaded.invalid),
    }


def admitted(pool: SteppedPool) -> list[str]:
    return [r.key for r in pool.store.workloads.all() if r.state is State.ADMITTED]


def warm_copy(pool: SteppedPool) -> WarmCopy:
    return WarmCopy(pool.store, EngineConfig(), lambda: pool.now)


@dataclass(frozen=True)
class Case:
    name: str
    #: Changes the store while the copy stands by (the pool's own leader deciding); may
    #: call ``look`` to have the standby catch up in between.
    change: Callable[[SteppedPool, Callable[[], None]], None]


def _submit_more(pool: SteppedPool, look: Callable[[], None]) -> None:
    for key in admitted(pool):
        pool.client.cancel(key)  # quota for the others
    for i in range(6):
        pool.submit(f"late-{i}", cpu=1 + i % 3)
    pool.run(1)
    look()  # seen pending: their admissions are known from the leader's decisions only
    pool.run()


def _cancel_admitted(pool: SteppedPool, look: Callable[[], None]) -> None:
    pool.client.cancel(admitted(pool)[0])
    pool.submit("after-cancel", cpu=2)
    pool.run()


def _bad_record(pool: SteppedPool, look: Callable[[], None]) -> None:
    pool.write_raw("bad", workload_spec("bad", count=0))
    pool.run()


def _rewritten_spec(pool: SteppedPool, look: Callable[[], None]) -> None:
    key = pool.submit("rewritten", cpu=1)
    spec = workload_spec("rewritten", cpu="1")
    spec["spec"]["podSets"][0]["count"] = 0
    pool.store.redis.hset(pool.store.keys.workload(key), "spec", json.dumps(spec))
    pool.run()


def _quota_raised(pool: SteppedPool, look: Callable[[], None]) -> None:
    pool.client.apply(queues(CQ("cq", {"cpu": 8})))  # taken in place, by both
    pool.run()


def _local_queue_added(pool: SteppedPool, look: Callable[[], None]) -> None:
    pool.client.apply(_local_queue("extra"))
    look()
    pool.client.submit(["true"], queue="default/extra", name="via-extra", requests={"cpu": 1})
    pool.run()


CASES = [
    Case("nothing changed", lambda pool, look: None),
    Case("quota freed, then admissions", _submit_more),
    Case("an admitted workload cancelled", _cancel_admitted),
    Case("a record the scheduler cannot read", _bad_record),
    Case("a spec rewritten around kuota", _rewritten_spec),
    Case("a quota raised", _quota_raised),
    Case("a LocalQueue added", _local_queue_added),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_copy_caught_up_equals_the_store_read_whole(case: Case) -> None:
    pool = SteppedPool()
    for i in range(8):
        pool.submit(f"w-{i}", cpu=1 + i % 2)
    pool.run()
    copy = warm_copy(pool)
    copy.refresh()
    case.change(pool, copy.refresh)
    pool.scheduler.lease.release()  # the copy's process takes over
    taken = copy.take()
    assert taken is not None
    loaded, position = taken
    assert view(loaded) == view(rebuild.load(pool.store))
    assert position == pool.store.events.last_id()


def test_the_copy_is_loaded_again_when_it_cannot_be_caught_up() -> None:
    pool = SteppedPool()
    pool.submit("w-0")
    pool.run()
    copy = warm_copy(pool)
    copy.refresh()
    first = copy.loaded
    copy.refresh()
    assert copy.loaded is first, "nothing changed: the copy is kept"
    pool.client.apply(_local_queue("extra"))  # taken in place
    copy.refresh()
    assert copy.loaded is first
    assert "default/extra" in copy.loaded.engine.cache.local_queues
    pool.client.apply("apiVersion: kuota.dev/v1alpha1\nkind: ResourceFlavor\n"
                      "metadata: {name: default}\nspec: {nodeLabels: {pool: gpu}}\n")
    copy.refresh()
    assert copy.loaded is first, "a flavor is taken in place too"
    assert copy.loaded.engine.cache.flavors["default"].node_labels == {"pool": "gpu"}
    # A priority class: what a leader reads only when it starts.
    pool.client.apply("apiVersion: kuota.dev/v1alpha1\nkind: WorkloadPriorityClass\n"
                      "metadata: {name: high}\nvalue: 1000\n")
    copy.refresh()
    assert copy.loaded is not first
    assert "high" in copy.loaded.configs.priority_classes


def _local_queue(name: str) -> str:
    return (f"apiVersion: kuota.dev/v1alpha1\nkind: LocalQueue\nmetadata: {{name: {name}, "
            f"namespace: default}}\nspec: {{clusterQueue: cq}}\n")


def test_a_new_leader_decides_from_the_copy_as_from_the_store() -> None:
    pools = []
    for warm in (True, False):
        pool = SteppedPool()
        for i in range(6):
            pool.submit(f"w-{i}", cpu=2)
        pool.run()
        standby = pool._new_scheduler()
        if warm:
            standby.step()  # loads its copy, finds the lease held
            assert standby.warm.loaded is not None and not standby.leading
        for i in range(3):
            pool.submit(f"late-{i}", cpu=1)
        pool.client.cancel(admitted(pool)[0])
        pool.scheduler.lease.release()
        pool.scheduler = standby
        pool.run()
        assert standby.leading and standby.terms == 1
        pools.append({r.key: (r.state, r.attempt) for r in pool.store.workloads.all()})
    assert pools[0] == pools[1]
