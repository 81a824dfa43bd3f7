"""Issue 12, scope 8: a worker runs only kuota's own tasks. rq imports and calls whatever
function a job names, and unpickles its arguments; a worker runs every pod of its node,
so either would let anyone who can write to Redis run code as the worker."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest
from harness import local_cluster, node, wait_for
from rq.job import JobStatus

from kuota.service.jobs import node_queue

pytestmark = pytest.mark.redis


class _Touch:
    """Unpickling this creates a file: a stand-in for arbitrary code."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_a_job_naming_another_function_fails_and_runs_nothing(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=1")]) as c:
        queue = node_queue(c.connection.raw, c.connection.store.keys, "n1")
        job = queue.enqueue("os.system", f"touch {marker}")
        wait_for("the job to fail", lambda: job.get_status(refresh=True) == JobStatus.FAILED)
        assert "this worker runs only" in (job.latest_result().exc_string or "")
        assert not marker.exists()


def test_a_pickled_job_is_not_unpickled(redis_server_url: str, redis_prefix: str,
                                        tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    with local_cluster(redis_server_url, redis_prefix, [node("pool", "n1", "cpu=1")]) as c:
        raw, keys = c.connection.raw, c.connection.store.keys
        queue = node_queue(raw, keys, "n1")
        # What a plain (pickling) rq client would put there, arguments and all.
        job_id = "evil"
        raw.hset(f"rq:job:{job_id}", mapping={
            "data": pickle.dumps(("kuota.service.pod.wake", None, (_Touch(str(marker)),), {})),
            "status": "queued", "origin": queue.name, "created_at": "2026-01-01T00:00:00.000000Z"})
        raw.rpush(queue.key, job_id)
        time.sleep(1.5)  # the worker has dequeued it several times over
        assert not marker.exists()
        assert c.client().workloads() == []  # and the worker still serves its queue
        wake = queue.enqueue("kuota.service.pod.wake")
        wait_for("a valid job to run", lambda: wake.get_status(refresh=True) == JobStatus.FINISHED)
