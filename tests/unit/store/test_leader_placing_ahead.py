"""Gangs are placed while Redis stores their admissions, as if stored: what was placed
for an admission Redis refused must give its nodes back."""

from __future__ import annotations

from typing import Any

import pytest

from kuota.service import decisions
from tests.unit.store.store_builders import SteppedPool


def test_a_gang_placed_ahead_of_an_admission_redis_refused_gives_its_nodes_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The first admission is refused (cancelled just before): the node it was placed on
    # ahead goes to the next gang in the same step.
    pool = SteppedPool()
    pool.store.nodes.register("n1", pool="p", capacity={"cpu": 1000}, labels={}, devices=[],
                              now=pool.now)
    first, second = pool.submit("first", cpu=1), pool.submit("second", cpu=1)
    apply = decisions.apply

    def cancel_first_then_apply(leader: Any, events: Any, now: float) -> Any:
        if pool.state(first) == "Pending":
            pool.client.cancel(first)
        return apply(leader, events, now)

    monkeypatch.setattr(decisions, "apply", cancel_first_then_apply)
    pool.run(steps=1)
    assert pool.state(first) == "Finished"
    assert pool.state(second) == "Admitted"
    assert pool.store.workloads.get(second).placement == ("n1",)
