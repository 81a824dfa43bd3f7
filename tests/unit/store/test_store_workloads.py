"""Workload writes: atomic, idempotent, fenced, and only along the lifecycle table."""

from __future__ import annotations

import pytest
from store_builders import admit, lead, new_store, node, place, running_gang, submit

from queueing.store import (
    AlreadyExists,
    Conflict,
    NotFound,
    Outcome,
    PodPhase,
    PodRef,
    WorkloadRecord,
)
from queueing.store.pods import PodExit, PodStart
from quota.lifecycle import State


class TestSubmit:
    def test_stores_a_pending_workload_and_posts_an_event(self) -> None:
        store = new_store()
        assert submit(store) is True
        record = store.workloads.get("ns/w")
        assert (record.state, record.attempt, record.queue) == (State.PENDING, 0, "ns/lq")
        assert [e.key for e in store.events.read("0-0", block_ms=None)] == ["ns/w"]

    def test_a_retried_submission_is_a_no_op(self) -> None:
        store = new_store()
        submit(store, submission="same")
        assert submit(store, submission="same") is False
        assert len(store.events.read("0-0", block_ms=None)) == 1

    def test_another_submission_of_a_live_name_is_refused(self) -> None:
        store = new_store()
        submit(store, submission="first")
        with pytest.raises(AlreadyExists, match="ns/w: already exists and is Pending"):
            submit(store, submission="second")

    def test_a_finished_name_may_be_reused_and_keeps_counting_attempts(self) -> None:
        store = new_store()
        submit(store)
        admit(store, lead(store))  # not placed yet: no pod to wait for
        store.workloads.cancel("ns/w", now=5.0)
        assert submit(store, submission="again") is True
        record = store.workloads.get("ns/w")
        assert (record.state, record.attempt) == (State.PENDING, 1)


class TestAdmit:
    @pytest.mark.parametrize(("case", "want_status", "want_state", "want_attempt"), [
        ("first", "ok:1", State.ADMITTED, 1),
        ("retried decision", "ok:1", State.ADMITTED, 1),
        ("stale attempt", "stale:1", State.ADMITTED, 1),
        ("deposed leader", "fenced", State.PENDING, 0),
        ("finished meanwhile", "state:Finished", State.FINISHED, 0),
    ])
    def test_admission_outcomes(self, case: str, want_status: str, want_state: State,
                                want_attempt: int) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        if case == "first":
            status = admit(store, holder)
        elif case == "retried decision":
            admit(store, holder, decision="d7")
            status = admit(store, holder, decision="d7")
        elif case == "stale attempt":
            admit(store, holder, decision="d1")
            status = admit(store, holder, decision="d2")
        elif case == "deposed leader":
            store.redis.delete(store.keys.lease)
            assert lead(store, "s2") != holder
            status = admit(store, holder)
        else:
            store.workloads.cancel("ns/w", now=1.5)
            status = admit(store, holder)
        record = store.workloads.get("ns/w")
        assert status == want_status
        assert (record.state, record.attempt) == (want_state, want_attempt)

    def test_the_admission_is_stored_whole(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        admit(store, holder, pods=3)
        record = store.workloads.get("ns/w")
        assert record.admission is not None
        assert record.admission.usage() == {("default", "cpu"): 3000}
        assert (record.cluster_queue, record.pods, record.placement) == ("cq", 3, ())
        assert [h["event"] for h in store.workloads.history("ns/w")] == ["Submitted", "Admitted"]


class TestPlace:
    def test_all_pods_or_none(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        admit(store, holder, pods=2)
        a, b = node(store, "a"), node(store, "b")
        store.nodes.leave("b", b, reason="test", now=2.5)
        assert place(store, holder, "ns/w", 1, [("a", a), ("b", b)]) == "node:b"
        assert store.pods.get(PodRef("ns/w", 1, 0)) is None
        assert store.nodes.pod_ids(["a"]) == {"a": set()}
        assert place(store, holder, "ns/w", 1, [("a", a), ("a", a)]) == "ok"
        assert store.nodes.pod_ids(["a"])["a"] == {"ns/w:1:0", "ns/w:1:1"}
        assert store.workloads.get("ns/w").placement == ("a", "a")

    def test_a_node_that_registered_again_since_is_refused(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        admit(store, holder)
        old = node(store, "a")
        node(store, "a", replace=True)
        assert place(store, holder, "ns/w", 1, [("a", old)]) == "node:a"

    def test_placing_twice_the_same_way_is_a_no_op(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        admit(store, holder)
        a = node(store, "a")
        assert place(store, holder, "ns/w", 1, [("a", a)]) == "ok"
        assert place(store, holder, "ns/w", 1, [("a", a)]) == "ok:again"


class TestPodReports:
    def test_the_last_pod_exiting_zero_finishes_the_workload(self) -> None:
        store = new_store()
        _, refs = running_gang(store, pods=2)
        assert exit_pod(store, refs[0], 0) == "ok:Succeeded"
        assert store.workloads.get("ns/w").state is State.ADMITTED
        assert exit_pod(store, refs[1], 0) == "ok:Succeeded"
        record = store.workloads.get("ns/w")
        assert (record.state, record.outcome) == (State.FINISHED, Outcome.SUCCEEDED)
        assert store.nodes.pod_ids(["n0", "n1"]) == {"n0": set(), "n1": set()}

    def test_a_repeated_exit_report_changes_nothing(self) -> None:
        store = new_store()
        _, refs = running_gang(store, pods=2)
        exit_pod(store, refs[0], 0)
        assert exit_pod(store, refs[0], 0) == "ok:Succeeded"
        assert store.workloads.get("ns/w").pods_done == 1

    @pytest.mark.parametrize(
        ("pods", "backoff_limit", "want_state", "want_after", "want_final", "want_outcome",
         "want_reason"), [
            (2, 0, State.EVICTING, "finish", State.FINISHED, Outcome.FAILED,
             "BackoffLimitExceeded"),
            (2, 1, State.EVICTING, "requeue", State.PENDING, Outcome.NONE, "PodFailed"),
            (1, 0, State.FINISHED, "", State.FINISHED, Outcome.FAILED, "BackoffLimitExceeded"),
            (1, 1, State.PENDING, "", State.PENDING, Outcome.NONE, "PodFailed"),
        ])
    def test_a_failed_pod_retries_or_fails_the_whole_gang_once_its_mates_stopped(
            self, pods: int, backoff_limit: int, want_state: State, want_after: str,
            want_final: State, want_outcome: Outcome, want_reason: str) -> None:
        store = new_store()
        holder, refs = running_gang(store, pods=pods, backoff_limit=backoff_limit)
        exit_pod(store, refs[0], 3, pods=pods)
        record = store.workloads.get("ns/w")
        assert (record.state, record.after, record.outcome, record.reason) == (
            want_state, want_after, want_outcome, want_reason)
        for mate in refs[1:]:
            pod = store.pods.get(mate)
            assert pod is not None and pod.stop, "the other pods must be asked to stop"
            assert store.workloads.stopped_many(holder, [record], now=9.5) == ["running"], \
                "the quota is held while a gang mate still runs"
            store.pods.exit(mate, node=f"n{mate.index}", pod_count=pods, exit_code=143,
                            stopped=True, message="stopped", pid=2, now=10.0)
        if want_state is State.EVICTING:
            assert store.workloads.stopped_many(holder, [record], now=10.5) == [
                f"ok:{want_final}"]
        record = store.workloads.get("ns/w")
        assert (record.state, record.after, record.outcome) == (want_final, "", want_outcome)
        assert record.admission is None or want_final is State.FINISHED

    @pytest.mark.parametrize(("case", "want_status"), [
        ("deposed leader", "fenced"),
        ("older attempt", "stale:1"),
        ("not evicting", "state:Admitted"),
    ])
    def test_completing_a_stop_is_fenced_and_checked(self, case: str, want_status: str) -> None:
        store = new_store()
        holder, _ = running_gang(store, pods=1, start=False)
        record = store.workloads.get("ns/w")
        if case == "deposed leader":
            holder = "s9|token"
        elif case == "older attempt":
            record = WorkloadRecord("ns/w", State.EVICTING, attempt=0)
        assert store.workloads.stopped_many(holder, [record], now=5.0) == [want_status]

    def test_cancelling_a_running_workload_finishes_it_once_its_pods_stopped(self) -> None:
        store = new_store()
        holder, [ref] = running_gang(store, pods=1)
        store.workloads.cancel("ns/w", now=5.0)
        record = store.workloads.get("ns/w")
        assert (record.state, record.after, record.outcome) == (
            State.EVICTING, "finish", Outcome.CANCELLED)
        with pytest.raises(AlreadyExists, match="is Evicting"):
            submit(store, submission="again")
        store.pods.exit(ref, node="n0", pod_count=1, exit_code=143, stopped=True,
                        message="stopped", pid=2, now=6.0)
        assert store.workloads.stopped_many(holder, [record], now=6.5) == ["ok:Finished"]
        record = store.workloads.get("ns/w")
        assert (record.state, record.outcome, record.finished_at) == (
            State.FINISHED, Outcome.CANCELLED, 6.5)
        assert submit(store, submission="again") is True

    def test_a_pod_asked_to_stop_before_it_started_never_runs(self) -> None:
        store = new_store()
        _, refs = running_gang(store, pods=1, start=False)
        store.workloads.cancel("ns/w", now=5.0)
        epoch = store.nodes.get("n0").epoch
        assert store.pods.start(refs[0], node="n0", epoch=epoch, devices="", now=6.0) == "stopped"
        pod = store.pods.get(refs[0])
        assert pod is not None and pod.state is PodPhase.STOPPED
        assert store.nodes.pod_ids(["n0"]) == {"n0": set()}

    def test_a_pod_asked_to_stop_whose_lost_start_runs_holds_its_node_until_it_exits(
            self) -> None:
        # The store lost the pod's start, so it is still Placed while its process runs on
        # the worker: asked to stop, it keeps its node (and its workload's quota) until the
        # process's exit is reported, not from the moment the worker learns of the stop.
        store = new_store()
        holder, refs = running_gang(store, pods=1, start=False)
        store.workloads.cancel("ns/w", now=5.0)
        epoch = store.nodes.get("n0").epoch
        assert store.pods.start(refs[0], node="n0", epoch=epoch, devices="", now=6.0,
                                running=True) == "stop"
        pod = store.pods.get(refs[0])
        assert pod is not None and pod.state is PodPhase.PLACED
        assert store.nodes.pod_ids(["n0"]) == {"n0": {refs[0].id}}
        record = store.workloads.get("ns/w")
        assert store.workloads.stopped_many(holder, [record], now=6.5) == ["running"]
        assert store.pods.exit(refs[0], node="n0", pod_count=1, exit_code=143, stopped=True,
                               message="stopped", pid=2, now=7.0) == "ok:Stopped"
        assert store.nodes.pod_ids(["n0"]) == {"n0": set()}
        assert store.workloads.stopped_many(holder, [record], now=7.5) == ["ok:Finished"]

    def test_an_exit_from_a_node_the_pod_is_no_longer_placed_on_changes_nothing(
            self) -> None:
        # Redis lost the placement a process ran for (its last second rolled back) and the
        # pod, same id, was placed again on another node: the old process's exit must not
        # end the new placement — it would leave the pod in that node's set for good.
        store = new_store()
        _, refs = running_gang(store, pods=1, start=False)
        assert store.pods.exit(refs[0], node="n1", pod_count=1, exit_code=3, stopped=False,
                               message="exit 3", pid=7, now=6.0) == "elsewhere"
        pod = store.pods.get(refs[0])
        assert pod is not None and pod.state is PodPhase.PLACED and pod.node == "n0"
        assert store.nodes.pod_ids(["n0"]) == {"n0": {refs[0].id}}
        assert store.workloads.get("ns/w").state is State.ADMITTED
        assert store.pods.exit(refs[0], node="n0", pod_count=1, exit_code=3, stopped=False,
                               message="exit 3", pid=8, now=7.0) == "ok:Failed"
        assert store.nodes.pod_ids(["n0"]) == {"n0": set()}

    def test_a_pod_of_an_older_attempt_never_starts(self) -> None:
        store = new_store()
        holder, refs = running_gang(store, pods=1, start=False)
        record = store.workloads.get("ns/w")
        assert store.workloads.settle(holder, record, event="evict", reason="Preempted",
                                      message="", queued_at=1.0, now=5.0) == "ok"
        admit(store, holder, attempt=1, decision="d2")
        epoch = store.nodes.get("n0").epoch
        assert store.pods.start(refs[0], node="n0", epoch=epoch, devices="", now=6.0) == "stopped"

    def test_starts_and_exits_sent_together_are_each_checked_on_their_own(self) -> None:
        store = new_store()
        _, refs = running_gang(store, pods=2, start=False)
        n0, n1 = store.nodes.get("n0").epoch, store.nodes.get("n1").epoch
        never_placed = PodRef("ns/w", 0, 0)
        assert store.pods.start_many([PodStart(refs[0], "n0", n0), PodStart(never_placed, "n0", n0),
                                      PodStart(refs[1], "n1", n1)], now=4.0) == [
            "ok", "missing", "ok"]
        assert store.pods.exit_many([PodExit(refs[0], "n0", 2, 0),
                                     PodExit(refs[1], "n1", 2, 0)], now=5.0) == [
            "ok:Succeeded", "ok:Succeeded"]
        record = store.workloads.get("ns/w")
        assert (record.state, record.outcome) == (State.FINISHED, Outcome.SUCCEEDED)
        assert store.pods.start_many([], now=6.0) == []

    @pytest.mark.parametrize(("asked_to_stop", "want_status", "want_phase"), [
        # Redis lost the pod's start and it was placed again under the same id (the
        # admission was lost too, so the attempt number came round again): the process its
        # worker stopped was not this placement's, which must wait for its own start.
        (False, "ok:Placed", PodPhase.PLACED),
        (True, "ok:Stopped", PodPhase.STOPPED),  # evicted before it started: ends here
    ])
    def test_a_stopped_process_ends_a_placed_pod_only_if_it_was_asked_to_stop(
            self, asked_to_stop: bool, want_status: str, want_phase: PodPhase) -> None:
        store = new_store()
        holder, refs = running_gang(store, pods=1, start=False)
        if asked_to_stop:
            record = store.workloads.get("ns/w")
            store.workloads.settle(holder, record, event="evict", reason="Preempted",
                                   message="", queued_at=1.0, now=5.0)
        status = store.pods.exit(refs[0], node="n0", pod_count=1, exit_code=-15, stopped=True,
                                 message="stopped", pid=1, now=6.0)
        assert status == want_status
        pod = store.pods.get(refs[0])
        assert pod is not None and pod.state is want_phase
        assert store.nodes.pod_ids(["n0"]) == {"n0": {refs[0].id} if not asked_to_stop
                                               else set()}


class TestSettleAndCancel:
    def test_evict_requeues_and_stops_the_pods(self) -> None:
        store = new_store()
        holder, refs = running_gang(store, pods=2)
        record = store.workloads.get("ns/w")
        status = store.workloads.settle(holder, record, event="evict", reason="Preempted",
                                        message="to admit ns/vip", queued_at=1.0, now=5.0)
        assert status == "ok"
        after = store.workloads.get("ns/w")
        assert (after.state, after.reason, after.admission) == (State.PENDING, "Preempted", None)
        assert store.pods.should_stop(refs) == [True, True]

    def test_cancel_is_refused_for_a_finished_workload(self) -> None:
        store = new_store()
        submit(store)
        store.workloads.cancel("ns/w", now=2.0)
        with pytest.raises(Conflict, match="not allowed while Finished"):
            store.workloads.cancel("ns/w", now=3.0)

    def test_cancel_of_an_unknown_workload(self) -> None:
        with pytest.raises(NotFound, match="ns/nope: not found"):
            new_store().workloads.cancel("ns/nope", now=1.0)

    def test_pending_reasons_are_written_only_for_the_attempt_read(self) -> None:
        store = new_store()
        holder = lead(store)
        submit(store)
        assert store.workloads.set_reasons(holder, [("ns/w", 0, "WaitingForQuota", "m")]) == "ok:1"
        assert store.workloads.set_reasons(holder, [("ns/w", 5, "Stale", "x")]) == "ok:0"
        assert store.workloads.get("ns/w").reason == "WaitingForQuota"


def exit_pod(store, ref: PodRef, code: int, *, pods: int = 2) -> str:
    return store.pods.exit(ref, node=f"n{ref.index}", pod_count=pods, exit_code=code,
                           stopped=False, message=f"pod exited {code}", pid=1, now=9.0)


class TestRetention:
    """purge_finished forgets what finished before the cutoff, with its pods and logs."""

    @pytest.mark.parametrize(("cutoff", "finish", "want_status", "want_gone"), [
        (10.0, True, "ok:purged", True),     # finished at 9.0, before the cutoff
        (9.0, True, "young", False),         # finished exactly at the cutoff: kept
        (10.0, False, "state:Admitted", False),  # still running: never touched
    ], ids=["old", "young", "running"])
    def test_only_old_finished_workloads_go(self, cutoff: float, finish: bool,
                                            want_status: str, want_gone: bool) -> None:
        store = new_store()
        holder, refs = running_gang(store)
        store.pods.append_log(refs[0], "hello\n")
        if finish:
            for ref in refs:
                exit_pod(store, ref, 0)
            assert store.workloads.get("ns/w").state is State.FINISHED
        statuses = store.workloads.purge_finished(holder, ["ns/w"], before=cutoff)
        assert statuses.get("ns/w") == want_status
        k = store.keys
        left = [name for name in (k.workload("ns/w"), k.history("ns/w"), k.pod(refs[0]),
                                  k.pod(refs[1]), k.log(refs[0]))
                if store.redis.exists(name)]
        assert (left == []) is want_gone
        listed = store.workloads.keys()
        assert ("ns/w" in listed) is not want_gone

    def test_a_former_leader_cannot_purge(self) -> None:
        store = new_store()
        holder, refs = running_gang(store)
        for ref in refs:
            exit_pod(store, ref, 0)
        store.redis.delete(store.keys.lease)
        lead(store, "s2")
        assert store.workloads.purge_finished(holder, ["ns/w"], before=99.0) == {
            "ns/w": "fenced"}
        assert store.workloads.find("ns/w") is not None

    def test_a_record_claiming_absurd_counts_is_forgotten_without_hanging(self) -> None:
        """A record written around kuota may say it had a billion attempts of a billion
        pods: retention deletes the last attempt's pods and goes on."""
        store = new_store()
        holder, refs = running_gang(store)
        for ref in refs:
            exit_pod(store, ref, 0)
        key = store.keys.workload("ns/w")
        spec = store.redis.hget(key, "spec").replace(
            '"spec":{', '"spec":{"podSets":[{"count":1000000000}],', 1)
        store.redis.hset(key, mapping={"attempt": 10**9, "spec": spec})
        assert store.workloads.purge_finished(holder, ["ns/w"], before=99.0) == {
            "ns/w": "ok:purged"}
        assert store.workloads.find("ns/w") is None
