"""Cycles cut short (``enough``): a caller that must answer in time ends a cycle's
nomination early. The heads it did not nominate wait untouched, the quota they claimed
stays theirs, and the next cycle nominates them first."""

from __future__ import annotations

from collections.abc import Callable

from admission.cycle import schedule
from quota.config import PreemptionConfig
from quota.resources import FlavorResource
from tests.builders import amount
from tests.unit.admission.test_admission_cycle import cq, engine_with, submit


def after(nominations: int) -> Callable[[], bool]:
    """An ``enough`` that ends a cycle once it has nominated ``nominations`` heads."""
    asked = iter(range(1, 10**6))
    return lambda: next(asked) >= nominations


def test_a_cycle_cut_short_decides_on_the_heads_it_nominated_and_leaves_the_rest() -> None:
    engine = engine_with(cq("a", 4), cq("b", 4), cq("c", 4))
    for q in "abc":
        submit(engine, f"{q}0", q, 1)
    result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                      engine.cache.namespace_labels, enough=after(2))
    assert [h.info.name for h, _ in result.admitted] == ["a0", "b0"]
    assert [h.info.name for h in result.untried] == ["c0"]
    assert result.tried == 2


def test_an_untried_heads_claim_is_held_before_any_decision() -> None:
    # The cohort holds 8 cpu. "wide" in a asks 6, borrowing 2 of b's; "claimer" in b,
    # left untried, claimed b's 4 for when its victims are gone.
    engine = engine_with(cq("a", 4), cq("b", 4))
    submit(engine, "wide", "a", 6)
    claimer = submit(engine, "claimer", "b", 4)
    cpu = FlavorResource("f", "cpu")
    for held, want_admitted in (({}, ["wide"]), ({claimer: ("b", {cpu: amount(4)})}, [])):
        result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                          engine.cache.namespace_labels, enough=after(1), held=held)
        assert [h.info.name for h in result.untried] == ["claimer"]
        assert [h.info.name for h, _ in result.admitted] == want_admitted


def test_cycles_cut_short_give_every_queue_its_turn() -> None:
    engine = engine_with(cq("a", 4), cq("b", 4), cq("c", 4))
    for i in range(2):
        for q in "abc":
            submit(engine, f"{q}{i}", q, 1, at=i)
    order = []
    while (result := engine.schedule(0, enough=lambda: True)).tried:
        assert len(result.admitted) == 1  # (one head nominated a cycle)
        order += [h.info.name for h, _ in result.admitted]
    # Nominated from where the last cycle stopped: without that, a's heads would all go
    # first, and under a steady load the queues at the end would wait for ever.
    assert order == ["a0", "b0", "c0", "a1", "b1", "c1"]


def test_a_preemptor_left_untried_keeps_the_quota_its_victims_freed() -> None:
    lower = PreemptionConfig(within_cluster_queue="LowerPriority")
    engine = engine_with(cq("a", 4), cq("b", 4).set(preemption=lower), wait_for_stop=True)
    submit(engine, "filler", "a", 4)  # (a has nothing to lend)
    victim = submit(engine, "victim", "b", 4)
    engine.run_until_idle(0)
    preemptor = submit(engine, "preemptor", "b", 4, priority=10, at=1)
    engine.run_until_idle(1)
    assert engine.records[victim].state.value == "Evicting"
    engine.stopped(victim, 2)  # its quota is free, claimed by the preemptor
    submit(engine, "wide", "a", 4, at=3)  # would borrow what the victim freed
    # a's head is nominated first and the cycle ends there: the preemptor is not tried.
    cut = engine.schedule(3, enough=lambda: True)
    assert [h.info.name for h in cut.untried] == ["preemptor"]
    assert cut.admitted == []
    # The next cycle starts with the preemptor, which takes its quota.
    resumed = engine.schedule(3, enough=lambda: True)
    assert [h.info.key for h, _ in resumed.admitted] == [preemptor]
