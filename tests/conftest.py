"""Shared pytest fixtures. Each section belongs to the component named in its header."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.emulator import Emulator
    from tests.integration.redis.server import RedisServer

# --- Kubernetes API emulator (tests/emulator, docs/dev/emulator.md) ----------------------------


@pytest.fixture
def k8s_api() -> Iterator[Emulator]:
    """A fresh emulated Kubernetes API server on 127.0.0.1; ``k8s_api.url`` is its address.

    The test fails if the emulator itself crashed on a request (a bug, not an API error).
    """
    from tests.emulator import Emulator

    with Emulator() as api:
        yield api
        errors = api.unexpected_errors
    assert not errors, f"the emulator failed internally: {errors!r}"



# --- Redis (kuota Redis mode: queueing/store, kuota/service; docs/redis-mode.md) --------------
#
# Redis tests run against a real redis-server: $REDIS_URL when set, else one this session
# starts on a free port of 127.0.0.1 (no persistence, a temporary directory). Without
# redis-server they are skipped — unless KUOTA_REQUIRE_REDIS=1 (CI), where that is a failure.
# Every test gets its own key prefix; its keys (and its rq queues' keys) are deleted after.
# The helpers live in tests/integration/redis/server.py.


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """URL of the session's Redis: $REDIS_URL, or a redis-server started for the session."""
    import os

    from tests.integration.redis.server import RedisServer

    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.cleanup()


@pytest.fixture
def redis_factory() -> Iterator[Callable[..., RedisServer]]:
    """Private, restartable redis-servers: ``redis_factory(appendonly=True).start()``."""
    from tests.integration.redis.server import RedisServer

    started: list[RedisServer] = []

    def make(*, appendonly: bool = False) -> RedisServer:
        server = RedisServer(appendonly=appendonly)
        started.append(server)
        return server

    yield make
    for server in started:
        server.cleanup()


@pytest.fixture
def redis_prefix(redis_server_url: str) -> Iterator[str]:
    """A fresh key prefix on the session's Redis, purged after the test."""
    import uuid

    from tests.integration.redis.server import purge_prefix

    prefix = f"t{uuid.uuid4().hex[:10]}"
    yield prefix
    purge_prefix(redis_server_url, prefix)
