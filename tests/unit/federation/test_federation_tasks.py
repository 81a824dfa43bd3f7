"""The rq task runner: tasks run off the caller's thread, retried with backoff, once per key."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import fakeredis
import pytest

from kuota.federation.tasks import Outcome, TaskRunner

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
                       backoff=[1], poll=0.05)
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
