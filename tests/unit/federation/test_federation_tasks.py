"""The rq task runner: tasks run off the caller's thread, retried with backoff, once per key."""

from __future__ import annotations

import json
import pathlib
import threading
import time
from collections.abc import Iterator

import fakeredis
import pytest
from rq import Queue
from rq.job import JobStatus
from rq.serializers import JSONSerializer

from kuota.federation import tasks as tasks_module
from kuota.federation.member import Copy, Observation
from kuota.federation.tasks import Outcome, TaskRunner
from placement.model import Node, Taint, TaintEffect

CALLS: dict[str, int] = {}


def flaky(name: str, failures: int) -> str:
    """Fails ``failures`` times, then answers."""
    CALLS[name] = CALLS.get(name, 0) + 1
    if CALLS[name] <= failures:
        raise ConnectionError(f"member {name} refused the connection")
    return f"{name} done after {CALLS[name]}"


RELEASE = threading.Event()


def hang(name: str) -> str:
    """A member that does not answer until the test lets it."""
    RELEASE.wait(10)
    return f"{name} answered late"


@pytest.fixture
def runner() -> Iterator[TaskRunner]:
    tasks = TaskRunner(fakeredis.FakeRedis(server=fakeredis.FakeServer()), retries=2,
                       backoff=[1], poll=0.05, tasks=[flaky, hang])
    tasks.start()
    yield tasks
    tasks.stop()


def wait_outcome(runner: TaskRunner, timeout: float = 8.0) -> Outcome:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = runner.collect()
        if ended:
            assert len(ended) == 1
            return ended[0]
        time.sleep(0.02)
    raise TimeoutError("no task ended")


class TestTaskRunner:
    def test_a_failing_call_is_retried_after_a_pause_and_succeeds(
            self, runner: TaskRunner) -> None:
        CALLS.clear()
        assert runner.submit("create:m:x", flaky, "x", 1)
        assert not runner.submit("create:m:x", flaky, "x", 1)  # one in flight per key
        outcome = wait_outcome(runner)
        assert outcome == Outcome("create:m:x", True, "x done after 2")
        # one failure, one retry (rq schedules it by the whole second, so its pause is
        # anything up to a second: not asserted)
        assert CALLS["x"] == 2
        assert not runner.busy("create:m:x")

    def test_retries_run_out_and_the_error_is_reported(self, runner: TaskRunner) -> None:
        CALLS.clear()
        runner.submit("delete:m:y", flaky, "y", 10)
        outcome = wait_outcome(runner)
        assert not outcome.ok and CALLS["y"] == 3
        assert "member y refused the connection" in outcome.error

    def test_without_retry_a_failure_ends_at_once(self, runner: TaskRunner) -> None:
        CALLS.clear()
        runner.submit("observe:m", flaky, "z", 1, retry=False)
        outcome = wait_outcome(runner, timeout=3)
        assert not outcome.ok and CALLS["z"] == 1

    def test_a_hanging_lane_does_not_delay_another(self, runner: TaskRunner) -> None:
        CALLS.clear()
        RELEASE.clear()
        try:
            runner.submit("observe:slow", hang, "slow", retry=False, lane="slow")
            runner.submit("observe:slow-2", flaky, "queued", 0, retry=False, lane="slow")
            runner.submit("observe:fast", flaky, "fast", 0, retry=False, lane="fast")
            outcome = wait_outcome(runner, timeout=3)
            assert outcome == Outcome("observe:fast", True, "fast done after 1")
            # one lane runs its tasks one after another: the second waits for the first
            assert runner.busy("observe:slow") and runner.busy("observe:slow-2")
            assert "queued" not in CALLS
        finally:
            RELEASE.set()
        ended: set[str] = set()
        deadline = time.monotonic() + 5
        while len(ended) < 2 and time.monotonic() < deadline:
            ended |= {o.key for o in runner.collect() if o.ok}
            time.sleep(0.02)
        assert ended == {"observe:slow", "observe:slow-2"}


def kind_of(reference: str) -> str:
    """A task reading a member's connection details the way the real tasks do."""
    return tasks_module._spec(reference)["kind"]


class TestNothingSecretOrForeignRuns:
    def test_member_credentials_never_reach_redis(self) -> None:
        connection = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        runner = TaskRunner(connection, poll=0.05, tasks=[kind_of])
        runner.start()
        try:
            reference = runner.reference("east", {"kind": "Kubernetes",
                                                  "kubeconfig": {"token": "SECRET-TOKEN"}})
            runner.submit("observe:east", kind_of, reference, retry=False, lane="east")
            assert wait_outcome(runner) == Outcome("observe:east", True, "Kubernetes")
            stored = b"".join(dump(connection, key) for key in connection.scan_iter())
            assert b"east" in stored and b"SECRET-TOKEN" not in stored
        finally:
            runner.stop()

    def test_a_job_naming_another_function_fails_without_running_it(
            self, runner: TaskRunner, tmp_path: pathlib.Path) -> None:
        runner.submit("observe:m", flaky, "m", 0, retry=False)
        wait_outcome(runner)  # the lane's worker runs
        marker = tmp_path / "ran"
        queue = Queue(runner.queue_name(""), connection=runner.connection,
                      serializer=JSONSerializer)
        job = queue.enqueue("os.system", f"touch {marker}")
        deadline = time.monotonic() + 5
        while job.get_status(refresh=True) != JobStatus.FAILED and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job.get_status() == JobStatus.FAILED
        assert "names 'os.system'" in (job.latest_result().exc_string or "")  # type: ignore[union-attr]
        assert not marker.exists()

    def test_a_reference_from_another_process_is_an_error_not_a_crash(self) -> None:
        with pytest.raises(tasks_module.MemberSpecError, match="member 'east': no connection"):
            tasks_module.observe("0123/east", "origin")


def dump(connection: fakeredis.FakeRedis, key: bytes) -> bytes:
    kind = connection.type(key)
    if kind == b"string":
        return key + (connection.get(key) or b"")
    if kind == b"hash":
        return key + b"".join(k + v for k, v in connection.hgetall(key).items())
    if kind == b"list":
        return key + b"".join(connection.lrange(key, 0, -1))
    if kind == b"zset":
        return key + b"".join(connection.zrange(key, 0, -1))
    if kind == b"set":
        return key + b"".join(connection.smembers(key))
    return key


def test_an_observation_survives_its_json_trip() -> None:
    observation = Observation(
        nodes=(Node("n1", {"cpu": 4000}, {"cpu": 1000}, {"zone": "a"},
                    (Taint("gpu", TaintEffect.NO_SCHEDULE, "true"),), True, {"cpu": 1100}),
               Node("n2", {"cpu": 2000})),
        copies=(Copy("ns", "job-a", "ns/a", {"status": {"active": 1}},
                     {"n1": {"cpu": 500, "pods": 1000}}),),
        problems=("node n3: bad quantity",))
    trip = Observation.from_json(json.loads(json.dumps(observation.to_json())))
    assert trip == observation
    assert trip.copies[0].body == observation.copies[0].body  # not part of Copy's equality
    assert trip.copies[0].usage == observation.copies[0].usage
