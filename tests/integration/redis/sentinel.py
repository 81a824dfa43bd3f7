"""A Redis master, its replica and one sentinel watching them, on free ports of 127.0.0.1.

``SentinelSet().start()`` waits until the replica follows the master and the sentinel
knows both; :meth:`SentinelSet.fail_over` kills the master and waits until the sentinel
has promoted the replica. (``SENTINEL FAILOVER`` would leave the old master taking
writes until the sentinel demotes it, seconds later: clients connected to it keep
writing there, and what they write is lost when it becomes a replica.)
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import redis
from harness import wait_for
from redis.sentinel import MasterNotFoundError, Sentinel
from server import RedisServer

from tests.ports import free_port

SERVICE = "kuota"


class Replica(RedisServer):
    def __init__(self, master: RedisServer) -> None:
        super().__init__()
        self.master = master

    def args(self) -> list[str]:
        return [*super().args(), "--replicaof", "127.0.0.1", str(self.master.port)]


class SentinelSet:
    def __init__(self) -> None:
        self.master = RedisServer()
        self.replica = Replica(self.master)
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="kuota-sentinel-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis+sentinel://127.0.0.1:{self.port}/{SERVICE}/{db}"

    def sentinel(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, socket_timeout=2)

    def start(self) -> SentinelSet:
        self.master.start()
        self.replica.start()
        wait_for("the replica to follow the master", lambda: redis.Redis(
            port=self.replica.port).info("replication").get("master_link_status") == "up")
        config = self.dir / "sentinel.conf"  # (the sentinel rewrites it: its own copy)
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.master.port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} 1000\n"
            f"sentinel failover-timeout {SERVICE} 10000\n")
        binary = shutil.which("redis-server")
        assert binary is not None  # (RedisServer checked)
        self.proc = subprocess.Popen([binary, str(config), "--sentinel"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for("the sentinel to know the replica", self._knows_replica)
        return self

    def _knows_replica(self) -> bool:
        try:
            replicas = self.sentinel().execute_command("SENTINEL", "REPLICAS", SERVICE)
        except (redis.ConnectionError, redis.ResponseError):
            return False
        # (redis-py answers with one dict of strings per replica)
        return any(int(r["port"]) == self.replica.port and r["master-link-status"] == "ok"
                   for r in replicas)

    def fail_over(self) -> None:
        """Kill the master once the replica has every write of it; wait until the sentinel
        has promoted the replica (its down-after is 1 s)."""
        assert redis.Redis(port=self.master.port).wait(1, 5000) == 1
        self.master.stop(kill=True)
        wait_for("the sentinel to name the replica master", self._promoted)

    def _promoted(self) -> bool:
        """The sentinel gives the replica to clients as the master (redis-py also checks
        that it is not flagged down)."""
        try:
            _, port = Sentinel([("127.0.0.1", self.port)]).discover_master(SERVICE)
        except MasterNotFoundError:
            return False
        return int(port) == self.replica.port

    def cleanup(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
        self.replica.cleanup()
        self.master.cleanup()
        shutil.rmtree(self.dir, ignore_errors=True)
