"""A standby scheduler's copy of the store, kept warm so that taking over costs only what
changed since it last looked.

A leader starts from everything Redis holds (:func:`kuota.service.rebuild.load`): every
queue object, every unfinished workload read, checked and queued. At Kueue's large-scale
size (1,000 ClusterQueues, 50,000 pending) that takes seconds, and during a failover those
are seconds in which nothing is admitted. A standby therefore loads the store while it
waits for the lease and keeps the copy current by following the event stream, as the
leader does: each workload named by an event since the last look is read again and put
back in its stored state (:meth:`Loaded.drop` then :meth:`Loaded.put`). This is what the
informer caches of a Kubernetes controller's standby replicas do.

Nothing is decided from the copy while standing by. Once the lease is taken, one last
catch-up reads what changed since the previous look: from then on every write of the
previous leader is fenced, so the stream holds everything the copy has not seen. The
copy takes the queue object changes a leader takes in place
(:mod:`kuota.service.reconfig`), and is dropped and loaded again whole when other queue
objects change (they rebuild a leader too), when the stream was trimmed past the copy's
position or ends before it (Redis lost writes), and when a look fails. A Redis that
restarted — perhaps without its last second, which the copy may reflect — fails the
look: the scheduler guards its connection (:class:`kuota.service.connection.RestartGuard`)
and drops the copy (:meth:`WarmCopy.drop`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kuota.service import rebuild, reconfig
from queueing.store import Store
from queueing.store.events import named
from quota.config import EngineConfig

log = logging.getLogger(__name__)


class WarmCopy:
    """The store as a new leader needs it, and the stream position it reflects."""

    def __init__(self, store: Store, config: EngineConfig,
                 clock: Callable[[], float]) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.loaded: rebuild.Loaded | None = None
        #: The last stream entry the copy reflects.
        self.position = ""
        #: A refresh failed: no copy is kept until this process has led (a leader reads the
        #: store itself, and sets aside a workload it cannot take in).
        self.off = False
        self._specs = rebuild.SpecCache(limit=1024)

    def refresh(self) -> None:
        """Bring the copy up to date: read again what the events since the last look name,
        or load it whole when there is none or it cannot be caught up."""
        if self.off:
            return
        if self.loaded is not None and self._catch_up():
            return
        # Follow from before the load: what happens during it is seen twice, harmlessly.
        self.loaded = None
        started = time.monotonic()
        position = self.store.events.last_id()
        self.loaded = rebuild.load(self.store, self.config)
        self.position = position
        log.info("store loaded ahead of leading: %d workloads in %.2f s",
                 len(self.loaded.workloads), time.monotonic() - started)

    def drop(self) -> None:
        """Redis restarted: the copy may reflect writes it lost; the next look loads it."""
        self.loaded = None

    def give_up(self) -> None:
        self.loaded = None
        self.off = True

    def take(self) -> tuple[rebuild.Loaded, str] | None:
        """For a leader that has just taken the lease: the copy, caught up, and forgotten
        here (the leader changes it); None when there is none to start from."""
        loaded, self.loaded, self.off = self.loaded, None, False
        if loaded is None:
            return None
        self.loaded = loaded
        try:
            if not self._catch_up():
                return None
        finally:
            self.loaded = None
        return loaded, self.position

    def _catch_up(self) -> bool:
        """Put back every workload named by an event since the last look; False (the copy
        dropped) when it cannot be caught up: queue objects changed, Redis lost writes, or
        entries it had not read were trimmed from the stream."""
        assert self.loaded is not None
        try:
            keys = self._changed()
            if keys is None:
                self.loaded = None
                return False
            now = self.clock()
            # (finished ones are only dropped: never sent)
            records = self.store.workloads.records_not_in(rebuild.SET_ASIDE, keys)
            for key in keys:
                self.loaded.drop(key, now)
                record = records.get(key)
                if record is not None:
                    self.loaded.put(record, self._specs)
            self.loaded.engine.drain_outbox()
        except BaseException:
            self.loaded = None  # half caught up: never a copy to start from
            raise
        return True

    def _changed(self) -> list[str] | None:
        """The workloads named since the last look (sorted), or None if the copy is lost."""
        events = self.store.events
        # Lost writes the copy may reflect, or lost entries it has not read.
        if events.rolled_back(self.position) or events.missed(self.position):
            return None
        read = events.read_all(self.position)
        if read:
            self.position = read[-1].id
        if any(e.kind == "config" for e in read):
            assert self.loaded is not None
            # As the leader does: the changes it can take in place, or the copy goes.
            configs = reconfig.read_again(self.store, self.loaded.engine, self.loaded.configs)
            if configs is None:
                return None
            self.loaded.configs = configs
        return sorted(named(read))
