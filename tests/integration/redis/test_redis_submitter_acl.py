"""Issue 42, finding 3: a tenant cannot disturb the pool through its submitter user.

The user ``kuota acl submitter`` printed held ``+@connection``: CLIENT PAUSE froze every
write, CLIENT KILL dropped the scheduler's and workers' connections, CLIENT LIST showed
every client; and its request stream had no cap (5,000 forged requests left 5,019 answer
keys). Against a private redis-server (the probes would pause or flush a shared one) and
a real scheduler process, as the submitter:

* one representative command of every category Redis lists (``ACL CAT``) is tried, and
  the categories allowed are exactly the reads and the request stream;
* the commands that reach the pool — CLIENT PAUSE/KILL/LIST, CONFIG, FLUSHALL, DEBUG,
  SHUTDOWN, MONITOR, pub/sub on others' channels, KEYS/SCAN, scripts, others' keys —
  are refused, while what redis-py needs to connect is not;
* the submitter still submits, reads and cancels its own workloads;
* 5,000 forged requests leave at most the caps of stream entries and answer keys, and
  the scheduler still answers the next real request.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from harness import CQ, Processes, queues, wait_for
from server import RedisServer

from kuota.client import Client
from kuota.commands.acl import submitter_rules
from kuota.service.connection import connect
from queueing.store import requests

pytestmark = pytest.mark.redis

P = "acl"
NS = "team-a"
OWN = f"{P}:workload:{NS}/mine"
OWN_LOG = f"{P}:log:{NS}/mine:1:0"
STREAM = f"{P}:requests:{NS}"
USER = "alice"
PASSWORD = secrets.token_hex(12)

#: One command per ACL category (and the category it is checked to belong to).
CATEGORY_PROBES: dict[str, list[str]] = {
    "keyspace": ["DEL", OWN],
    "read": ["HGETALL", OWN],
    "write": ["SET", OWN, "x"],
    "set": ["SADD", f"{P}:nodes", "x"],
    "sortedset": ["ZADD", f"{P}:workloads:{NS}", "1", "x"],
    "list": ["RPUSH", OWN_LOG, "x"],
    "hash": ["HSET", OWN, "state", "Finished"],
    "string": ["APPEND", OWN, "x"],
    "bitmap": ["SETBIT", OWN, "0", "1"],
    "hyperloglog": ["PFADD", OWN, "x"],
    "geo": ["GEOADD", OWN, "0", "0", "x"],
    "stream": ["XADD", STREAM, "*", "op", "noop", "id", "probe"],
    "pubsub": ["PUBLISH", "rq:pubsub:kuota-n1", "{}"],
    "admin": ["CONFIG", "GET", "maxmemory"],
    "fast": ["HGET", OWN, "state"],
    "slow": ["LRANGE", OWN_LOG, "0", "-1"],
    "blocking": ["BLPOP", OWN_LOG, "0.01"],
    "dangerous": ["FLUSHALL"],
    "connection": ["CLIENT", "KILL", "ID", "999999999"],
    "transaction": ["MULTI"],
    "scripting": ["EVAL", "return 1", "0"],
}
#: What a submitter needs: its reads (fast and slow ones) and its stream.
ALLOWED_CATEGORIES = ["fast", "read", "slow", "stream"]

#: Commands that reach the pool or other tenants; each must be refused.
REFUSED: list[list[str]] = [
    ["CLIENT", "PAUSE", "10"], ["CLIENT", "KILL", "ID", "999999999"], ["CLIENT", "LIST"],
    ["CLIENT", "NO-EVICT", "on"], ["CLIENT", "SETNAME", "x"], ["CLIENT", "UNBLOCK", "1"],
    ["CONFIG", "SET", "maxmemory", "1"], ["CONFIG", "GET", "*"], ["FLUSHALL"], ["FLUSHDB"],
    ["DEBUG", "SLEEP", "0"], ["SHUTDOWN", "NOSAVE"], ["MONITOR"], ["INFO"], ["ACL", "LIST"],
    ["PSUBSCRIBE", "*"], ["SUBSCRIBE", "rq:pubsub:kuota-n1"],
    ["PUBLISH", "rq:pubsub:kuota-n1", "{}"], ["KEYS", "*"], ["SCAN", "0"],
    ["EVAL", "return 1", "0"], ["WAIT", "0", "0"], ["SWAPDB", "0", "1"],
    ["SET", f"{P}:scheduler:lease", "x"], ["HSET", f"{P}:workload:{NS}/mine", "state", "x"],
    ["GET", f"{P}:workload:team-b/theirs"],
    ["XADD", f"{P}:requests:team-b", "*", "op", "cancel"],
    ["XTRIM", f"{P}:requests:{NS}", "MAXLEN", "0"],
]
#: What redis-py sends on connecting and for its health checks.
NEEDED: list[list[str]] = [["AUTH", USER, PASSWORD], ["HELLO", "2"], ["SELECT", "0"],
                           ["PING"]]


@pytest.fixture
def server(redis_factory: Callable[..., RedisServer]) -> Iterator[RedisServer]:
    server = redis_factory().start()
    admin = redis.Redis.from_url(server.url)
    admin.execute_command("ACL", "SETUSER", USER, f">{PASSWORD}", *submitter_rules(NS, P))
    admin.close()
    yield server


def user_url(server: RedisServer) -> str:
    return f"redis://{USER}:{PASSWORD}@127.0.0.1:{server.port}/0"


def permitted(server: RedisServer, command: Sequence[str]) -> bool:
    """Does Redis let the submitter run ``command``? It is run as the submitter, on a
    connection of its own: NOPERM is a refusal. An error of the command itself (DEBUG
    is off by default, for one) is judged by ``ACL DRYRUN``, Redis's own check."""
    conn = redis.Redis.from_url(user_url(server), single_connection_client=True,
                                socket_timeout=5)
    try:
        conn.execute_command(*command)
    except redis.exceptions.NoPermissionError:
        return False
    except redis.ResponseError:
        admin = redis.Redis.from_url(server.url, decode_responses=True)
        try:  # ("OK", or why not)
            return bool(admin.execute_command("ACL", "DRYRUN", USER, *command) == "OK")
        finally:
            admin.close()
    finally:
        conn.close()
    return True


def test_a_submitter_may_use_only_its_reads_and_its_stream(server: RedisServer) -> None:
    admin = redis.Redis.from_url(server.url, decode_responses=True)
    categories = admin.execute_command("ACL", "CAT")
    assert sorted(categories) == sorted(CATEGORY_PROBES), "a category without a probe"
    for category, command in CATEGORY_PROBES.items():
        members = admin.execute_command("ACL", "CAT", category)
        name = command[0].lower()
        assert name in members or f"{name}|{command[1].lower()}" in members, (category, name)
    allowed = sorted(c for c, command in CATEGORY_PROBES.items() if permitted(server, command))
    assert allowed == ALLOWED_CATEGORIES
    assert [c for c in REFUSED if permitted(server, c)] == []
    assert [c for c in NEEDED if not permitted(server, c)] == []
    assert admin.ping()  # nothing paused or shut it down


@pytest.fixture
def pool(server: RedisServer, tmp_path: Path) -> Iterator[tuple[Client, Client]]:
    admin = Client(connection=connect(server.url, prefix=P))
    admin.apply(queues(CQ("cq", {"cpu": 4})) + f"""---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {{name: lq, namespace: {NS}}}
spec: {{clusterQueue: cq}}
""")
    procs = Processes(server.url, P, tmp_path)
    procs.scheduler("s1")
    try:
        wait_for("a leader", lambda: admin.store.redis.exists(admin.store.keys.lease),
                 timeout=30)
        yield admin, Client(connection=connect(user_url(server), prefix=P))
    finally:
        procs.stop_all()


def test_a_submitter_still_submits_reads_and_cancels_its_own(
        pool: tuple[Client, Client]) -> None:
    _, alice = pool
    job = alice.submit(["sleep", "60"], queue=f"{NS}/lq", name="mine", requests={"cpu": 1})
    assert not job.queued  # the scheduler answered
    wait_for("admission", lambda: job.status().state == "Admitted")
    assert [w.key for w in alice.workloads(NS)] == [f"{NS}/mine"]
    assert alice.cancel(job.key)
    assert job.wait(timeout=30).outcome == "Cancelled"


def forge(alice: Client, count: int) -> None:
    pipe = alice.store.redis.pipeline(transaction=False)
    for i in range(count):
        pipe.xadd(STREAM, {"op": "cancel", "id": f"forged{i}", "key": f"{NS}/nothing-{i}"})
    pipe.execute()


def answer_keys(admin: Client) -> list[Any]:
    return list(admin.store.redis.scan_iter(f"{P}:answer:{NS}:*", count=1000))


def test_forged_requests_leave_no_more_than_the_caps(pool: tuple[Client, Client]) -> None:
    admin, alice = pool
    forge(alice, 5_000)
    wait_for("the stream to be taken", lambda: admin.store.redis.xlen(STREAM) == 0,
             timeout=60)
    assert len(answer_keys(admin)) <= requests.ANSWERS_KEPT
    forge(alice, 5_000)  # again, now that the first flood's answers fill the cap
    wait_for("the stream to be capped",
             lambda: admin.store.redis.xlen(STREAM) <= requests.REQUESTS_KEPT, timeout=60)
    wait_for("the stream to be taken", lambda: admin.store.redis.xlen(STREAM) == 0,
             timeout=60)
    assert len(answer_keys(admin)) <= requests.ANSWERS_KEPT
    job = alice.submit(["true"], queue=f"{NS}/lq", name="after", requests={"cpu": 1})
    assert not job.queued  # the scheduler still answers
