"""The dashboard needs no right to write: it runs as a Redis ACL user limited to reads
(and read-only scripts), which docs/dashboard.md gives as the user to create."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import pytest
import redis

from kuota.client import Client
from kuota.dashboard.redis_source import RedisSource
from kuota.service.connection import connect
from tests.integration.redis.harness import CQ, queues

pytestmark = pytest.mark.redis

#: The rights docs/dashboard.md tells operators to give the dashboard's user.
RIGHTS = ["-@all", "+@read", "+eval_ro", "+time", "+ping"]


@pytest.fixture
def reader_url(redis_server_url: str, redis_prefix: str) -> Iterator[str]:
    admin = redis.Redis.from_url(redis_server_url)
    user, password = f"dash-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin.acl_setuser(user, enabled=True, passwords=[f"+{password}"],
                      keys=[f"{redis_prefix}:*"], commands=RIGHTS)
    host = redis_server_url.split("://", 1)[1]
    yield f"redis://{user}:{password}@{host}"
    admin.acl_deluser(user)


def test_the_dashboard_reads_with_a_read_only_user(redis_server_url: str, redis_prefix: str,
                                                   reader_url: str) -> None:
    client = Client(redis_server_url, prefix=redis_prefix)
    client.apply(queues(CQ("a", {"cpu": 4})))
    client.submit([sys.executable, "-c", "pass"], queue="default/lq-a", name="w",
                  requests={"cpu": 8})
    source = RedisSource(connect(reader_url, prefix=redis_prefix))
    overview = source.overview()
    assert [p.key for p in overview.pending["a"]] == ["default/w"]
    page = source.workload("default/w", overview)
    assert page is not None and [h.event for h in page.history] == ["Submitted"]
    with pytest.raises(redis.exceptions.NoPermissionError):
        source.store.workloads.cancel("default/w", now=0.0)
