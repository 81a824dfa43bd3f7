"""Where the store lives: a Redis URL, ``REDIS_URL``, or an embedded fakeredis.

Two clients share one server: a text client (``decode_responses=True``) for
the store, and a bytes client for rq, which stores pickles and does not work
with decoded responses.

Without a URL, kuota uses one in-process fakeredis server per process (with
``lupa`` for Lua), so ``kuota`` runs everything on one machine with nothing
installed. That store lives only as long as the process: it serves the
Python API and the demo, which run the scheduler and workers as threads
(:mod:`kuota.service.embedded`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import fakeredis
import redis

from queueing.store import DEFAULT_PREFIX, Store

_EMBEDDED_LOCK = threading.Lock()
_EMBEDDED: fakeredis.FakeServer | None = None


def embedded_server() -> fakeredis.FakeServer:
    """The process's one embedded server (created on first use)."""
    global _EMBEDDED
    with _EMBEDDED_LOCK:
        if _EMBEDDED is None:
            _EMBEDDED = fakeredis.FakeServer()
        return _EMBEDDED


@dataclass(frozen=True)
class Connection:
    #: ``redis://…`` or None for the embedded server.
    url: str | None
    text: Any
    raw: Any
    store: Store

    @property
    def embedded(self) -> bool:
        return self.url is None

    @property
    def prefix(self) -> str:
        return self.store.prefix

    def describe(self) -> str:
        return "embedded fakeredis (this process only)" if self.url is None else self.url


def resolve_url(url: str | None) -> str | None:
    """``--redis`` if given, else ``REDIS_URL``, else None (embedded)."""
    return url or os.environ.get("REDIS_URL") or None


def connect(url: str | None = None, *, prefix: str = DEFAULT_PREFIX,
            server: fakeredis.FakeServer | None = None) -> Connection:
    """Connect to ``url`` (``REDIS_URL`` when None) or to the embedded server."""
    url = resolve_url(url)
    if url is None:
        fake = server or embedded_server()
        text: Any = fakeredis.FakeRedis(server=fake, decode_responses=True)
        raw: Any = fakeredis.FakeRedis(server=fake)
    else:
        # Socket timeouts keep a dead server from hanging a loop forever; the
        # keepalive lets a blocked XREAD/BLPOP notice a vanished peer.
        options: dict[str, Any] = {"socket_timeout": 30, "socket_connect_timeout": 5,
                                   "socket_keepalive": True, "health_check_interval": 10}
        text = redis.Redis.from_url(url, decode_responses=True, **options)
        raw = redis.Redis.from_url(url, **options)
    return Connection(url, text, raw, Store(text, prefix))
