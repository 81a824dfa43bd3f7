"""A redis-server for tests: started on a free port of 127.0.0.1, restartable, optional AOF.

Used by the Redis fixtures in tests/conftest.py. When redis-server is not installed
the test is skipped, unless KUOTA_REQUIRE_REDIS=1 (CI), where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import pytest
import redis

from tests.ports import free_port


def redis_missing(why: str) -> None:
    if os.environ.get("KUOTA_REQUIRE_REDIS") == "1":
        pytest.fail(f"KUOTA_REQUIRE_REDIS=1 but {why}")
    pytest.skip(why)


class RedisServer:
    def __init__(self, *, appendonly: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            redis_missing("redis-server is not installed")
        self.binary = str(binary)
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="kuota-redis-")
        self.appendonly = appendonly
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def args(self) -> list[str]:
        """The command line (a subclass may add settings)."""
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                "--save", "", "--appendonly", "yes" if self.appendonly else "no"]
        if self.appendonly:
            args += ["--appendfsync", "always"]
        return args

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(self.args(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pid = self._server_pid()
            if pid == self.proc.pid:
                return self
            if pid is not None or self.proc.poll() is not None:
                # Ours exited (could not bind the port?) or someone else's server answers.
                self.stop(kill=True)
                pytest.fail(f"redis-server could not serve port {self.port}: "
                            + (f"process {pid} answers there" if pid else "it exited"))
            time.sleep(0.05)
        self.stop(kill=True)
        pytest.fail(f"redis-server did not start on port {self.port}")

    def _server_pid(self) -> int | None:
        """The process id of whatever redis answers on our port; None if nothing does yet."""
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.5,
                             socket_connect_timeout=0.2)
        try:
            return int(client.info("server")["process_id"])
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            return None
        finally:
            client.close()

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        self.proc.wait(10)
        self.proc = None

    def restart(self, *, kill: bool = False) -> None:
        self.stop(kill=kill)
        self.start()

    def cleanup(self) -> None:
        self.stop(kill=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def purge_prefix(url: str, prefix: str) -> int:
    """Delete a test's keys: the prefix's own, and rq's for the prefix's queues and their jobs."""
    r = redis.Redis.from_url(url, decode_responses=True)
    try:
        doomed = set(r.scan_iter(match=f"{prefix}:*", count=1000))
        for key in list(r.scan_iter(match=f"rq:*{prefix}:*", count=1000)):
            doomed.add(key)
            kind = r.type(key)
            members = (r.lrange(key, 0, -1) if kind == "list" else
                       r.zrange(key, 0, -1) if kind == "zset" else [])
            for job_id in members:
                job_id = job_id.split(":")[0]
                doomed.update((f"rq:job:{job_id}", f"rq:results:{job_id}"))
        ordered = sorted(doomed)
        for start in range(0, len(ordered), 500):
            r.delete(*ordered[start:start + 500])
        return len(ordered)
    finally:
        r.close()
