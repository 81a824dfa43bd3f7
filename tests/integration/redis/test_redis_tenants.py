"""Issue 12, scope 8: submitters limited to their namespace, by a Redis ACL user.

Against a real redis-server and real scheduler and worker processes: a user made with
``kuota acl submitter`` submits and cancels through its namespace's request stream (the
scheduler checks and applies each request), reads its own workloads and logs, and can
neither read nor cancel another namespace's — not directly (Redis refuses) and not by a
forged request (the scheduler refuses).
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from harness import CQ, REPO, Processes, queues, wait_for

from kuota.client import Client, RequestRefused
from kuota.commands.acl import submitter_rules
from kuota.service.connection import connect

pytestmark = pytest.mark.redis

TEAM_QUEUES = "".join(f"""---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {{name: lq, namespace: {ns}}}
spec: {{clusterQueue: cq}}
""" for ns in ("team-a", "team-b"))


def user_url(admin_url: str, user: str, password: str) -> str:
    parts = urlsplit(admin_url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, f"{user}:{password}@{host}", parts.path, parts.query, ""))


@pytest.fixture
def pool(redis_server_url: str, redis_prefix: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    admin = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    admin.apply(queues(CQ("cq", {"cpu": 4})) + TEAM_QUEUES)
    user, password = f"alice-{secrets.token_hex(3)}", secrets.token_hex(12)
    admin.store.redis.execute_command("ACL", "SETUSER", user, f">{password}",
                                      *submitter_rules("team-a", redis_prefix))
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    procs.scheduler("s1")
    procs.worker("default", "n1", "cpu=4")
    alice_url = user_url(redis_server_url, user, password)
    try:
        yield admin, Client(connection=connect(alice_url, prefix=redis_prefix)), alice_url
    finally:
        procs.stop_all()
        admin.store.redis.execute_command("ACL", "DELUSER", user)


def alice_cli(url: str, prefix: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"REDIS_URL": url, "KUOTA_PREFIX": prefix, "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "kuota.cli", *argv], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_namespace_submitter_runs_reads_and_cancels_its_own_workloads(
        pool, redis_prefix: str) -> None:  # type: ignore[no-untyped-def]
    _, alice, url = pool
    job = alice.submit(["echo", "hello from team-a"], queue="team-a/lq", name="hello",
                       requests={"cpu": 1})
    assert not job.queued
    assert job.wait(timeout=30).succeeded
    assert job.logs() == "hello from team-a\n"

    listed = alice_cli(url, redis_prefix, "get", "workloads", "-n", "team-a", "-a")
    assert listed.returncode == 0, listed.stderr
    assert "team-a/hello" in listed.stdout

    long = alice.submit(["sleep", "60"], queue="team-a/lq", name="long", requests={"cpu": 1})
    wait_for("the long job to run", lambda: long.status().state == "Admitted")
    live = alice_cli(url, redis_prefix, "get", "workloads", "-n", "team-a")
    assert live.returncode == 0, live.stderr  # (no scripts for her: finished ones dropped here)
    assert "team-a/long" in live.stdout and "team-a/hello" not in live.stdout
    assert alice.cancel("team-a/long")
    wait_for("the long job to end", lambda: long.status().state == "Finished")
    assert long.status().outcome == "Cancelled"


def test_another_namespace_is_out_of_reach_directly_and_by_forged_requests(
        pool, redis_prefix: str) -> None:  # type: ignore[no-untyped-def]
    admin, alice, url = pool
    theirs = admin.submit(["sleep", "60"], queue="team-b/lq", name="theirs",
                          requests={"cpu": 1})

    with pytest.raises(redis.exceptions.NoPermissionError):
        alice.store.workloads.get(theirs.key)
    with pytest.raises(redis.exceptions.NoPermissionError):
        alice.cancel(theirs.key)
    with pytest.raises(redis.exceptions.NoPermissionError):  # another namespace's stream
        alice.store.requests.post("team-b", "cancel", key=theirs.key)
    with pytest.raises(redis.exceptions.NoPermissionError):  # listing every name
        alice.workloads()
    with pytest.raises(redis.exceptions.NoPermissionError):  # queue objects are the admin's
        alice.apply(queues(CQ("mine", {"cpu": 100})))

    # Through its own stream, naming the other namespace: the scheduler refuses.
    forged = alice.store.requests.post("team-a", "cancel", key=theirs.key)
    answer = wait_for("the scheduler's answer",
                      lambda: alice.store.requests.answer("team-a", forged))
    assert answer == {"ok": False, "error": "workload team-b/theirs is not in namespace "
                                            "team-a, whose request stream this came through"}
    manifest = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
                "metadata": {"name": "sneaky", "namespace": "team-b"},
                "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1,
                         "template": {"spec": {"containers": [{
                             "name": "main", "command": ["true"],
                             "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    with pytest.raises(RequestRefused, match="the manifest is workload team-b/sneaky"):
        alice._request("team-a/sneaky", "submit", manifest=__import__("json").dumps(manifest),
                       queue="", submission="x")
    assert admin.store.workloads.find("team-b/sneaky") is None
    assert admin.workload(theirs.key).status().state != "Finished"

    refused = alice_cli(url, redis_prefix, "get", "workloads", "-n", "team-b")
    assert refused.returncode == 1
    assert "your Redis user may not do this" in refused.stderr


def test_a_request_no_scheduler_answers_stays_queued_until_one_runs(
        redis_server_url: str, redis_prefix: str, tmp_path: Path) -> None:
    admin = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    admin.apply(queues(CQ("cq", {"cpu": 4})) + TEAM_QUEUES)
    user, password = f"bob-{secrets.token_hex(3)}", secrets.token_hex(12)
    admin.store.redis.execute_command("ACL", "SETUSER", user, f">{password}",
                                      *submitter_rules("team-a", redis_prefix))
    try:
        bob = Client(connection=connect(user_url(redis_server_url, user, password),
                                        prefix=redis_prefix))
        bob.request_wait = 0.3
        started = time.monotonic()
        job = bob.submit(["true"], queue="team-a/lq", name="later", requests={"cpu": 1})
        assert job.queued and time.monotonic() - started < 5
        assert admin.store.workloads.find("team-a/later") is None
        procs = Processes(redis_server_url, redis_prefix, tmp_path)
        procs.scheduler("s1")
        procs.worker("default", "n1", "cpu=4")
        try:
            assert job.wait(timeout=30).succeeded
        finally:
            procs.stop_all()
    finally:
        admin.store.redis.execute_command("ACL", "DELUSER", user)
