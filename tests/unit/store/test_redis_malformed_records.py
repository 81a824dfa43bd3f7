"""Malformed records stop nobody (issue 42, finding 4 and scope 3).

Each case writes one kind of malformed record into the store around kuota — a key of the
wrong Redis type, a truncated ClusterQueue, namespace labels that are not JSON, a fence
that is no counter, a LocalQueue stored as a JSON list, a history line that is not JSON,
a pod of an unknown phase — and then asks of everyone who reads the store:

* the scheduler admits the other workloads, a workload submitted after the bad record
  too, and never fails a step (it takes the lease even past a garbage fence or lease);
* ``kuota submit`` and ``kuota status`` exit without a traceback, and ``kuota status``
  names the bad record and why (from the quarantine hash or from its own read);
* the dashboard answers 200 for the overview and for a workload's page.

Before these were read defensively, each stopped all admissions, the lease, ``submit``,
``status`` or a dashboard page (the reproductions of issue 42).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from aiohttp.test_utils import TestClient, TestServer
from store_builders import LOCAL_QUEUE, SteppedPool

from kuota import cli
from kuota.dashboard.redis_source import RedisSource
from kuota.dashboard.server import Dashboard, application
from kuota.service import cli as service_cli


@dataclass(frozen=True)
class Malformed:
    name: str
    #: Writes the malformed record into the pool's Redis (prefix ``t``).
    write: Callable[[SteppedPool], object]
    #: The record ``kuota status`` must name (``key`` or ``key field``)…
    want_named: str
    #: …and a part of why.
    want_reason: str
    #: What the workload page of ``default/before`` must show (its history).
    want_history: str = "Admitted"


def _hset(key: str, field: str, text: str) -> Callable[[SteppedPool], object]:
    return lambda pool: pool.store.redis.hset(key, field, text)


def _replace(key: str, write: Callable[[SteppedPool, str], object]
             ) -> Callable[[SteppedPool], object]:
    """``key`` rewritten as another Redis type by ``write``."""
    def replace(pool: SteppedPool) -> None:
        pool.store.redis.delete(key)
        write(pool, key)
    return replace


def _string(pool: SteppedPool, key: str) -> object:
    return pool.store.redis.set(key, "garbage")


def _list(pool: SteppedPool, key: str) -> object:
    return pool.store.redis.rpush(key, "garbage")


def _node(name: str, *pods: str) -> Callable[[SteppedPool], None]:
    """A node registered (Ready) with these members in its pods set."""
    def write(pool: SteppedPool) -> None:
        pool.store.nodes.register(name, pool="p", capacity={"cpu": 4000}, labels={},
                                  devices=[], now=1.0)
        if pods:
            pool.store.redis.sadd(pool.store.keys.node_pods(name), *pods)
    return write


def _bogus_pod(pool: SteppedPool) -> None:
    _node("n9", "default/ghost:1:0")(pool)
    pool.store.redis.hset("t:pod:default/ghost:1:0", mapping={"state": "Bogus", "node": "n9"})


def _wrong_type_workload(pool: SteppedPool) -> None:
    r = pool.store.redis
    r.zadd("t:workloads", {"default/zz": 1})
    r.zadd("t:workloads-unfinished", {"default/zz": 1})
    r.set("t:workload:default/zz", "garbage")


def _bad_history(pool: SteppedPool) -> None:
    pool.store.redis.rpush("t:workload:default/before:history", "{truncated", "[1, 2]")


def _node_pods_list(pool: SteppedPool) -> None:
    _node("n9")(pool)
    _list(pool, "t:node:n9:pods")


def _node_record_list(pool: SteppedPool) -> None:
    pool.store.redis.sadd("t:nodes", "n9")
    pool.store.redis.rpush("t:node:n9", "garbage")


CASES = [
    # Issue 42's reproductions: each stopped every admission while present.
    Malformed("ClusterQueue truncated",
              _hset("t:objects:ClusterQueue", "broken",
                    '{"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue", "meta'),
              "t:objects:ClusterQueue broken", "stored manifest is not JSON"),
    Malformed("namespace labels not JSON", _hset("t:namespaces", "team-x", "{bad"),
              "t:namespaces team-x", "not JSON"),
    Malformed("namespace labels a list", _hset("t:namespaces", "team-y", "[1]"),
              "t:namespaces team-y", "a JSON list, not an object"),
    Malformed("Cohorts a string", _replace("t:objects:Cohort", _string),
              "t:objects:Cohort", "a string, not a hash"),
    Malformed("nodes a string", _replace("t:nodes", _string), "t:nodes",
              "a string, not a set"),
    Malformed("node record a list", _node_record_list, "t:node:n9", "a list, not a hash"),
    Malformed("node pods a list", _node_pods_list, "t:node:n9:pods",
              "a list, not a set"),
    Malformed("workload record a string", _wrong_type_workload, "t:workload:default/zz",
              "a string, not a hash"),
    Malformed("requests stream a string", _replace("t:requests:default", _string),
              "t:requests:default", "a string, not a stream"),
    Malformed("event stream a string", _replace("t:events", _string), "t:events",
              "a string, not a stream"),
    Malformed("unfinished index a string", _replace("t:workloads-unfinished", _string),
              "t:workloads-unfinished", "a string, not a zset"),
    # No scheduler could ever take the lease again.
    Malformed("fence not a number", lambda pool: pool.store.redis.set("t:scheduler:fence",
                                                                      "abc"),
              "t:scheduler:fence", "fencing token: not a whole number: abc"),
    Malformed("fence a hash", _replace("t:scheduler:fence",
                                       lambda pool, key: pool.store.redis.hset(key, "a", "b")),
              "t:scheduler:fence", "fencing token: a hash, not a string"),
    Malformed("lease garbage that never expires",
              lambda pool: pool.store.redis.set("t:scheduler:lease", "garbage"),
              "t:scheduler:lease", "not identity|token: garbage"),
    Malformed("lease a list", _replace("t:scheduler:lease", _list), "t:scheduler:lease",
              "scheduler lease: a list, not a string"),
    # Every `kuota submit` crashed with a traceback.
    Malformed("LocalQueue a JSON list", _hset("t:objects:LocalQueue", "default/broken",
                                              '["a"]'),
              "t:objects:LocalQueue default/broken", "a JSON list, not an object"),
    # `kuota status` failed without naming it.
    Malformed("pod of an unknown phase", _bogus_pod, "t:pod:default/ghost:1:0",
              "unreadable pod record: ValueError: 'Bogus' is not a valid PodPhase"),
    Malformed("pods set member no pod id", _node("n9", "garbage"), "t:node:n9:pods garbage",
              "'garbage' is not a pod id"),
    # The workload's dashboard page answered 500.
    Malformed("history line not JSON", _bad_history, "t:workload:default/before:history",
              "line 1: not JSON", want_history="Unreadable"),
]


@pytest.fixture
def cli_on(monkeypatch: pytest.MonkeyPatch) -> Callable[[SteppedPool], None]:
    """Point the CLI's commands at a pool's store (and keep no journal)."""
    monkeypatch.setenv("KUOTA_JOURNAL", "off")

    def point(pool: SteppedPool) -> None:
        monkeypatch.setattr(service_cli, "connection", lambda args: pool.connection)
    return point


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_malformed_record_stops_nobody_and_is_named(
        case: Malformed, cli_on: Callable[[SteppedPool], None],
        capsys: pytest.CaptureFixture[str]) -> None:
    pool = SteppedPool()
    cli_on(pool)
    before = pool.submit("before")
    case.write(pool)
    pool.run()
    assert cli.main(["submit", "--queue", LOCAL_QUEUE, "--name", "after", "--requests",
                     "cpu=1", "--", "true"]) == 0, capsys.readouterr().err
    pool.run()
    assert [pool.state(before), pool.state("default/after")] == ["Admitted", "Admitted"]
    assert (pool.scheduler.leading, pool.scheduler.failures) == (True, 0)
    _bad_history_is_shown_if_written(pool, case)
    capsys.readouterr()
    cli.main(["status", "-o", "json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "error:" not in err, err
    named = json.loads(out)["quarantined"]
    if case.want_history == "Admitted":
        assert case.want_reason in named.get(case.want_named, ""), named
    _dashboard_answers(pool, case)


def _bad_history_is_shown_if_written(pool: SteppedPool, case: Malformed) -> None:
    if case.want_history != "Unreadable":
        return
    history = pool.store.workloads.history("default/before")
    unreadable = [h["reason"] for h in history if h["event"] == "Unreadable"]
    assert unreadable == [f"{case.want_named} line 1: not JSON: Expecting property name "
                          "enclosed in double quotes: line 1 column 2 (char 1)",
                          f"{case.want_named} line 2: a JSON list, not an object"]


def _dashboard_answers(pool: SteppedPool, case: Malformed) -> None:
    async def run() -> None:
        dashboard = Dashboard(RedisSource(pool.connection), interval=0.05)
        async with TestClient(TestServer(application(dashboard))) as client:
            await dashboard.refresh()
            overview = await client.get("/")
            assert overview.status == 200, await overview.text()
            page = await client.get("/workloads/default/before")
            text = await page.text()
            assert page.status == 200, text
            assert case.want_history in text

    asyncio.run(run())


def test_a_record_written_well_again_is_no_longer_named() -> None:
    pool = SteppedPool()
    r = pool.store.redis
    r.hset("t:objects:ClusterQueue", "broken", "{")
    pool.run()
    assert "t:objects:ClusterQueue broken" in pool.store.quarantine.all()
    r.hdel("t:objects:ClusterQueue", "broken")
    pool.store.objects.apply([])  # (a config change: the scheduler reads the objects again)
    pool.run()
    assert pool.store.quarantine.all() == {}


def test_a_key_of_the_wrong_type_is_named_by_the_cli_before_the_scheduler_sets_it_aside(
        cli_on: Callable[[SteppedPool], None], capsys: pytest.CaptureFixture[str]) -> None:
    pool = SteppedPool()
    cli_on(pool)
    pool.store.redis.delete("t:workloads")
    pool.store.redis.set("t:workloads", "garbage")
    assert cli.main(["get", "workloads"]) == 1
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: stored key t:workloads holds a string, not a zset (written around kuota): the "
        "scheduler sets it aside and names it in `kuota status`"]
