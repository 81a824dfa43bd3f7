"""One handle on everything kuota keeps in Redis under one prefix.

:class:`Store` wraps a redis-py client created with ``decode_responses=True``
(text in, text out); rq, which stores pickles, gets its own bytes client from
the caller. The store is the only code in the core packages that talks to
Redis; the service, the workers, the client and the CLI all go through it.
"""

from __future__ import annotations

from typing import Any

import redis as redis_py

from queueing.store.dispatched import DispatchedStore
from queueing.store.events import EventStream
from queueing.store.indexes import WorkloadIndexes
from queueing.store.keys import DEFAULT_PREFIX, Keys
from queueing.store.lease import Lease
from queueing.store.nodes import NodeStore
from queueing.store.objects import ObjectStore
from queueing.store.pods import PodStore
from queueing.store.quarantine import Quarantine
from queueing.store.requests import RequestStream
from queueing.store.scripts import Scripts
from queueing.store.workloads import WorkloadStore


class Store:
    def __init__(self, redis: Any, prefix: str = DEFAULT_PREFIX) -> None:
        self.redis = redis
        self.keys = Keys(prefix)
        self.scripts = Scripts(redis)
        self.objects = ObjectStore(redis, self.keys)
        #: The workloads by state: unfinished, finished by when (module indexes).
        self.indexes = WorkloadIndexes(redis, self.keys, self.scripts)
        self.workloads = WorkloadStore(redis, self.keys, self.scripts, self.indexes,
                                       refused=redis_py.exceptions.NoPermissionError)
        self.dispatched = DispatchedStore(redis, self.keys, self.scripts, self.workloads)
        self.nodes = NodeStore(redis, self.keys, self.scripts)
        self.pods = PodStore(redis, self.keys, self.scripts)
        self.events = EventStream(redis, self.keys)
        self.requests = RequestStream(redis, self.keys)
        #: Malformed records, set aside and named (module quarantine).
        self.quarantine = Quarantine(redis, self.keys, self.scripts)

    @classmethod
    def from_url(cls, url: str, prefix: str = DEFAULT_PREFIX) -> Store:
        """A store on a new text-mode client for ``redis://…`` (or ``unix://…``)."""
        return cls(redis_py.Redis.from_url(url, decode_responses=True), prefix)

    @property
    def prefix(self) -> str:
        return self.keys.prefix

    def server_id(self) -> str:
        """The Redis server process's identity (``run_id``): new after every restart; ""
        where ``INFO`` is refused (some managed services and emulators)."""
        try:
            return str(self.redis.info("server").get("run_id", ""))
        except redis_py.ResponseError:
            return ""

    def lease(self, identity: str, ttl: float) -> Lease:
        return Lease(self.scripts, self.keys, identity, ttl)

    def reset(self) -> int:
        """Delete every key under the prefix; returns how many (tests, ``--reset``)."""
        deleted = 0
        batch: list[str] = []
        for key in self.redis.scan_iter(match=self.keys.pattern(), count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(self.redis.delete(*batch))
                batch.clear()
        if batch:
            deleted += int(self.redis.delete(*batch))
        return deleted
