"""Issue 42, finding 1: a tenant's job cannot read the pool's Redis password.

A job submitted by a namespace-limited submitter printed its worker's
``REDIS_PASSWORD`` from ``/proc/$PPID/environ``: pods run as the worker's Unix user
(unless ``--pod-uids``), and a process may read the environment of every other
process of its user. Pods also inherited the rest of the worker's environment. Here
a real worker holding the password of the pool's ACL user in ``REDIS_PASSWORD`` (and
a marker variable of its own) runs a tenant's job that looks for both in its own
environment, in its parent's (the worker's) ``/proc/PID/environ`` and command line,
and in every process's environment it can open: it must find neither, while still
being able to read its own ``/proc`` files (the worker's non-dumpable flag is not the
pod's).

When the tests run as root, the worker runs as root without capabilities (``setpriv
--bounding-set -all``): a plain user, as far as the kernel's checks go, whose pods
share its user id — root itself may read any process.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from harness import CQ, REPO, Processes, queues, wait_for

from kuota.cli import main
from kuota.client import Client
from kuota.commands.acl import submitter_rules
from kuota.service import connection
from kuota.service.connection import connect

pytestmark = pytest.mark.redis

PASSWORD = secrets.token_hex(16)
MARKER = f"WORKER_ONLY_{secrets.token_hex(4)}"

SNOOP = ["sh", "-c", r"""
echo "ppid=$PPID"
echo "== own environment"; env
echo "== parent environment"; tr '\0' '\n' < /proc/$PPID/environ || echo "parent: refused"
echo "== parent command line"; tr '\0' ' ' < /proc/$PPID/cmdline; echo
echo "== every process"
for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null; done
echo "== own /proc, as another process of its user"
tr '\0' '\n' < /proc/$$/environ | grep -c '^KUOTA_WORKLOAD='
"""]


def host_port(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2]


@pytest.fixture
def users(redis_server_url: str, redis_prefix: str) -> Iterator[tuple[str, str]]:
    """The pool's ACL user (full rights, :data:`PASSWORD`) and a submitter of team-a."""
    admin = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    pool, alice = f"pool-{secrets.token_hex(3)}", f"alice-{secrets.token_hex(3)}"
    alice_password = secrets.token_hex(12)
    r = admin.store.redis
    r.execute_command("ACL", "SETUSER", pool, "on", f">{PASSWORD}", "~*", "&*", "+@all")
    r.execute_command("ACL", "SETUSER", alice, f">{alice_password}",
                      *submitter_rules("team-a", redis_prefix))
    try:
        yield pool, f"redis://{alice}:{alice_password}@{host_port(redis_server_url)}/0"
    finally:
        r.execute_command("ACL", "DELUSER", pool, alice)


def start_worker(redis_server_url: str, prefix: str, pool_user: str,
                 log: Path) -> subprocess.Popen[bytes]:
    """A worker whose password is in its environment, as a plain user (module doc)."""
    env = {**os.environ, "REDIS_URL": f"redis://{pool_user}@{host_port(redis_server_url)}/0",
           "REDIS_PASSWORD": PASSWORD, "KUOTA_PREFIX": prefix, "PYTHONPATH": str(REPO),
           MARKER: "the worker's own"}
    plain_user: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root needs setpriv (util-linux) to drop capabilities")
        plain_user = [setpriv, "--bounding-set", "-all", "--inh-caps", "-all", "--"]
    argv = [*plain_user, sys.executable, "-m", "kuota.cli", "worker", "--pool", "p",
            "--node", "n1", "--resources", "cpu=2", "--heartbeat", "0.2", "--grace", "1"]
    with open(log, "ab") as out:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def test_a_tenants_job_finds_neither_the_pool_password_nor_the_workers_environment(
        redis_server_url: str, redis_prefix: str, tmp_path: Path,
        users: tuple[str, str]) -> None:
    pool_user, alice_url = users
    admin = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    admin.apply(queues(CQ("cq", {"cpu": 2})) + """---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq}
""")
    procs = Processes(redis_server_url, redis_prefix, tmp_path)
    procs.scheduler("s1")
    worker = start_worker(redis_server_url, redis_prefix, pool_user, tmp_path / "n1.log")
    try:
        wait_for("the worker to register", lambda: "n1" in admin.store.nodes.names(),
                 timeout=30, explain=lambda: (tmp_path / "n1.log").read_text())
        alice = Client(connection=connect(alice_url, prefix=redis_prefix))
        job = alice.submit(SNOOP, queue="team-a/lq", name="snoop", requests={"cpu": 1})
        status = job.wait(timeout=30)
        logs = job.logs()
    finally:
        worker.terminate()
        worker.wait(15)
        procs.stop_all()
    assert status.succeeded, logs
    assert f"ppid={worker.pid}\n" in logs  # it did look at its worker's /proc
    assert "KUOTA_WORKLOAD=team-a/snoop" in logs
    assert PASSWORD not in logs
    assert MARKER not in logs
    assert "parent: refused" in logs
    assert logs.endswith("\n1\n")  # its own /proc is readable by its user's processes


# -- the password from a file -------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("s3cret\n", "s3cret"), ("s3cret", "s3cret"), ("s3cret\r\n", "s3cret"),
    ("", "is empty"), ("\n", "is empty"), ("a\nb\n", "holds more than one line"),
])
def test_a_password_file_holds_one_line(tmp_path: Path, text: str, want: str) -> None:
    path = tmp_path / "pw"
    path.write_text(text)
    if want in ("is empty", "holds more than one line"):
        with pytest.raises(ValueError, match=f"password file {path}: {want}"):
            connection.read_password_file(path)
    else:
        assert connection.read_password_file(path) == want


def test_where_the_password_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "given").write_text("from-file\n")
    (tmp_path / "creds").mkdir()
    monkeypatch.setenv("REDIS_PASSWORD", "from-env")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path / "creds"))
    assert connection.password() == "from-env"  # no credential of that name
    (tmp_path / "creds" / connection.CREDENTIAL).write_text("from-systemd\n")
    assert connection.password() == "from-systemd"
    assert connection.password(tmp_path / "given") == "from-file"
    with pytest.raises(ValueError, match=f"password file {tmp_path}/missing: cannot read: "
                                         "No such file or directory"):
        connection.password(tmp_path / "missing")


def test_the_cli_reads_its_password_from_a_file(
        redis_server_url: str, redis_prefix: str, users: tuple[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pool_user, _ = users
    monkeypatch.delenv("REDIS_PASSWORD", raising=False)
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    url = f"redis://{pool_user}@{host_port(redis_server_url)}/0"
    store = ["--redis", url, "--prefix", redis_prefix]
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    (tmp_path / "wrong").write_text("not-it\n")
    assert main(["get", "cq", *store, "--password-file", str(tmp_path / "pw")]) == 0
    assert main(["get", "cq", *store, "--password-file", str(tmp_path / "wrong")]) == 1
    assert main(["get", "cq", "--redis", f"redis://{pool_user}:x@{host_port(redis_server_url)}/0",
                 "--password-file", str(tmp_path / "pw")]) == 2
    err = capsys.readouterr().err
    assert "the URL" in err and "has a password too" in err and PASSWORD not in err
