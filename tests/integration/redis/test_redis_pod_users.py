"""Issue 12, scope 8: jobs on one node cannot read each other's environment.

A worker run as root with ``--pod-uids`` starts each pod as a user of its own; without
it every pod is the worker's user and a job reads a neighbour's secrets from
``/proc/PID/environ`` (the control case shows the leak is real). Needs root, as the
feature does: skipped otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness import CQ, Processes, queues, wait_for

from kuota.client import Client
from kuota.service.connection import connect
from kuota.service.podusers import PodUsers

pytestmark = pytest.mark.redis

SNOOP = ["sh", "-c", "grep -l TEAM_SECRET=alpha /proc/[0-9]*/environ 2>/dev/null; id -u"]


@pytest.mark.skipif(os.geteuid() != 0, reason="--pod-uids needs a worker running as root")
@pytest.mark.parametrize(("pod_uids", "want_leak"), [
    pytest.param(None, True, id="one user for every pod: the neighbour's secret leaks"),
    pytest.param("61000-61009", False, id="a user per pod: it does not"),
])
def test_a_job_cannot_read_its_neighbours_environment(
        redis_server_url: str, redis_prefix: str, tmp_path: Path, pod_uids: str | None,
        want_leak: bool) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    client.apply(queues(CQ("cq", {"cpu": 4})))
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    procs.scheduler("s1")
    procs.worker("default", "n1", "cpu=4", *(["--pod-uids", pod_uids] if pod_uids else []))
    try:
        secret = client.submit(["sleep", "30"], queue="default/lq-cq", name="secret",
                               requests={"cpu": 1}, env={"TEAM_SECRET": "alpha"})
        wait_for("the secret-holding pod to run",
                 lambda: [p for p in secret.status().pods if p.phase == "Running"])
        snoop = client.submit(SNOOP, queue="default/lq-cq", name="snoop", requests={"cpu": 1})
        assert snoop.wait(timeout=30).succeeded, procs.log("n1")
        lines = snoop.logs().split()
        leaked = [line for line in lines if line.startswith("/proc/")]
        assert bool(leaked) == want_leak, lines
        if pod_uids:
            assert 61000 <= int(lines[-1]) <= 61009
        secret.cancel()
    finally:
        procs.stop_all()


@pytest.mark.parametrize(("text", "want"), [
    ("100-102", [100, 101, 102]), ("7", [7]),
    ("a-b", "expected START-END, two whole numbers"), ("5-1", "expected 0 < START <= END"),
    ("0-3", "expected 0 < START <= END"),
])
def test_pod_uid_ranges(text: str, want: list[int] | str) -> None:
    if isinstance(want, str):
        with pytest.raises(ValueError, match=want):
            PodUsers.parse(text)
        return
    users = PodUsers.parse(text)
    taken = [users.take() for _ in want]
    assert taken == want and users.take() is None
    users.give(want[0])
    assert users.take() == want[0]  # freed ids come back, last in line
