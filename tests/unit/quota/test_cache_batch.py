"""Applying many config objects at once: one tree rebuild, the same result as one by one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from admission.engine import Engine
from quota import tree as qt
from quota.resources import FlavorResource
from tests.builders import ClusterQueueBuilder, cohort, flavor, local_queue


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
