"""Engine with ``wait_for_stop``: an evicted workload keeps its quota until its pods are gone."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from admission.engine import Engine
from admission.events import Kind
from quota.config import EngineConfig, PodsReadyConfig, PreemptionConfig, RequeuingStrategy
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


def engine(config: EngineConfig | None = None) -> Engine:
    e = Engine(config=config or EngineConfig(), rng=random.Random(1), wait_for_stop=True)
    e.apply(flavor("f"))
    e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4})
            .set(preemption=PreemptionConfig(within_cluster_queue="LowerPriority")).obj())
    e.apply(local_queue("cq", name="lq"))
    return e


def submit(e: Engine, name: str, cpu: int = 4, priority: int = 0, at: float = 0.0) -> str:
    return e.submit(WorkloadBuilder(name).pod_set(count=cpu, cpu=1).priority(priority)
                    .created(at).obj()).info.key


def admitted(e: Engine) -> str:
    """A workload taking the whole queue, admitted at 0 (the outbox emptied)."""
    key = submit(e, "running")
    e.run_until_idle(0)
    e.drain_outbox()
    return key


def evict(e: Engine, key: str, now: float) -> None:
    e.evict(key, now, "Preempted", "InClusterQueue", "to make room")


def deactivate(e: Engine, key: str, now: float) -> None:
    e.deactivate(key, now, "InactiveWorkload", "spec.active is false")


def end(e: Engine, key: str, now: float) -> None:
    e.finishing(key, now)  # (no event: the adapter reports the finish)


class TestEvicting:
    @pytest.mark.parametrize(("stop", "want_kinds", "want_state", "want_queued"), [
        (evict, [Kind.EVICTING, Kind.EVICTED], State.PENDING, True),
        (deactivate, [Kind.EVICTING, Kind.DEACTIVATED], State.INACTIVE, False),
        (end, [Kind.FINISHED], State.FINISHED, False),
    ])
    def test_quota_is_held_until_stopped(
            self, stop: Callable[[Engine, str, float], None], want_kinds: list[Kind],
            want_state: State, want_queued: bool) -> None:
        e = engine()
        key = admitted(e)
        stop(e, key, 1)
        record = e.records[key]
        assert record.state is State.EVICTING
        assert e.cache.holding(key) is not None and record.admission is not None
        e.stopped(key, 2)
        assert record.state is want_state and e.cache.holding(key) is None
        assert [ev.kind for ev in e.drain_outbox()] == want_kinds
        assert (e.queues.cluster_queue_of(key) is not None) is want_queued

    def test_the_evicting_event_carries_the_admission_and_the_reasons(self) -> None:
        e = engine()
        key = admitted(e)
        admission = e.records[key].admission
        evict(e, key, 1)
        (event,) = e.drain_outbox()
        assert (event.kind, event.reason, event.detail, event.admission) == \
            (Kind.EVICTING, "Preempted", "InClusterQueue", admission)

    @pytest.mark.parametrize(("again", "want_kinds"), [
        (evict, []),  # already being evicted: nothing new
        (deactivate, []),  # becomes a deactivation once stopped
    ])
    def test_a_second_eviction_changes_nothing_now(
            self, again: Callable[[Engine, str, float], None], want_kinds: list[Kind]) -> None:
        e = engine()
        key = admitted(e)
        evict(e, key, 1)
        e.drain_outbox()
        again(e, key, 2)
        assert [ev.kind for ev in e.drain_outbox()] == want_kinds
        assert e.records[key].state is State.EVICTING

    def test_reactivating_while_stopping_requeues_once_stopped(self) -> None:
        e = engine()
        key = admitted(e)
        deactivate(e, key, 1)
        e.activate(key, 2)
        e.stopped(key, 3)
        assert e.records[key].state is State.PENDING

    def test_finishing_while_stopping_releases_at_once(self) -> None:
        e = engine()
        key = admitted(e)
        evict(e, key, 1)
        e.finish(key, 2, "the Job was deleted")
        assert e.records[key].state is State.FINISHED and e.cache.holding(key) is None
        e.stopped(key, 3)  # late news changes nothing
        assert e.records[key].state is State.FINISHED

    def test_one_stopping_because_it_ended_is_finished_despite_an_earlier_eviction(
            self) -> None:
        e = engine()
        key = admitted(e)
        evict(e, key, 1)
        e.stopped(key, 2)
        e.run_until_idle(3)  # admitted again
        end(e, key, 4)
        e.stopped(key, 5)  # not requeued for the eviction of its first attempt
        assert e.records[key].state is State.FINISHED and e.cache.holding(key) is None
        assert e.queues.cluster_queue_of(key) is None

    def test_stopped_ignores_workloads_not_evicting(self) -> None:
        e = engine()
        key = admitted(e)
        e.stopped(key, 1)
        assert e.records[key].state is State.ADMITTED and e.drain_outbox() == []


def preempting() -> tuple[Engine, str, str]:
    """An engine where "high" preempted "low", whose pods are stopping."""
    e = engine()
    low = submit(e, "low", priority=0)
    e.run_until_idle(0)
    high = submit(e, "high", priority=10, at=1)
    e.run_until_idle(1)
    return e, low, high


class TestPreemptionWaits:
    def test_a_preemptor_waits_for_its_victim_to_stop(self) -> None:
        e, low, high = preempting()
        assert e.records[low].state is State.EVICTING
        assert e.records[high].state is State.PENDING
        assert e.records[high].pending_reason == "Preempting"
        e.run_until_idle(2)  # chosen again, evicted no further, still waiting
        assert e.records[high].state is State.PENDING
        assert [ev.kind for ev in e.drain_outbox()] == [Kind.ADMITTED, Kind.EVICTING]
        e.stopped(low, 3)
        e.run_until_idle(3)
        assert e.records[high].state is State.ADMITTED
        assert e.records[low].state is State.PENDING

    def test_a_victim_already_evicting_is_chosen_before_another(self) -> None:
        e = engine()
        first = submit(e, "first", cpu=2, priority=0)
        second = submit(e, "second", cpu=2, priority=0, at=1)
        e.run_until_idle(1)
        evict(e, second, 2)  # e.g. its pods were not ready in time
        submit(e, "high", cpu=2, priority=10, at=3)
        e.run_until_idle(3)
        assert e.records[first].state is State.ADMITTED  # the newer one would have been first
        assert e.records[second].state is State.EVICTING

    def test_a_preemptor_ended_while_waiting_gives_up_its_claim(self) -> None:
        # The preemptor claims the quota its victim will free. The adapters finish a
        # workload and drop its record (the operator when the Workload is deleted, the Redis
        # leader at once): the next cycle looked the claim's record up, and failed.
        e, low, high = preempting()
        e.finish(high, 2)  # cancelled while its victim stops
        del e.records[high]
        e.stopped(low, 3)
        e.run_until_idle(4)
        assert e.records[low].state is State.ADMITTED  # the quota claimed is free again


class TestPodsReady:
    def test_a_pods_ready_timeout_backs_off_from_when_the_pods_stopped(self) -> None:
        ready = PodsReadyConfig(timeout=30, requeuing=RequeuingStrategy(
            backoff_limit_count=5, backoff_base_seconds=10))
        e = engine(EngineConfig(wait_for_pods_ready=ready, backoff_jitter=0.0))
        key = submit(e, "stuck")
        e.run_until_idle(0)
        e.run_until_idle(30)
        record = e.records[key]
        assert record.state is State.EVICTING and e.next_wakeup() is None
        e.stopped(key, 35)
        assert record.state is State.PENDING and record.requeue_at == 45
