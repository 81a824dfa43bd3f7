"""The leader's resync: what Redis stores compared with what the engine holds, a slice a step.

The leader learns of every change from the event stream; the resync is the net under
that. Every ``Timing.resync_every`` a *pass* begins: the state and attempt stored for
every workload the leader holds live (what an event may have failed to tell about), and
for a window of the others, are compared with the engine's, and those that differ are
read again (:attr:`Leader.recheck <kuota.service.leader.Leader.recheck>`).

**A window of the retained.** A pool keeps its finished workloads for
``--retain-finished`` (a week by default): at one job a second that is 600,000 records,
and reading them all every pass would take seconds. The others are read in a window of
``Timing.resync_window`` that moves on at each pass, so that a workload the leader does
not hold — one an event never named — is met within a few passes. A workload of the
window missing from the index its state calls for (stored or finished by an older
kuota) is put back in it: the rebuild reads the unfinished index, retention the
finished one.

**A slice a step.** At 50,000 live workloads a pass reads 70,000 records' states. Read
in one go, with a pipeline of one ``HMGET`` each, that held up one step for over a
second of a slow machine's CPU every 30 s, during which nothing was admitted. A pass
now compares :data:`RESYNC_SLICE` workloads a step (the live ones first, then the
window a slice at a time), each slice read with a few ``read_many`` script calls
(:meth:`~queueing.store.workloads.WorkloadStore.states`) instead of an ``HMGET`` a
workload. A workload is compared with
what the engine holds at the step that reads it, so slicing changes no outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Engine
    from queueing.store import Store


class Attempted(Protocol):
    """What the leader knows was stored of a workload (its ``Tracked``): the attempt."""

    @property
    def attempt(self) -> int: ...


class Dispatched(Protocol):
    """The copies this pool runs for other managers (:mod:`kuota.service.dispatched`)."""

    @property
    def copies(self) -> Mapping[str, object]: ...

    def knows(self, key: str, state: str | None, attempt: str | None) -> bool: ...


class ResyncTiming(Protocol):
    @property
    def resync_window(self) -> int: ...


class ResyncHost(Protocol):
    """What a resync pass reads of the leader (:class:`kuota.service.leader.Leader`): an
    interface owned here, so that this module does not import the leader."""

    @property
    def engine(self) -> Engine: ...
    @property
    def store(self) -> Store: ...
    @property
    def tracked(self) -> Mapping[str, Attempted]: ...
    @property
    def dispatched(self) -> Dispatched: ...
    @property
    def timing(self) -> ResyncTiming: ...
    @property
    def recheck(self) -> set[str]: ...

log = logging.getLogger("kuota.service.leader")

#: Workloads a step of a pass compares (14–19 ms of a slow machine's CPU:
#: benchmarks/leader_resync.py).
RESYNC_SLICE = 5_000


class Resync:
    def __init__(self, leader: ResyncHost) -> None:
        self.leader = leader
        #: The live workloads of the pass under way, and how many of them are compared.
        self._live: list[str] = []
        self._done = 0
        #: Where the window of stored workloads goes on (a rank, oldest first), and how
        #: much of it the pass under way has still to look over.
        self._window_from = 0
        self._window_left = 0

    @property
    def running(self) -> bool:
        return self._done < len(self._live) or self._window_left > 0

    def begin(self) -> None:
        """Start a pass over the workloads live now."""
        leader = self.leader
        self._live = list(dict.fromkeys([*leader.engine.records, *leader.tracked,
                                         *leader.dispatched.copies]))
        self._done = 0
        self._window_left = leader.timing.resync_window

    def step(self) -> None:
        """Compare the next slice of the pass: the live workloads first, then the window."""
        if self._done < len(self._live):
            keys = self._live[self._done:self._done + RESYNC_SLICE]
            self._done += len(keys)
            self._compare(keys)
            return
        store = self.leader.store
        count = min(RESYNC_SLICE, self._window_left)
        window = store.indexes.window(self._window_from, count)
        self._window_left -= count
        if len(window) == count:
            self._window_from += count
        else:  # (the oldest again at the next pass)
            self._window_from = self._window_left = 0
        indexed = store.indexes.mend(window)
        if indexed:
            log.warning("%d workload(s) were missing from the store's indexes (stored or "
                        "finished by an older kuota?): put back", indexed)
        self._compare([key for key, _ in window])

    def _compare(self, keys: list[str]) -> None:
        """Those of ``keys`` whose stored state differs from the engine's are read again."""
        leader = self.leader
        for key, (state, attempt) in zip(keys, leader.store.workloads.states(keys),
                                         strict=True):
            mine = leader.engine.records.get(key)
            tracked = leader.tracked.get(key)
            if state == State.INVALID and (mine is None or mine.state is State.FINISHED):
                continue  # set aside: kept, never scheduled, until cancelled
            if state == State.FINISHED and (mine is None or mine.state is State.FINISHED) \
                    and key not in leader.dispatched.copies:
                continue  # (a finished copy is followed until its manager removes it)
            if leader.dispatched.knows(key, state, attempt):
                continue
            if mine is not None and state == mine.state and tracked is not None \
                    and str(tracked.attempt) == attempt:
                continue
            leader.recheck.add(key)
