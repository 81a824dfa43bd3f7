"""Keeping the lease while the leader is busy: renewals from a thread of their own.

The leader renews its lease between steps. Some steps are long: rebuilding the engine
from a store of 50,000 pending workloads and 1,000 ClusterQueues takes longer than the
5 s lease on a loaded machine, so the lease ran out during every rebuild, the next
step found it lost, and the scheduler rebuilt again — leading forever, admitting
nothing. A keeper thread renews every third of the TTL while the main loop works.

Renewing for a loop that is stuck would keep a dead leader in office, so the keeper
renews only while the loop shows progress: :meth:`beat` at the start of every step (and
before a rebuild); when no beat came for ``max_silence`` seconds the keeper stops
renewing and the lease runs out, as it would without the keeper. Safety never rested on
the keeper: every write of the leader is fenced by its lease token in Redis.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from queueing.store.lease import Lease

log = logging.getLogger(__name__)


class LeaseKeeper:
    def __init__(self, lease: Lease, *, max_silence: float = 120.0) -> None:
        self.lease = lease
        self.max_silence = max_silence
        #: Set when a renewal found the lease lost (the main loop steps down).
        self.lost = threading.Event()
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        self._beat = time.monotonic()

    def start(self, holder: str) -> None:
        """Keep ``holder``'s lease (the main loop's :class:`Lease` is not touched)."""
        self.stop()
        self.lost.clear()
        self._stop.clear()
        self.beat()
        self._thread = threading.Thread(target=self._run, args=(self.lease.held_by(holder),),
                                        daemon=True,
                                        name="lease-keeper")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def _run(self, lease: Lease) -> None:
        while not self._stop.wait(lease.ttl / 3):
            silence = time.monotonic() - self._beat
            if silence > self.max_silence:
                log.warning("the scheduling loop made no progress for %.0f s: the lease is "
                            "no longer renewed", silence)
                return
            try:
                if not lease.renew():
                    self.lost.set()
                    return
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("lease renewal failed (%s); trying again", exc)
            except redis.RedisError as exc:
                # Refused (a lease key written around kuota): not ours any more. The main
                # loop steps down, and its next acquire sets the bad key aside.
                log.error("lease renewal refused (%s): stepping down", exc)
                self.lost.set()
                return
