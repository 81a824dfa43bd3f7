"""The tests' own redis-server: a restart must come back as *our* server, or fail loudly.

The AOF fault test restarts its server on the same port. Were that port taken
meanwhile by another test's redis-server, the old readiness check (any PONG)
passed, and the test's processes silently talked to a stranger's empty Redis
until a 90 s wait timed out.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integration.redis.server import RedisServer
from tests.ports import free_port


def test_free_ports_stay_below_the_ephemeral_range() -> None:
    from tests.ports import _ephemeral_range
    low, _ = _ephemeral_range()
    assert all(1024 <= free_port() < low for _ in range(20))


def test_a_restart_whose_port_another_server_took_fails_instead_of_using_it(
        redis_factory: Callable[..., RedisServer]) -> None:
    ours = redis_factory().start()
    ours.stop(kill=True)
    stranger = redis_factory()
    stranger.port = ours.port
    stranger.start()
    with pytest.raises(pytest.fail.Exception, match=f"could not serve port {ours.port}"):
        ours.start()
