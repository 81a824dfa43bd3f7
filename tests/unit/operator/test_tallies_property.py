"""Queue figures kept between status syncs equal figures counted afresh.

:class:`kuota.operator.tallies.Tallies` counts a queue again only when the engine
stamped it (:mod:`admission.changes`). Whatever the engine went through — submissions,
cycles with preemption, admission checks holding a reservation, evictions that wait
for their pods, deactivations, finishes, reservations forgotten, restores — a reader
that kept its figures across all of it must see what one pass over every workload
sees. A state change that forgot to stamp its queues shows up here as a stale count.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from admission.engine import READY, REJECTED, RETRY, Engine
from kuota.operator import tallies
from quota.config import AdmissionCheckConfig
from quota.lifecycle import HOLDS_QUOTA, State
from quota.workload import Admission, PodSetAdmission, WorkloadInfo
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue

CLUSTER_QUEUES = ("cq0", "cq1", "cq2")
#: Two LocalQueues point at cq0; cq2 admits through an AdmissionCheck.
LOCAL_QUEUES = (("lq0", "cq0"), ("lq0b", "cq0"), ("lq1", "cq1"), ("lq2", "cq2"))

_pick = st.integers(0, 50)
_op = st.one_of(
    st.tuples(st.just("submit"), st.tuples(st.integers(0, 3), st.integers(1, 4),
                                           st.integers(0, 2))),
    st.tuples(st.just("cycle"), st.booleans()),
    st.tuples(st.sampled_from(["finish", "finishing", "evict", "stopped", "deactivate",
                               "activate", "forget", "ready", "retry", "reject",
                               "restore"]), _pick),
)


def engine_with_queues(wait_for_stop: bool) -> Engine:
    engine = Engine(wait_for_stop=wait_for_stop)
    engine.apply(flavor("x"))
    engine.apply(AdmissionCheckConfig("check", "manual"))
    for i, name in enumerate(CLUSTER_QUEUES):
        builder = (ClusterQueueBuilder(name).cohort("co").flavor("x", {"cpu": 4},
                                                                 borrowing={"cpu": 2})
                   .preemption(within_cluster_queue="LowerPriority",
                               reclaim_within_cohort="Any"))
        if i == 2:
            builder.set(admission_checks=(("check", ()),))
        engine.apply(builder.obj())
    for lq, cq in LOCAL_QUEUES:
        engine.apply(local_queue(cq, name=lq))
    return engine


def fresh(engine: Engine) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every queue's figures from one pass over the workloads."""
    return ({name: tallies.cluster_queue(engine, cq)
             for name, cq in engine.cache.cluster_queues.items()},
            tallies.local_queues(engine))


def pick(engine: Engine, n: int, *states: State) -> str | None:
    keys = [k for k, r in engine.records.items() if r.state in states]
    return keys[n % len(keys)] if keys else None


def apply(engine: Engine, op: str, arg: Any, n: int, now: float) -> None:
    if op == "submit":
        lq, cpus, priority = arg
        engine.submit(WorkloadBuilder(f"w{n}", queue=LOCAL_QUEUES[lq][0])
                      .pod_set("main", count=cpus, cpu=1).priority(priority).created(now).obj())
    elif op == "cycle":
        if arg:
            engine.run_until_idle(now)
        else:
            engine.schedule(now)
    elif op == "restore":  # a stored admission read back (a takeover), into cq1
        key = pick(engine, arg, State.PENDING)
        if key is not None and engine.records[key].info.local_queue_key == "ns/lq1":
            info = engine.records[key].info
            # (a restore counts what the store says, whether it fits or not)
            engine.restore(info, stored_admission(info), now, admitted=bool(arg % 2))
    else:
        states = {"finish": (State.PENDING, State.QUOTA_RESERVED, State.ADMITTED,
                             State.INACTIVE, State.EVICTING),
                  "finishing": HOLDS_QUOTA, "evict": HOLDS_QUOTA,
                  "stopped": (State.EVICTING,),
                  "deactivate": (State.PENDING, State.QUOTA_RESERVED, State.ADMITTED),
                  "activate": (State.INACTIVE,),
                  "forget": (State.QUOTA_RESERVED, State.ADMITTED),
                  "ready": (State.QUOTA_RESERVED,), "retry": (State.QUOTA_RESERVED,),
                  "reject": (State.QUOTA_RESERVED,)}[op]
        key = pick(engine, arg, *states)
        if key is None:
            return
        if op == "finish":
            engine.finish(key, now)
        elif op == "finishing":
            engine.finishing(key, now)
        elif op == "evict":
            engine.evict(key, now, "Preempted")
        elif op == "stopped":
            engine.stopped(key, now)
        elif op == "deactivate":
            engine.deactivate(key, now, "InactiveWorkload")
        elif op == "activate":
            engine.activate(key, now)
        elif op == "forget":
            engine.forget(key, now)
        else:
            verdict = {"ready": READY, "retry": RETRY, "reject": REJECTED}[op]
            engine.set_check(key, "check", verdict, now)
    engine.drain_outbox()


def stored_admission(info: WorkloadInfo) -> Admission:
    return Admission("cq1", tuple(PodSetAdmission(ps.name, ps.count, {"cpu": "x"},
                                                  {r: v * ps.count
                                                   for r, v in ps.requests.items()})
                                  for ps in info.pod_sets))


@settings(max_examples=400, deadline=None)
@given(wait_for_stop=st.booleans(), ops=st.lists(_op, max_size=40),
       looks=st.lists(st.booleans(), min_size=40, max_size=40))
def test_kept_figures_equal_a_fresh_count(wait_for_stop: bool, ops: list[tuple[str, Any]],
                                          looks: list[bool]) -> None:
    engine = engine_with_queues(wait_for_stop)
    kept = tallies.Tallies()
    for n, ((op, arg), look) in enumerate(zip(ops, looks, strict=False)):
        apply(engine, op, arg, n, float(n))
        if not look:  # (a reader does not look after every change)
            continue
        want_cluster_queues, want_local_queues = fresh(engine)
        assert kept.cluster_queues(engine) == want_cluster_queues
        assert kept.local_queues(engine) == want_local_queues
    want_cluster_queues, want_local_queues = fresh(engine)
    assert kept.cluster_queues(engine) == want_cluster_queues
    assert kept.local_queues(engine) == want_local_queues


def test_unchanged_queues_give_the_very_figures_counted_before() -> None:
    engine = engine_with_queues(wait_for_stop=False)
    for n in range(3):
        engine.submit(WorkloadBuilder(f"w{n}", queue="lq0").pod_set("main", count=2, cpu=1)
                      .created(float(n)).obj())
    engine.run_until_idle(3.0)
    kept = tallies.Tallies()
    first_cqs, first_lqs = kept.cluster_queues(engine), kept.local_queues(engine)
    engine.submit(WorkloadBuilder("w9", queue="lq1").pod_set("main", count=1, cpu=1)
                  .created(4.0).obj())
    engine.run_until_idle(4.0)
    second_cqs, second_lqs = kept.cluster_queues(engine), kept.local_queues(engine)
    assert second_cqs["cq0"] is first_cqs["cq0"]
    assert second_lqs["ns/lq0"] is first_lqs["ns/lq0"]
    assert second_cqs["cq1"] is not first_cqs.get("cq1")
    assert second_cqs["cq1"].admitted == 1
    assert second_lqs["ns/lq1"].admitted == 1
