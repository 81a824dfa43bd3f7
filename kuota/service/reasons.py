"""Step 6 of the leader: why pending workloads wait, written to their records.

The engine, the placer and the pool members each give a waiting workload a reason
(``WaitingForQuota``, ``WaitingForNodes``, a check's verdict). :class:`PendingReasons`
walks the live workloads and writes the reasons that changed since it last wrote them,
so that ``kuota status`` and ``kuota why`` tell what the scheduler knows.

**Only when something changed.** Every reason is given by the engine, the placer or the
pool members, and each counts what it gives. While those counts (and the number of
tracked workloads) stay as they were at the last walk, a walk would find nothing new:
an idle leader holding 50,000 workloads walked them all every 2.5 s to find nothing,
half of its CPU.

**Less often with a backlog.** A walk begins at most every ``Timing.reasons_every``, and
no more than :data:`REASONS_PER_SECOND` workloads a second are looked over (50,000: a
walk every 2.5 s), so that telling why does not slow down deciding.

**A slice a step.** A walk looks over :data:`REASONS_SLICE` workloads a step and goes on
at the next ones: a walk over 50,000, with writing what changed, held one step for
0.47 s on a slow host.

**Not during a burst.** While the leader catches up with a burst of events, the reasons
wait (at most :data:`REASONS_DEFERRED_MOST`): writing thousands of new workloads'
reasons took a third of such a step, and delayed everything queued behind the burst in
the stream — the ends of pods among it.

**Not for what was never tried.** A workload not tried yet has nothing to tell (as the
operator, and Kueue, write no condition for it): of a burst of 50,000 submissions each
was written once for that alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from admission.engine import UNTRIED
from quota.lifecycle import State

if TYPE_CHECKING:
    from kuota.service.leader import Leader

#: Live workloads whose pending reasons are looked over per second, at most.
REASONS_PER_SECOND = 20_000
#: Longest the pending reasons wait for the leader to catch up with a burst of events.
REASONS_DEFERRED_MOST = 5.0
#: Live workloads one step looks over for pending reasons, at most (module doc).
REASONS_SLICE = 10_000
#: Reasons one script call writes.
WRITE_CHUNK = 500


class PendingReasons:
    def __init__(self, leader: Leader, now: float) -> None:
        self.leader = leader
        #: The reason last written (or found stored) per workload: written again only
        #: when it changes.
        self.written: dict[str, tuple[str, str]] = {}
        #: What the reasons were worked out from at the last walk (the engine's counts of
        #: changes and reasons given, the placer's, how many workloads are tracked).
        self._from: tuple[int, int, int, int] | None = None
        #: The workloads the walk under way has yet to look at (None: no walk).
        self._walk: Iterator[str] | None = None
        #: When the next walk is due.
        self._due_at = now

    def stored(self, key: str, reason: str, message: str) -> None:
        """Redis holds this reason for ``key`` (found on taking over): written again only
        when it changes."""
        self.written[key] = (reason, message)

    def forget(self, key: str) -> None:
        """``key`` is no longer live: nothing more to tell of it."""
        self.written.pop(key, None)

    def due(self, now: float, catching_up: bool) -> bool:
        """Is a walk due or under way, and not held back by a burst (module doc)?"""
        return (now >= self._due_at or self._walk is not None) and (
            not catching_up or now >= self._due_at + REASONS_DEFERRED_MOST)

    def step(self, now: float) -> None:
        """Write the reasons that changed among the next :data:`REASONS_SLICE` live
        workloads of the walk, beginning one if none is under way."""
        if self._walk is None and not self._begin(now):
            return
        assert self._walk is not None
        keys = list(itertools.islice(self._walk, REASONS_SLICE))
        if len(keys) < REASONS_SLICE:
            self._walk = None  # (done)
        leader = self.leader
        records, tracked, written = leader.engine.records, leader.tracked, self.written
        changed: list[tuple[str, int, str, str]] = []
        for key in keys:
            record = records.get(key)  # (gone since the walk began: nothing to tell)
            if record is None or record.state is State.FINISHED \
                    or record.pending_reason is None:
                continue
            why = (record.pending_reason, record.pending_message or "")
            held = tracked.get(key)
            before = written.get(key)
            # UNTRIED replaces a reason written before, and is not written otherwise.
            if held is None or before == why or (before is None and why[0] == UNTRIED):
                continue
            written[key] = why
            changed.append((key, held.attempt, *why))
        for start in range(0, len(changed), WRITE_CHUNK):
            leader._check(leader.store.workloads.set_reasons(
                leader.holder, changed[start:start + WRITE_CHUNK]), "publishing pending reasons")

    def _begin(self, now: float) -> bool:
        """Start a walk over every live workload, unless nothing that gives a reason has
        changed since the last (False)."""
        leader = self.leader
        records = leader.engine.records
        self._due_at = now + max(leader.timing.reasons_every, len(records) / REASONS_PER_SECOND)
        told = leader.members.reasons() if leader.members is not None else 0
        changes = leader.engine.changes
        came_from = (changes.stamp, changes.reasons, leader.placer.told, len(leader.tracked))
        if came_from == self._from and not told:
            return False
        self._from = came_from
        for key in leader.unplaced:
            waiting = leader.placer.waiting_why(key)
            record = records.get(key)
            if waiting is not None and record is not None:
                record.pending_reason = "WaitingForNodes"
                record.pending_message = waiting
        self._walk = iter(list(records))
        return True
