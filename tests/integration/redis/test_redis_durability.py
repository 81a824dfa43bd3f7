"""``--restart-pause 0`` trusts Redis to keep every write it acknowledged; the scheduler
says so at start-up when the server it meets may not (``may_lose_writes``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kuota.service.connection import EMBEDDED, connect, may_lose_writes
from tests.integration.redis.server import RedisServer

pytestmark = pytest.mark.redis


def test_a_server_without_an_always_synced_aof_may_lose_writes(
        redis_factory: Callable[..., RedisServer]) -> None:
    server = redis_factory().start()
    assert may_lose_writes(connect(server.url)) == (
        "it runs appendonly no, appendfsync everysec: a crash loses what it acknowledged last")


def test_a_server_that_syncs_every_write_loses_none(
        redis_factory: Callable[..., RedisServer]) -> None:
    server = redis_factory(appendonly=True).start()  # (appendfsync always)
    assert may_lose_writes(connect(server.url)) is None


def test_sentinel_promotions_and_the_embedded_store() -> None:
    lossy = may_lose_writes(connect("redis+sentinel://127.0.0.1:1/kuota"))
    assert lossy is not None and "Sentinel promotion" in lossy
    assert may_lose_writes(connect(EMBEDDED)) is None


def test_a_server_that_refuses_config_is_not_trusted(
        redis_factory: Callable[..., RedisServer]) -> None:
    server = redis_factory(appendonly=True).start()
    conn = connect(server.url)
    conn.text.acl_setuser("limited", enabled=True, passwords=["+pw"], keys=["*"],
                          commands=["+@all", "-config"])
    limited = connect(server.url.replace("redis://", "redis://limited:pw@"))
    lossy = may_lose_writes(limited)
    assert lossy is not None and lossy.startswith("its persistence settings cannot be read")
