"""The operator through a failing API server: every write lands in the end.

``TestRequeued`` makes one kind of write fail more often than the API client
repeats it, and checks the writer queues the work again until it lands.
``TestThrottledServer`` runs a whole admission round — Jobs queued,
admitted up to the quota, completed, the rest admitted, all finished — while
a share of *all* requests (the operator's, kopf's and the test's own) answer
429 with Retry-After, 503, lose their connection, or lose their answer after
the write landed; at the end every write must have landed exactly as without
faults. ``TestLease`` checks the Elector's attempts stay within the time
that keeps a single leader.
"""

from __future__ import annotations

import asyncio
import pathlib
import time
from collections.abc import Callable
from typing import Any

import kmock
import kopf
import pytest

from kuota.operator.client import Client
from kuota.operator.leader import Elector
from kuota.operator.retries import RetryPolicy
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.emulator.faults import ALL_VERBS, RESET, WRITE_VERBS
from tests.faultproxy import FaultProxy
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"
WORKLOAD_REQUESTS = kmock.resource("kuota.dev", "v1alpha1", "workloads")
#: A client that gives up quickly, so the writer's own requeue is what is tested.
IMPATIENT = RetryPolicy(attempts=2, pause=0.01, max_pause=0.02, budget=2.0)
QUICK_REQUEUE = {"requeue_backoff": 0.05, "requeue_backoff_max": 0.3}


def submit(api: Emulator, body: dict[str, Any], attempts: int = 30) -> None:
    """Create a Job through HTTP (the webhook suspends it), as a patient kubectl would:
    a lost answer is repeated, and AlreadyExists then means the first one landed."""
    for _ in range(attempts):
        try:
            reply = call(api.url, "POST", JOBS, body, timeout=5)
        except OSError:  # the connection was reset under the request
            continue
        if reply.status in (201, 409):
            return
    raise AssertionError(f"Job {body['metadata']['name']} could not be created")


def requeued(running: h.Running, kind: str) -> float:
    value: float = running.operator.metrics.requeued.labels(kind)._value.get()
    return value


def setup_queue(api: Emulator, cpu: int) -> None:
    api.apply(h.flavor("default", labels={"pool": "batch"}),
              h.cluster_queue("team", quotas={"default": {"cpu": cpu}}),
              h.local_queue("main", "team"))


class TestRequeued:
    @pytest.mark.parametrize(("plural", "verbs", "want_kind"), [
        ("jobs", {"patch"}, "job"),             # unsuspending the Job
        ("workloads", {"create"}, "create"),    # creating its Workload
    ])
    def test_a_write_the_client_gave_up_on_is_queued_again(
            self, cluster: Emulator, certs: pathlib.Path, plural: str, verbs: set[str],
            want_kind: str) -> None:
        setup_queue(cluster, 4)
        with h.Running(cluster, certs, api_retry=IMPATIENT, **QUICK_REQUEUE) as running:
            # Five failures: the client tries twice per sync, so the writer must try thrice.
            fault = cluster.faults.fail(status=503, times=5, plural=plural, verbs=verbs)
            submit(cluster, h.job("j"))
            h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
            assert fault.hits == 5
            assert requeued(running, want_kind) >= 2
            assert h.get_job(cluster, "j")["spec"]["template"]["spec"]["nodeSelector"] == \
                {"pool": "batch"}

    def test_a_finish_whose_status_write_fails_is_written_later(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queue(cluster, 1)
        with h.Running(cluster, certs, api_retry=IMPATIENT, **QUICK_REQUEUE) as running:
            submit(cluster, h.job("first"))
            submit(cluster, h.job("second"))
            h.wait(cluster, lambda: h.running(cluster, "first"), "the first Job to start")
            fault = cluster.faults.fail(status=503, times=5, plural="workloads",
                                        subresource="status")
            h.complete(cluster, "first")
            h.wait(cluster, lambda: h.is_true(h.workload_of(cluster, "first"), "Finished"),
                   "the finish to be recorded")
            h.wait(cluster, lambda: h.running(cluster, "second"), "the freed quota to be used")
            assert fault.hits == 5 and requeued(running, "status") >= 1
            first = h.workload_of(cluster, "first")
            assert first is not None and h.condition(first, "Finished")["reason"] == "Succeeded"

    def test_a_refused_creation_is_reported_once_and_tried_again_later(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """A Workload's creation refused on its merits is not dropped (its Job would wait
        suspended for ever; on a real cluster a 403 came from the API server's owner
        check not knowing a just-installed kind yet): one Warning Event, then tries
        after a growing delay (1 s first), not at every requeue period."""
        setup_queue(cluster, 4)
        with h.Running(cluster, certs, **QUICK_REQUEUE) as running:
            cluster.faults.fail(status=422, times=2, plural="workloads", verbs={"create"})
            submit(cluster, h.job("refused"))
            h.wait(cluster, lambda: any(e["reason"] == "WorkloadNotCreated" for e in
                                        cluster.list("v1", "Event", "default")),
                   "the warning Event")
            h.settle(0.5)  # many requeue periods, less than the first delay
            assert len(list(cluster.handler["create", WORKLOAD_REQUESTS])) == 1
            h.wait(cluster, lambda: h.running(cluster, "refused"),
                   "the Job queued once the refusals passed", timeout=15)
            assert len(list(cluster.handler["create", WORKLOAD_REQUESTS])) == 3
            assert requeued(running, "create") == 2
            events = [e for e in cluster.list("v1", "Event", "default")
                      if e["reason"] == "WorkloadNotCreated"]
            assert len(events) == 1  # the same refusal is told once


class TestThrottledServer:
    def test_every_write_lands_through_throttling_and_failures(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup_queue(cluster, 6)
        names = [f"j{i:02d}" for i in range(12)]
        with h.Running(cluster, certs, **QUICK_REQUEUE) as running:
            faults = [
                cluster.faults.fail(status=429, times=None, rate=0.1, retry_after=1,
                                    verbs=ALL_VERBS),
                cluster.faults.fail(status=503, times=None, rate=0.1, verbs=ALL_VERBS),
                cluster.faults.fail(status=RESET, times=None, rate=0.03, verbs=ALL_VERBS),
                # The write lands, its answer is lost: repeats must not do it twice.
                cluster.faults.fail(status=503, times=None, rate=0.05, verbs=WRITE_VERBS,
                                    after=True),
            ]
            for name in names:
                submit(cluster, h.job(name))

            def started() -> set[str]:
                return {n for n in names if h.running(cluster, n)}

            h.wait(cluster, lambda: len(started()) == 6, "the quota to fill", timeout=60)
            running.quiet()
            first = started()
            assert len(first) == 6  # never past the quota
            for name in first:
                h.complete(cluster, name)
            h.wait(cluster, lambda: started() - first == set(names) - first,
                   "the other six to start", timeout=60)
            for name in set(names) - first:
                h.complete(cluster, name)

            def finished() -> int:
                return sum(h.is_true(h.workload_of(cluster, n), "Finished") for n in names)

            h.wait(cluster, lambda: finished() == 12, "every Workload to finish", timeout=60)

            def cq_status() -> dict[str, Any]:
                return cluster.get(h.API, "ClusterQueue", "team").get("status") or {}

            h.wait(cluster, lambda: cq_status().get("reservingWorkloads") == 0 and
                   cq_status().get("flavorsReservation") == [
                       {"name": "default",
                        "resources": [{"name": "cpu", "total": "0", "borrowed": "0"}]}],
                   "the queue's usage to be written", timeout=30)
            assert all(f.hits > 0 for f in faults), [f.hits for f in faults]
            assert sum(running.operator.metrics.api_retries.labels(reason)._value.get()
                       for reason in ("429", "503", "NoAnswer")) > 0
            workloads = cluster.list(h.API, "Workload", "default")
            owners = sorted(wl["metadata"]["ownerReferences"][0]["name"] for wl in workloads)
            assert owners == names  # one Workload per Job, even with repeated creates
            for wl in workloads:
                assert h.condition(wl, "Finished")["reason"] == "Succeeded"
            for name in names:
                job = h.get_job(cluster, name)
                assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "batch"}

    def test_jobs_are_admitted_through_a_throttling_proxy(self, cluster: Emulator,
                                                          certs: pathlib.Path) -> None:
        """The same through tests/faultproxy.py, as the real tier runs it in front of a
        real API server."""
        setup_queue(cluster, 3)
        names = [f"j{n}" for n in range(5)]
        with FaultProxy(cluster.url) as proxy, \
                h.Running(cluster, certs, server=proxy.url) as running:
            # The first two requests throttled for certain, then a random share of them (a
            # random share alone might, in a short run, fail nothing).
            proxy.faults.fail(status=429, times=2, retry_after=1, verbs=ALL_VERBS)
            proxy.faults.fail(status=429, times=None, rate=0.15, retry_after=1,
                              verbs=ALL_VERBS)
            proxy.faults.fail(status=503, times=None, rate=0.1, verbs=WRITE_VERBS, after=True)
            for name in names:
                submit(cluster, h.job(name))

            def started() -> int:
                return sum(h.running(cluster, name) for name in names)

            h.wait(cluster, lambda: started() == 3, "the quota to fill", timeout=40)
            running.quiet()
            assert started() == 3
            assert proxy.failed > 0 and proxy.forwarded > 0


class TestLease:
    """The Elector's attempts end within (duration - renew) / 3, retries included."""

    @staticmethod
    def attempt(api: Emulator, *, before: Callable[[], None] = lambda: None,
                ) -> tuple[bool, float, float]:
        """One try_acquire by a fresh Elector: (won, seconds taken, its deadline)."""
        async def main() -> tuple[bool, float, float]:
            client = Client(kopf.ConnectionInfo(server=api.url))
            elector = Elector(client, name="l", namespace="kuota-system", identity="me",
                              duration=3.0, renew=0.6)
            try:
                before()
                started = time.monotonic()
                won = await elector.try_acquire()
                return won, time.monotonic() - started, elector.deadline
            finally:
                api.resume()
                await client.close()

        return asyncio.run(main())

    def test_a_hung_api_server_costs_the_lease_in_time(self, cluster: Emulator) -> None:
        won, took, deadline = self.attempt(cluster, before=cluster.pause)
        assert not won and deadline == pytest.approx(0.8)
        # Bounded by its deadline, not by a request timeout (seconds): some slack for a
        # busy machine, far below what hanging on the server would take.
        assert took < deadline + 1.0

    def test_a_throttled_renewal_is_repeated_within_the_deadline(self,
                                                                  cluster: Emulator) -> None:
        fault = cluster.faults.fail(status=503, times=2, plural="leases", verbs=ALL_VERBS)
        won, took, deadline = self.attempt(cluster)
        assert won and fault.hits == 2 and took < deadline

    def test_a_retry_after_beyond_the_deadline_gives_up_at_once(self,
                                                                 cluster: Emulator) -> None:
        fault = cluster.faults.fail(status=429, times=None, retry_after=5, plural="leases",
                                    verbs=ALL_VERBS)
        won, took, deadline = self.attempt(cluster)
        # At once: one request, no waiting for the 5 s asked (nor for the deadline).
        assert not won and fault.hits == 1 and took < deadline
