"""Which schedulers run, which one leads and since when — for ``kuota status``.

The lease says who leads *now*; nothing else in the store said that other
schedulers exist, or that the only one died (a dead scheduler was invisible:
``submit`` went on succeeding and workloads waited "for the scheduler").
Each scheduler therefore writes a small *presence* record into one hash,
field = its identity: host, pid, start time, when it last wrote, whether it
leads and since when. It writes from its scheduling loop (at most every
``every`` seconds), so a record that stops changing means the loop stopped —
``kuota status`` calls a scheduler silent for longer than ``dead_after``
(three lease TTLs) *not responding*, and says admission is stopped when no
live scheduler holds the lease. Records silent for a day are pruned by the
next writer, so the hash stays small; a clean shutdown removes its own.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import redis

if TYPE_CHECKING:
    from kuota.service.scheduler import SchedulerService

log = logging.getLogger(__name__)

#: Presence records older than this are removed by the next writer.
PRUNE_AFTER = 86400.0


@dataclass(frozen=True)
class Presence:
    identity: str
    host: str
    pid: int
    started: float
    seen: float
    leading: bool
    leading_since: float | None
    terms: int
    lease_ttl: float

    def dead(self, now: float) -> bool:
        """Silent for three lease TTLs: its loop is stuck or the process is gone."""
        return now - self.seen > 3 * self.lease_ttl


class Announcer:
    """Called after each scheduler step (a :class:`SchedulerService` observer)."""

    def __init__(self, *, clock: Callable[[], float], every: float = 1.0) -> None:
        self.clock = clock
        self.every = every
        self.started = clock()
        self._next = 0.0
        self._leading_since: float | None = None
        self._terms = 0

    def __call__(self, service: SchedulerService) -> None:
        now = self.clock()
        leading = service.leader is not None
        changed = leading != (self._leading_since is not None) or service.terms != self._terms
        if leading and (self._leading_since is None or service.terms != self._terms):
            self._leading_since = now
        elif not leading:
            self._leading_since = None
        self._terms = service.terms
        if now < self._next and not changed:
            return
        self._next = now + self.every
        options = service.options
        record = Presence(options.identity, socket.gethostname(), os.getpid(), self.started,
                          now, leading, self._leading_since, service.terms,
                          options.timing.lease_ttl)
        write(service.conn.store, record)

    def leave(self, service: SchedulerService) -> None:
        """Remove this scheduler's record (a clean shutdown is not a death)."""
        store = service.conn.store
        try:
            store.redis.hdel(store.keys.schedulers, service.options.identity)
        except redis.RedisError as exc:  # Redis gone too: the record ages into "dead"
            log.warning("could not remove this scheduler's presence record: %s", exc)


def write(store: Any, record: Presence) -> None:
    key = store.keys.schedulers
    store.redis.hset(key, record.identity, json.dumps(asdict(record)))
    stale = [p.identity for p in read(store) if record.seen - p.seen > PRUNE_AFTER]
    if stale:
        store.redis.hdel(key, *stale)


def read(store: Any) -> list[Presence]:
    """Every presence record; unreadable ones (written around kuota) are skipped."""
    out = []
    for identity, text in sorted(store.redis.hgetall(store.keys.schedulers).items()):
        try:
            fields = json.loads(text)
            out.append(Presence(**{**fields, "identity": str(identity)}))
        except (ValueError, TypeError, RecursionError):
            continue
    return out
