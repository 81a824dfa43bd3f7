"""Issue 12, scope 8 (part): a pool behind a Redis with TLS and an ACL user, against a
real redis-server. Scheduler, worker, CLI and Client connect over ``rediss://`` with the
CA and a password; the password reaches neither the pods' environment nor any message."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from harness import CQ, REPO, Processes, queues, wait_for
from server import redis_missing

from kuota.client import Client
from kuota.service.connection import connect
from tests.ports import free_port
from tests.webhook_certs import make_ca, make_leaf

pytestmark = pytest.mark.redis

PASSWORD = "s3cret-pool-password"


class TlsRedis:
    """A redis-server that speaks only TLS and knows one ACL user, ``kuota``."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            redis_missing("redis-server is not installed")
        certs = make_leaf(workdir, "redis", make_ca(workdir / "ca"))
        for name, data in certs.items():
            (workdir / name).write_bytes(data)
        self.ca = workdir / "ca.crt"
        self.port = free_port()
        self.proc = subprocess.Popen(
            [str(binary), "--port", "0", "--tls-port", str(self.port), "--bind", "127.0.0.1",
             "--tls-cert-file", str(workdir / "tls.crt"),
             "--tls-key-file", str(workdir / "tls.key"),
             "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "no",
             "--dir", str(workdir), "--save", "", "--appendonly", "no",
             "--user", "default", "off",
             "--user", "kuota", "on", f">{PASSWORD}", "~*", "&*", "+@all"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def url(self, password: str | None = PASSWORD) -> str:
        auth = f"kuota:{password}@" if password else "kuota@"
        return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca}"

    def wait_ready(self) -> None:
        def answers() -> bool:
            if self.proc.poll() is not None:
                pytest.fail("redis-server with TLS exited: is it built without TLS support?")
            try:
                return bool(redis.Redis.from_url(self.url(), socket_timeout=1).ping())
            except (redis.ConnectionError, redis.TimeoutError):
                return False
        wait_for("redis-server to answer over TLS", answers, timeout=10)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[TlsRedis]:
    server = TlsRedis(tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kuota.cli", *argv], cwd=REPO, text=True,
                          capture_output=True, env=env, timeout=60)


def test_a_pool_runs_over_tls_with_an_acl_user_and_pods_never_see_the_password(
        tls_redis: TlsRedis, tmp_path: Path) -> None:
    url = tls_redis.url()
    client = Client(connection=connect(url, prefix="sec"))
    client.apply(queues(CQ("cq", {"cpu": 2})))
    procs = Processes(url, "sec", tmp_path)
    try:
        procs.scheduler("s1")
        procs.worker("default", "n1", "cpu=2")
        job = client.submit(["env"], queue="default/lq-cq", name="show-env",
                            requests={"cpu": 1})
        status = job.wait(timeout=30)
        assert status.succeeded, procs.log("s1") + procs.log("n1")
        logs = job.logs()
        assert "KUOTA_WORKLOAD=default/show-env" in logs
        assert PASSWORD not in logs
        assert "REDIS_URL=" not in logs
    finally:
        procs.stop_all()
    for name in ("s1", "n1"):
        assert PASSWORD not in procs.log(name)


@pytest.mark.parametrize(("how", "want_ok"), [
    ("password in the URL", True),
    ("password in REDIS_PASSWORD", True),
    ("wrong password", False),
])
def test_the_cli_connects_over_tls_and_never_prints_the_password(
        tls_redis: TlsRedis, how: str, want_ok: bool) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "KUOTA_PREFIX": "cli"}
    if how == "password in the URL":
        env["REDIS_URL"] = tls_redis.url()
    elif how == "password in REDIS_PASSWORD":
        env["REDIS_URL"], env["REDIS_PASSWORD"] = tls_redis.url(password=None), PASSWORD
    else:
        env["REDIS_URL"] = tls_redis.url(password="not-" + PASSWORD)
    done = cli("get", "cq", env=env)
    assert (done.returncode == 0) is want_ok, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    if not want_ok:
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
