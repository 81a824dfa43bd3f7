"""``--restart-pause 0`` trusts Redis to keep every write it acknowledged; the scheduler
says so at start-up when the server it meets may not (``may_lose_writes``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kuota.service.connection import EMBEDDED, connect, may_lose_writes, persistence_loss
from tests.integration.redis.server import RedisServer

pytestmark = pytest.mark.redis


def test_a_server_without_an_always_synced_aof_may_lose_writes(
        redis_factory: Callable[..., RedisServer]) -> None:
    server = redis_factory().start()
    lossy = may_lose_writes(connect(server.url))
    assert lossy is not None and lossy.startswith("it runs appendonly no")
    assert "a restart loses everything" in lossy  # (with or without snapshots: say which)


@pytest.mark.parametrize(("config", "want"), [
    ({"appendonly": "no", "save": ""},
     'it runs appendonly no and save "": no persistence, a restart loses everything'),
    ({"appendonly": "no", "save": "3600 1"},
     "it runs appendonly no (RDB snapshots only, save '3600 1'): a restart loses everything "
     "written since the last snapshot"),
    ({"appendonly": "yes", "appendfsync": "everysec", "save": ""},
     "it runs appendonly yes, appendfsync everysec: a crash loses about the last second of "
     "writes"),
    ({"appendonly": "yes", "appendfsync": "no", "save": ""},
     "it runs appendonly yes, appendfsync no: a crash loses the writes the operating system "
     "had not flushed yet"),
    ({"appendonly": "yes", "appendfsync": "always", "save": ""}, None),
])
def test_what_a_crash_loses_is_said_plainly(config: dict[str, str], want: str | None) -> None:
    assert persistence_loss(config) == want


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
