"""``kuota scheduler``: one active scheduler per store, the others standing by.

Every scheduler process loops: without the lease it keeps a warm copy of the
store (:mod:`kuota.service.standby`) and tries to take the lease (every third
of the TTL); with it, it builds a :class:`~kuota.service.leader.Leader` from
that copy, caught up, and steps it. Leadership ends — and all in-memory state is dropped
— when a write comes back *fenced*, the lease cannot be renewed, the
leader asks for a rebuild, or Redis cannot be reached; the next loop
re-acquires (keeping the token if the lease is still ours) and rebuilds. Redis
being the truth, dropping state is always safe; keeping it after a doubt
never is — and a Redis that restarted, perhaps without its last second of writes, is
such a doubt even when no command failed (:class:`~kuota.service.connection.
RestartGuard`). A step that fails because of one workload
(:class:`~admission.errors.WorkloadFailed`) sets that workload aside as
``Invalid`` with the error as its message, then rebuilds without it; any
other error is logged and followed by a rebuild — a scheduler outlives
whatever is stored.

A standby takes over at most one TTL after the active scheduler dies
(``--lease-ttl``, default 5 s); a clean shutdown releases the lease at once.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import redis

from admission.errors import WorkloadFailed
from admission.events import WorkloadEvent
from kuota.service.connection import Connection, ServerRestarted
from kuota.service.laps import StepLaps
from kuota.service.leader import Leader, NeedRebuild, Timing
from kuota.service.leasekeeper import LeaseKeeper
from kuota.service.standby import WarmCopy
from queueing.store import Fenced
from quota.config import EngineConfig

log = logging.getLogger(__name__)

#: Added to a worker's stop check and grace: its SIGKILL, the exit, and clocks.
STOP_MARGIN = 0.5


def default_identity() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class SchedulerOptions:
    identity: str = field(default_factory=default_identity)
    timing: Timing = field(default_factory=Timing)
    engine: EngineConfig = field(default_factory=EngineConfig)
    clock: Callable[[], float] = time.time
    #: Called in the scheduling thread after every step (metrics, presence); what it
    #: raises is logged, never fatal.
    observers: list[Callable[[SchedulerService], None]] = field(default_factory=list)
    #: Told every batch of engine events the leader persists (metrics), in that thread.
    on_events: Callable[[Leader, Sequence[WorkloadEvent]], None] | None = None


class SchedulerService:
    def __init__(self, conn: Connection, options: SchedulerOptions | None = None) -> None:
        self.conn = conn
        self.options = options or SchedulerOptions()
        self.lease = conn.store.lease(self.options.identity, self.options.timing.lease_ttl)
        self.leader: Leader | None = None
        self.keeper = LeaseKeeper(self.lease)
        self.warm = WarmCopy(conn.store, self.options.engine, self.options.clock)
        #: Times this process became leader (tests and status output).
        self.terms = 0
        #: Steps that failed for a reason not traced to one workload, or with a request Redis
        #: refused (logged; tests assert none happen).
        self.failures = 0
        self._backoff = 0.1
        #: The last leader step's duration and the longest since the start, in seconds
        #: (metrics; a step outlasting a third of the lease is logged).
        self.last_step = self.longest_step = 0.0
        #: Leader steps taken (all terms).
        self.steps = 0

    @property
    def leading(self) -> bool:
        return self.leader is not None

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set, then give the lease up."""
        try:
            while not stop.is_set():
                self.step(stop)
                self._tell_observers()
        finally:
            self.leader = None
            self.keeper.stop()
            try:
                self.lease.release()
            except redis.RedisError as exc:
                log.warning("could not release the lease: %s", exc)

    def step(self, stop: threading.Event | None = None) -> None:
        wait = (stop or threading.Event()).wait
        try:
            if not self.conn.restarts.guarding and not self.conn.embedded:
                self.conn.restarts.guard(self.conn.store)
            if self.leader is None:
                self._stand_by()
                if not self.lease.acquire():
                    wait(self.options.timing.lease_ttl / 3)
                    return
                assert self.lease.holder is not None
                # Held through the rebuild, however long it takes (module leasekeeper).
                self.keeper.start(self.lease.holder)
                self.leader = Leader(self.conn, self.lease.holder, timing=self.options.timing,
                                     config=self.options.engine, clock=self.options.clock,
                                     warm=self.warm.take())
                self.leader.on_events = self.options.on_events
                self.terms += 1
            self.keeper.beat()
            if self.keeper.lost.is_set():
                raise Fenced(f"lease of {self.lease.holder} was lost")
            started = time.monotonic()
            self.leader.step()
            self._stepped(time.monotonic() - started, self.leader.laps)
            self._backoff = 0.1
        except Fenced as exc:
            log.warning("stepping down: %s", exc)
            self.leader = None
            self.lease.holder = None
            self.keeper.stop()
        except NeedRebuild as exc:
            log.info("rebuilding: %s", exc)
            self.leader = None
        except ServerRestarted as exc:
            # Everything known was read from the old server: dropped, and read again once
            # the workers have stopped the pods of placements Redis may have lost
            # (Timing.restart_pause).
            self.leader = None
            self.warm.drop()
            self.conn.restarts.accept()
            pause = self._restart_pause()
            log.warning("%s; rebuilding from the restarted store in %.1fs", exc, pause)
            wait(pause)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("redis unavailable (%s); retrying in %.1fs", exc, self._backoff)
            self.leader = None
            wait(self._backoff)
            self._backoff = min(self._backoff * 2, 2.0)
        except WorkloadFailed as exc:
            # One workload broke the step: set it aside, rebuild without it, go on.
            self.leader = None
            self._quarantine(exc)
        except redis.ResponseError as exc:
            self.leader = None
            if "WRONGTYPE" not in str(exc) or not self._set_aside_wrong_types():
                self._refused(exc, wait)
        except redis.RedisError as exc:
            self.leader = None
            self._refused(exc, wait)
        except Exception:
            # Not traceable to one workload: a long-running scheduler must not die of it (its
            # standbys would die of the same thing). Drop all state — Redis is the truth —
            # and rebuild after a pause, so a persistent fault shows in the log, not in a spin.
            # (A key of the wrong type that a client library reports in its own way is set
            # aside first: then the rebuild goes without it, at once.)
            self.leader = None
            if self._set_aside_wrong_types():
                return
            log.exception("scheduling step failed; rebuilding from Redis in %.1fs",
                          self._backoff)
            self.failures += 1
            wait(self._backoff)
            self._backoff = min(self._backoff * 2, 2.0)

    def _refused(self, exc: redis.RedisError, wait: Callable[[float], object]) -> None:
        log.error("redis refused a request (%s); rebuilding in %.1fs", exc, self._backoff)
        self.failures += 1
        wait(self._backoff)
        self._backoff = min(self._backoff * 2, 2.0)

    def _set_aside_wrong_types(self) -> bool:
        """A step failed: if keys of the store hold the wrong type (written around kuota),
        move them aside and name them (:mod:`queueing.store.quarantine`), to rebuild at
        once without them. False: nothing was wrong with the keys."""
        try:
            moved = self.conn.store.quarantine.repair()
        except redis.RedisError as exc:
            log.warning("cannot check the store's keys for the wrong type: %s", exc)
            return False
        for key, why in moved.items():
            log.error("stored key %s set aside (%s): it held %s", key,
                      self.conn.store.keys.quarantined(key), why)
        if moved:
            self.warm.drop()  # (read from the keys as they were)
        return bool(moved)

    def _stepped(self, seconds: float, laps: StepLaps) -> None:
        self.steps += 1
        self.last_step = seconds
        self.longest_step = max(self.longest_step, seconds)
        if seconds > self.options.timing.lease_ttl / 3:
            # The lease is renewed between steps: a longer step risks losing it. Which
            # stage took the time says where to look (kuota.service.laps).
            log.warning("slow step: %.2f s, more than a third of the %.1f s lease (%s)",
                        seconds, self.options.timing.lease_ttl, laps.line())

    def _stand_by(self) -> None:
        """Keep the store loaded while not leading, so that taking over costs only what
        changed (module standby). A failure costs only that: a leader reads the store."""
        try:
            self.warm.refresh()
        except (redis.ConnectionError, redis.TimeoutError):
            raise
        except Exception:
            log.warning("standing by without a copy of the store; a new leader reads it "
                        "whole", exc_info=True)
            self.warm.give_up()

    def _tell_observers(self) -> None:
        for observe in self.options.observers:
            try:
                observe(self)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                # Redis restarting: the next step notices too; a traceback per step is noise.
                log.warning("scheduler observer %r: redis unavailable (%s)", observe, exc)
            except Exception:
                log.exception("scheduler observer %r failed", observe)

    def _restart_pause(self) -> float:
        """How long to wait after meeting a restarted Redis before leading again:
        ``Timing.restart_pause``, or longer when a registered worker's processes may
        outlive their pods longer (its stop check and grace, ``NodeRecord.stops_within``).
        Nodes of any state count: a worker the store calls Lost may still run pods. A
        pause of 0 says Redis never loses an acknowledged write here: no wait at all."""
        pause = self.options.timing.restart_pause
        if pause == 0:
            return 0.0
        try:
            nodes = self.conn.store.nodes.all()
        except redis.RedisError as exc:
            log.warning("cannot read the nodes' grace periods (%s): waiting the least, %.1fs",
                        exc, pause)
            return pause
        slowest = max(nodes, key=lambda n: n.stops_within, default=None)
        if slowest is None or slowest.stops_within + STOP_MARGIN <= pause:
            return pause
        log.info("node %s's worker may take %.1fs to stop a pod (its stop check and grace)",
                 slowest.name, slowest.stops_within)
        return slowest.stops_within + STOP_MARGIN

    def _quarantine(self, failure: WorkloadFailed) -> None:
        holder = self.lease.holder
        if holder is None:
            return  # not leading any more: the next leader meets the workload again
        log.error("workload %s made a scheduling step fail", failure.key, exc_info=failure.cause)
        store = self.conn.store
        record = store.workloads.find(failure.key)
        status = store.workloads.quarantine(
            holder, failure.key, message=f"kuota cannot schedule this workload: "
            f"{failure.reason}", now=self.options.clock(),
            pods=record.pod_refs() if record is not None else ())
        if status == "fenced":
            self.lease.holder = None
