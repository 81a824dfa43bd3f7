"""Issue 42, finding 6: submissions ride out a Redis restart, as the docs promise.

``Client.submit`` is retried for ``submit_retry_for`` (10 s) while the connection
fails, but only its write was: the read before it (the priority classes and the
LocalQueues' default requests) was not, so 20 of 200 submissions failed at once
when Redis restarted under a burst. Here a redis-server with ``appendfsync
always`` (nothing acknowledged is lost) is killed and started again while four
threads submit 200 workloads with generated names: every submission must
succeed, and the store must hold each exactly once — for an admin, whose
submission is a script call, and for a submitter limited to its namespace,
whose submission is a request on its stream that the scheduler applies.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness import CQ, Processes, events, queues, wait_for
from server import RedisServer

from kuota.client import Client
from kuota.commands.acl import submitter_rules
from kuota.service.connection import connect

pytestmark = pytest.mark.redis

PREFIX = "restart"
SUBMISSIONS = 200
THREADS = 4
PASSWORD = secrets.token_hex(12)


class RedisWithSubmitter(RedisServer):
    """A redis-server with AOF whose ACL user ``alice`` (``kuota acl submitter
    default``) is in its configuration, so that it survives the restart (users made
    with ``ACL SETUSER`` are not written to the AOF)."""

    def args(self) -> list[str]:
        return [*super().args(), "--user", "alice", f">{PASSWORD}",
                *submitter_rules("default", PREFIX)]

    def alice_url(self) -> str:
        return f"redis://alice:{PASSWORD}@127.0.0.1:{self.port}/0"


@pytest.fixture
def server() -> Iterator[RedisWithSubmitter]:
    server = RedisWithSubmitter(appendonly=True)
    server.start()
    try:
        yield server
    finally:
        server.cleanup()


def burst(client: Client, count: int, done: list[str], failed: list[str]) -> None:
    for _ in range(count):
        try:
            run = client.submit(["true"], queue="default/lq-cq", requests={"cpu": 1})
        except Exception as exc:  # counted: the assertion lists every failure
            failed.append(f"{type(exc).__name__}: {exc}")
        else:
            done.append(run.key)


def restart_during_burst(server: RedisServer, make_client: Callable[[], Client]
                         ) -> tuple[list[str], list[str]]:
    """Submit :data:`SUBMISSIONS` from :data:`THREADS` threads, killing Redis (SIGKILL)
    and starting it again half a second later once a fifth of them are stored."""
    done: list[str] = []
    failed: list[str] = []
    threads = [threading.Thread(target=burst, args=(make_client(), SUBMISSIONS // THREADS,
                                                    done, failed))
               for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    wait_for("a fifth of the submissions", lambda: len(done) >= SUBMISSIONS // 5, every=0.005)
    server.stop(kill=True)
    during = len(done)
    time.sleep(0.5)
    server.start()
    for thread in threads:
        thread.join(60)
    assert during < SUBMISSIONS, "the burst ended before Redis was killed: nothing was tested"
    return done, failed


def assert_stored_once(admin: Client, done: list[str]) -> None:
    stored = admin.store.workloads.keys()
    assert sorted(stored) == sorted(done), "a submission stored twice or not at all"
    twice = {key: n for key in stored if (n := events(admin, key).count("Submitted")) != 1}
    assert not twice


def test_an_admins_submissions_ride_out_a_redis_restart(server: RedisWithSubmitter) -> None:
    admin = Client(connection=connect(server.url, prefix=PREFIX))
    admin.apply(queues(CQ("cq", {"cpu": 4})))
    done, failed = restart_during_burst(
        server, lambda: Client(connection=connect(server.url, prefix=PREFIX)))
    assert failed == []
    assert len(done) == SUBMISSIONS
    assert_stored_once(admin, done)


def test_a_namespace_submitters_requests_ride_out_a_redis_restart(
        server: RedisWithSubmitter, tmp_path: Path) -> None:
    admin = Client(connection=connect(server.url, prefix=PREFIX))
    admin.apply(queues(CQ("cq", {"cpu": 4})))
    procs = Processes(server.url, PREFIX, tmp_path)
    try:
        procs.scheduler("s1")
        wait_for("a leader", lambda: admin.store.redis.exists(admin.store.keys.lease),
                 timeout=30)
        done, failed = restart_during_burst(
            server, lambda: Client(connection=connect(server.alice_url(), prefix=PREFIX)))
        assert failed == []
        assert len(done) == SUBMISSIONS
        # (a request still queued when its wait ended is stored when the scheduler takes it)
        wait_for("every request to be applied",
                 lambda: len(admin.store.workloads.keys()) >= SUBMISSIONS, timeout=60)
    finally:
        procs.stop_all()
    assert_stored_once(admin, done)
