"""Applying many config objects at once: one tree rebuild, the same result as one by one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from admission.engine import Engine
from quota import tree as qt
from quota.cache import QuotaCache
from quota.resources import FlavorResource
from quota.workload import Admission, PodSetAdmission
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, cohort, flavor, local_queue


def objects(n: int) -> list[object]:
    out: list[object] = [flavor("default"), cohort("root"), cohort("team", "root", cpu=4)]
    for i in range(n):
        out.append(ClusterQueueBuilder(f"cq{i}").cohort("team" if i % 2 else "root")
                   .flavor("default", {"cpu": i + 1}).obj())
        out.append(local_queue(f"cq{i}", name=f"lq{i}"))
    return out


def shape(engine: Engine) -> dict[str, tuple[str | None, int]]:
    fr = FlavorResource("default", "cpu")
    return {name: (node.parent.name if node.parent else None,
                   qt.potential_available(node, fr))
            for name, node in engine.cache.snapshot().tree.queues.items()}


def apply_all(engine: Engine, objs: list[object]) -> None:
    engine.apply_all(objs)  # type: ignore[arg-type]


def apply_in_a_block(engine: Engine, objs: list[object]) -> None:
    """As the operator leading anew does: one call per object, within ``configuring``; a
    nested block and a deletion change nothing."""
    with engine.configuring():
        engine.apply(ClusterQueueBuilder("gone").flavor("default", {"cpu": 1}).obj())
        for obj in objs:
            with engine.configuring():
                engine.apply(obj)  # type: ignore[arg-type]
        engine.delete("ClusterQueue", "gone")
        assert not engine.queues.queues, "nothing reconfigured before the block ends"


@pytest.mark.parametrize("batch", [apply_all, apply_in_a_block])
def test_a_batch_rebuilds_the_tree_once_and_matches_one_by_one(
        monkeypatch: pytest.MonkeyPatch, batch: Callable[[Engine, list[object]], None]) -> None:
    one_by_one = Engine()
    for obj in objects(20):
        one_by_one.apply(obj)  # type: ignore[arg-type]
    builds = []
    original = qt.QuotaTree.build
    monkeypatch.setattr(qt.QuotaTree, "build",
                        staticmethod(lambda **kw: builds.append(1) or original(**kw)))
    batched = Engine()
    batch(batched, objects(20))
    assert len(builds) == 1
    assert shape(batched) == shape(one_by_one)
    assert set(batched.queues.queues) == set(one_by_one.queues.queues)
    assert batched.cache.inactive == one_by_one.cache.inactive


# -- a rebuild counts the usage of the workloads holding quota, summed per queue ----------

_CPU = FlavorResource("default", "cpu")
_cq = st.tuples(st.integers(0, 8), st.one_of(st.none(), st.integers(0, 8)),
                st.sampled_from(["root", "team"]))
_ops = st.lists(st.one_of(st.tuples(st.just("assume"), st.integers(0, 3), st.integers(1, 6)),
                          st.tuples(st.just("forget"), st.integers(0, 30), st.just(0))),
                max_size=30)


@settings(max_examples=200, deadline=None)
@given(cqs=st.lists(_cq, min_size=1, max_size=4), ops=_ops)
def test_a_rebuild_counts_as_adding_each_workload_in_turn(
        cqs: list[tuple[int, int | None, str]], ops: list[tuple[str, int, int]]) -> None:
    """Lending limits make a queue keep part of its quota: what spills to the cohort is
    what its local part cannot take, which depends on the queue's total alone."""
    cache = QuotaCache()
    cache.set_flavor(flavor("default"))
    cache.set_cohort(cohort("root"))
    cache.set_cohort(cohort("team", "root", cpu=2))
    for i, (nominal, lending, parent) in enumerate(cqs):
        cache.set_cluster_queue(ClusterQueueBuilder(f"cq{i}").cohort(parent).flavor(
            "default", {"cpu": nominal},
            lending=None if lending is None else {"cpu": lending}).obj())
    held: list[tuple[str, str, int]] = []  # key, queue, cpu
    for n, (op, which, cpu) in enumerate(ops):
        if op == "assume":
            cq = f"cq{which % len(cqs)}"
            info = WorkloadBuilder(f"w{n}").pod_set(count=cpu, cpu=1).obj()
            cache.assume(info, Admission(cq, (PodSetAdmission("main", cpu, {"cpu": "default"},
                                                             {"cpu": cpu * 1000}),)), 0.0)
            held.append((info.key, cq, cpu))
        elif held:
            key, _, _ = held.pop(which % len(held))
            cache.forget(key)
    cache.rebuild()
    one_by_one = qt.QuotaTree.build(
        queues={n: (q.cohort, q.quotas) for n, q in cache.cluster_queues.items()},
        cohorts={n: (c.parent, c.quotas) for n, c in cache.cohorts.items()})
    for _, cq, cpu in held:
        one_by_one.add(cq, {_CPU: cpu * 1000})

    def usage(tree: qt.QuotaTree) -> dict[str, tuple[int, list[str]]]:
        nodes = {**tree.queues, **tree.cohorts}
        return {name: (node.usage.get(_CPU, 0),
                       sorted(child.name for child in node.borrowers.get(_CPU, {})))
                for name, node in nodes.items()}

    assert usage(cache.tree) == usage(one_by_one)
