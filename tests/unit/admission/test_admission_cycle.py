"""The cycle's order and re-checks, and the engine's assume / forget / finish."""

from __future__ import annotations

import pytest

from admission import flavors
from admission.cycle import Entry, classical_order, schedule
from admission.engine import Engine
from queueing.manager import Head
from quota.config import LocalQueueConfig
from quota.lifecycle import Event, IllegalTransition, State, transition
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine_with(*cqs: ClusterQueueBuilder, wait_for_stop: bool = False) -> Engine:
    engine = Engine(wait_for_stop=wait_for_stop)
    engine.apply(flavor("f"))
    for b in cqs:
        cq = b.obj()
        engine.apply(cq)
        engine.apply(local_queue(cq.name, name=cq.name))
    return engine


def cq(name: str, cpu: int) -> ClusterQueueBuilder:
    return ClusterQueueBuilder(name).cohort("co").flavor("f", {"cpu": cpu})


def submit(engine: Engine, name: str, queue: str, cpu: int, *, priority: int = 0,
           at: float = 0.0) -> str:
    return engine.submit(WorkloadBuilder(name, queue=queue).pod_set(count=cpu, cpu=1)
                         .priority(priority).created(at).obj()).info.key


@pytest.mark.parametrize(("heads", "want_admitted"), [
    # (name, queue, cpu, priority, created): the cohort holds 8 cpu, 4 per queue.
    pytest.param([("borrows", "a", 6, 10, 0), ("own", "b", 4, 0, 1)], ["own"],
                 id="non-borrowing before borrowing, whatever the priority"),
    pytest.param([("low", "a", 3, 0, 0), ("high", "b", 3, 5, 1)], ["high", "low"],
                 id="then higher priority"),
    pytest.param([("young", "a", 5, 0, 2), ("old", "b", 5, 0, 1)], ["old"],
                 id="then older first, the other no longer fits"),
])
def test_cycle_order(heads: list[tuple[str, str, int, int, float]],
                     want_admitted: list[str]) -> None:
    engine = engine_with(cq("a", 4), cq("b", 4))
    for name, queue, cpu, priority, at in heads:
        submit(engine, name, queue, cpu, priority=priority, at=at)
    result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                      engine.cache.namespace_labels)
    assert [h.info.name for h, _ in result.admitted] == want_admitted
    assert len(result.skipped) + len(result.admitted) == len(heads)


def test_skipped_workload_is_retried_next_cycle_and_then_waits() -> None:
    engine = engine_with(cq("a", 4), cq("b", 4))
    submit(engine, "first", "a", 5, at=0)
    submit(engine, "second", "b", 5, at=1)
    first = engine.schedule(0)
    assert [h.info.name for h, _ in first.admitted] == ["first"]
    assert [v.head.info.name for v in first.skipped] == ["second"]
    second = engine.schedule(0)
    assert [v.reason for v in second.inadmissible] == ["WaitingForQuota"]
    assert engine.schedule(0).tried == 0


def test_finish_releases_quota_and_wakes_the_cohort() -> None:
    engine = engine_with(cq("a", 4), cq("b", 4))
    submit(engine, "big", "a", 8)
    engine.run_until_idle(0)
    submit(engine, "waits", "b", 2, at=1)
    engine.run_until_idle(1)
    assert engine.records["ns/waits"].pending_reason == "WaitingForQuota"
    engine.finish("ns/big", 5)
    engine.run_until_idle(5)
    assert engine.records["ns/waits"].state is State.ADMITTED
    assert engine.records["ns/big"].state is State.FINISHED


def test_forget_undoes_an_admission_exactly() -> None:
    engine = engine_with(cq("a", 4))
    submit(engine, "w", "a", 3)
    engine.run_until_idle(0)
    node = engine.cache.tree.queues["a"]
    assert sum(node.usage.values()) == 3000
    engine.forget("ns/w", 1)
    assert sum(node.usage.values()) == 0
    assert engine.records["ns/w"].state is State.PENDING
    engine.run_until_idle(1)
    assert engine.records["ns/w"].state is State.ADMITTED


def test_config_change_recounts_usage() -> None:
    engine = engine_with(cq("a", 4))
    submit(engine, "w", "a", 3)
    engine.run_until_idle(0)
    engine.apply(cq("a", 10).obj())
    assert sum(engine.cache.tree.queues["a"].usage.values()) == 3000


def test_duplicate_submission_is_refused() -> None:
    engine = engine_with(cq("a", 4))
    submit(engine, "w", "a", 1)
    with pytest.raises(ValueError, match="already exists"):
        submit(engine, "w", "a", 1)


@pytest.mark.parametrize(("state", "event", "want"), [
    (State.PENDING, Event.RESERVE, State.QUOTA_RESERVED),
    (State.QUOTA_RESERVED, Event.ADMIT, State.ADMITTED),
    (State.ADMITTED, Event.EVICT, State.PENDING),
    (State.ADMITTED, Event.FINISH, State.FINISHED),
    (State.INACTIVE, Event.ACTIVATE, State.PENDING),
    (State.FINISHED, Event.RESERVE, None),
    (State.PENDING, Event.ADMIT, None),
    (State.FINISHED, Event.EVICT, None),
])
def test_lifecycle_table(state: State, event: Event, want: State | None) -> None:
    if want is None:
        with pytest.raises(IllegalTransition, match=f"cannot {event.value}"):
            transition("ns/w", state, event)
    else:
        assert transition("ns/w", state, event) is want


def test_illegal_transition_changes_nothing() -> None:
    engine = engine_with(cq("a", 4))
    submit(engine, "w", "a", 1)
    with pytest.raises(IllegalTransition):
        engine.forget("ns/w", 0)
    assert engine.records["ns/w"].state is State.PENDING
    assert "ns/w" in engine.queues.waiting


# Kueue's TestEntryOrdering (pkg/scheduler/scheduler_test.go), in this project's terms:
# (name, borrowing height, priority, created, evicted by a pods-ready timeout at).
ORDERING_CASES = [
    ("old_borrowing", 1, 0, 0.0, None),
    ("old", 0, 0, 1.0, None),
    ("new", 0, 0, 3.0, None),
    ("high_pri_borrowing", 1, 1, 3.0, None),
    ("new_high_pri", 0, 1, 4.0, None),
    ("new_borrowing", 1, 0, 3.0, None),
    ("evicted_borrowing", 1, 0, 1.0, 2.0),
    ("recently_evicted", 0, 0, 0.0, 2.0),
    ("high_pri_borrowing_more", 2, 1, 3.0, None),
]


@pytest.mark.parametrize(("timestamp", "want_order"), [
    pytest.param("Eviction", ["new_high_pri", "old", "recently_evicted", "new",
                              "high_pri_borrowing", "old_borrowing", "evicted_borrowing",
                              "new_borrowing", "high_pri_borrowing_more"],
                 id="height, then priority, then eviction time for the evicted"),
    pytest.param("Creation", ["new_high_pri", "recently_evicted", "old", "new",
                              "high_pri_borrowing", "old_borrowing", "evicted_borrowing",
                              "new_borrowing", "high_pri_borrowing_more"],
                 id="height, then priority, then creation time"),
])
def test_classical_order(timestamp: str, want_order: list[str]) -> None:
    cq = ClusterQueueBuilder("a").flavor("f", {"cpu": 1}).obj()
    entries = []
    for name, height, priority, created, evicted_at in ORDERING_CASES:
        info = WorkloadBuilder(name).pod_set(cpu=1).priority(priority).created(created).obj()
        # What the engine queues an evicted workload by (Record.queue_order).
        queued = evicted_at if evicted_at is not None and timestamp == "Eviction" else created
        head = Head(info, cq.name, LocalQueueConfig("ns", "lq", cq.name), queued)
        entries.append(Entry(head, cq, flavors.Assignment(flavors.Mode.FIT, borrow=height)))
    assert [e.head.info.name for e in sorted(entries, key=classical_order)] == want_order


@pytest.mark.parametrize(("lender_cpu", "want_victims", "want_skipped"), [
    # The cohort holds 9 + lender cpu; a1 (3 cpu) runs in a, b2 (2) then b1 (4) in b.
    # "first" (4 cpu, a) preempts a1 and takes the one free cpu as well; "second" (5 cpu,
    # b) was nominated with b1 as its only victim.
    pytest.param(1, ["a1"], ["second"],
                 id="nominated victims no longer make room: skipped, no new victim"),
    pytest.param(2, ["a1", "b1"], [],
                 id="nominated victims still make room: both preempt"),
])
def test_preemptor_keeps_its_nominated_victims(lender_cpu: int, want_victims: list[str],
                                               want_skipped: list[str]) -> None:
    """As in Kueue's scheduler, a preemptor evicts the victims found at nomination or
    none: when an earlier decision of the cycle took the room they would make, it is
    skipped until the next cycle rather than given more victims on the changed snapshot."""
    def preempting(name: str, cpu: int) -> ClusterQueueBuilder:
        return cq(name, cpu).preemption(within_cluster_queue="LowerPriority")

    engine = engine_with(preempting("a", 4), preempting("b", 5), cq("lender", lender_cpu))
    submit(engine, "a1", "a", 3)
    submit(engine, "b2", "b", 2)
    engine.run_until_idle(0)
    submit(engine, "b1", "b", 4, at=1)
    engine.run_until_idle(1)
    submit(engine, "first", "a", 4, priority=10, at=10)
    submit(engine, "second", "b", 5, priority=10, at=11)
    result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                      engine.cache.namespace_labels)
    assert [p.target.victim.info.name for p in result.preempted] == want_victims
    assert [v.head.info.name for v in result.skipped] == want_skipped


@pytest.mark.parametrize(("reclaim", "wants_cpu", "want_admitted", "want_skipped"), [
    # a and b own 4 cpu each; a runs 3 and b 4, so 1 is free. "wants" (a, priority 10)
    # does not fit and nobody may be preempted for it (b is within its nominal quota);
    # "more" (b, 1 cpu, lower priority) is ordered after it.
    pytest.param("Never", 4, [], ["more"],
                 id="queue that cannot always reclaim: holds the cycle's quota"),
    pytest.param("LowerPriority", 4, [], ["more"],
                 id="reclaiming lower priority only: holds too"),
    pytest.param("Any", 4, ["more"], [],
                 id="reclaimWithinCohort Any: holds nothing"),
    pytest.param("Never", 5, ["more"], [],
                 id="request above the nominal quota: no preemption to wait for"),
])
def test_preemptor_without_candidates_holds_quota_for_the_cycle(
        reclaim: str, wants_cpu: int, want_admitted: list[str],
        want_skipped: list[str]) -> None:
    """Kueue's scheduler lets a head that needs preemption but finds no victim keep what
    its ClusterQueue could still use (its nominal quota, or up to its borrowing limit)
    for the rest of the cycle, unless the queue can always reclaim it (``Any``)."""
    engine = engine_with(cq("a", 4).preemption(reclaim_within_cohort=reclaim), cq("b", 4))
    submit(engine, "a-own", "a", 3)
    submit(engine, "b-own", "b", 4)
    engine.run_until_idle(0)
    submit(engine, "wants", "a", wants_cpu, priority=10, at=1)
    submit(engine, "more", "b", 1, at=2)
    result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                      engine.cache.namespace_labels)
    assert [h.info.name for h, _ in result.admitted] == want_admitted
    assert [v.head.info.name for v in result.skipped] == want_skipped
    assert [(v.head.info.name, v.reason) for v in result.inadmissible] == \
        [("wants", "WaitingForQuota")]


def test_held_quota_is_in_the_flavor_that_needs_preemption() -> None:
    """Needing preemption without a candidate ranks above no fit among flavors (Kueue's
    preemption modes), and the next flavor is still tried: flavor g can never hold 4 cpu
    for a, so a holds its share of f, which b borrows."""
    engine = Engine()
    engine.apply(flavor("f"))
    engine.apply(flavor("g"))
    for queue in (ClusterQueueBuilder("a").cohort("co").flavor("f", {"cpu": 4})
                  .flavor("g", {"cpu": 2}, group=0),
                  ClusterQueueBuilder("b").cohort("co").flavor("f", {"cpu": 4})
                  .flavor("g", {"cpu": 0}, group=0)):
        engine.apply(queue.obj())
        engine.apply(local_queue(queue.obj().name, name=queue.obj().name))
    submit(engine, "b-own", "b", 7)
    engine.run_until_idle(0)
    submit(engine, "wants", "a", 4, priority=10, at=1)
    submit(engine, "more", "b", 1, at=2)
    result = schedule(engine.cache.snapshot(), engine.queues.heads(),
                      engine.cache.namespace_labels)
    assert [v.head.info.name for v in result.skipped] == ["more"]
    assert [(v.head.info.name, v.reason) for v in result.inadmissible] == \
        [("wants", "WaitingForQuota")]
