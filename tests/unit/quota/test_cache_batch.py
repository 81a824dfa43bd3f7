"""Config changes and the quota tree: many objects applied at once rebuild it once, with the
same result as one by one; a rebuild counts usage summed per queue; a quota changed in
place recounts its own cohort tree only, with the figures a rebuild gives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

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


# -- a quota changed in place recounts its own cohort tree, and matches a rebuild ----------

_quota = st.tuples(st.integers(0, 8), st.one_of(st.none(), st.integers(0, 8)),
                   st.one_of(st.none(), st.integers(0, 8)))  # nominal, borrowing, lending
_change = st.one_of(st.tuples(st.just("queue"), st.integers(0, 5), _quota),
                    st.tuples(st.just("cohort"), st.sampled_from(["root", "team", "other"]),
                              _quota))


def _queue(i: int, parent: str | None, quota: tuple[int, int | None, int | None]) -> object:
    nominal, borrowing, lending = quota
    builder = ClusterQueueBuilder(f"cq{i}")
    if parent is not None:
        builder = builder.cohort(parent)
    return builder.flavor("default", {"cpu": nominal},
                          borrowing=None if borrowing is None else {"cpu": borrowing},
                          lending=None if lending is None else {"cpu": lending}).obj()


def _figures(cache: QuotaCache) -> dict[str, object]:
    """Every number a decision reads from the tree, per node."""
    tree = cache.tree
    return {
        **{name: (node.parent.name if node.parent else None, dict(node.subtree),
                  dict(node.usage), sorted(c.name for c in node.borrowers.get(_CPU, {})))
           for name, node in {**tree.queues, **tree.cohorts}.items()},
        **{f"available {name}": (qt.available(node, _CPU), qt.potential_available(node, _CPU))
           for name, node in tree.queues.items()},
        "inactive": dict(cache.inactive)}


@settings(max_examples=300, deadline=None)
@given(parents=st.lists(st.sampled_from(["root", "team", "other", None]), min_size=1,
                        max_size=6),
       quotas=st.lists(_quota, min_size=6, max_size=6),
       held=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), max_size=12),
       changes=st.lists(_change, min_size=1, max_size=6))
def test_a_quota_changed_in_place_matches_a_rebuild(
        parents: list[str | None],
        quotas: list[tuple[int, int | None, int | None]], held: list[tuple[int, int]],
        changes: list[tuple[str, object, tuple[int, int | None, int | None]]]) -> None:
    """Two cohort trees (root with team below it, and other) and lone queues: a quota
    changed anywhere recounts only its own tree, and every figure — subtree quota, usage,
    borrowers, what each queue can use — is what a rebuild from scratch gives."""
    cache = QuotaCache()
    cache.set_flavor(flavor("default"))
    for name, parent in (("root", None), ("team", "root"), ("other", None)):
        cache.set_cohort(cohort(name, parent, cpu=2))
    for i, parent in enumerate(parents):
        cache.set_cluster_queue(_queue(i, parent, quotas[i]))  # type: ignore[arg-type]
    for n, (which, cpu) in enumerate(held):
        cq = f"cq{which % len(parents)}"
        info = WorkloadBuilder(f"w{n}").pod_set(count=cpu, cpu=1).obj()
        cache.assume(info, Admission(cq, (PodSetAdmission("main", cpu, {"cpu": "default"},
                                                         {"cpu": cpu * 1000}),)), 0.0)
    builds: list[int] = []
    original = qt.QuotaTree.build
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(qt.QuotaTree, "build",
                      staticmethod(lambda **kw: builds.append(1) or original(**kw)))
        _change_each(cache, parents, changes)
    assert len(builds) == len(changes), "a quota change rebuilt the whole tree"


def _change_each(cache: QuotaCache, parents: list[str | None],
                 changes: list[tuple[str, object, tuple[int, int | None, int | None]]]) -> None:
    """Each change, its figures then compared with a rebuild's (one rebuild each)."""
    for kind, which, (nominal, borrowing, lending) in changes:
        if kind == "queue":
            i = int(str(which)) % len(parents)
            cache.set_cluster_queue(_queue(  # type: ignore[arg-type]
                i, parents[i], (nominal, borrowing, lending)))
        else:
            old = cache.cohorts[str(which)]
            cache.set_cohort(replace(old, quotas={_CPU: qt.CellQuota(
                nominal * 1000, None if borrowing is None else borrowing * 1000,
                None if lending is None else lending * 1000)}))
        incremental = _figures(cache)
        cache.rebuild()
        assert incremental == _figures(cache)
