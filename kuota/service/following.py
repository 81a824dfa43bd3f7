"""Step 2 of the leader: follow Redis — the engine made to agree with the stored workloads.

Writers other than the leader (submit, cancel, pod exits, node registration,
config changes) append an entry to the event stream (:mod:`queueing.store.events`)
naming what changed. **An event means "look again"**, nothing more: the
:class:`Follower` re-reads each named workload's record and makes the engine
agree with what Redis holds *now* (:meth:`Follower._reconcile`), whatever
happened in between. Handling an entry twice — a standby's copy caught up
past it, a rebuild that already read its effect — or seeing one entry for
several changes therefore changes nothing. The same holds for the keys in
:attr:`Leader.recheck <kuota.service.leader.Leader.recheck>`: a write of the
leader's that Redis refused (the workload changed under it), a placement
that failed, a stop that could not be completed, a differing state found by
the leader's periodic resync; they are looked at with the next events, or
alone when none came. A workload that ended and was submitted again under
its name before the leader looked is another submission (its submission id
is not the one the engine holds): the one held is finished and the new one
enters. Of the other kinds, ``decision`` entries are the
leader's own (for standbys) and skipped; ``node`` entries mark the node view
stale and wake every stop (pods on a lost node are gone); ``pod`` entries
free what an ended pod held in the node view.

**Known workloads are re-read without spec and admission.** A workload the
engine (or the dispatched copies) holds live has its checked spec there
already, and the admission it was given; what can change under it in Redis
— state, attempt, reason, placement, pods, what follows a stop — is in the
other fields. The spec is the largest field, and decoding it and the
admission is most of what a re-read costs, so only a workload new to the
engine (or finished there) is read whole and checked as any submission is
(:func:`kuota.service.rebuild.checked_info`, with a cache of checked shapes)
before it enters. A known workload that Redis holds Finished is not read at
all: it is followed exactly as one that is gone would be (the engine finishes
and forgets it, a dispatched copy is let go), so Redis reads only its state.

**Slices with a time budget.** A burst of thousands of submissions must not
hold back the decisions, nor the lease's renewal, for long: the events read
are followed :data:`FOLLOW_SLICE` at a time, for at most
``Timing.follow_budget``, the position in the stream advancing past each
slice done. What is left is read again by the next step, which comes at once
(:attr:`Follower.behind`: no batching pause, no blocking read).

**Reading ahead.** The workloads a slice names are asked of Redis before the
slice ahead of it is reconciled (:meth:`WorkloadStore.send_reads
<queueing.store.workloads.WorkloadStore.send_reads>`), so Redis reads them
while this process works; following a burst no longer waits for every read.
A read made a little earlier is as good as one made later: it still comes
after the entry that asked for it. One thing can differ: a workload read
without its spec, as live in the engine, that the slice before finished —
it is read again whole before it is reconciled, as it may be entering anew.

**Quarantine.** A new workload whose spec cannot be read, or fails the
submission checks, is set aside as ``Invalid``
(:meth:`~kuota.service.leader.Leader.quarantine`) before it enters the engine:
there is nothing to undo. A record that cannot be read at all (not finished
or set aside) raises instead, as does anything unforeseen, under
:func:`admission.errors.blame`: the service quarantines that workload and
rebuilds, the engine being possibly half-way through a change.

**Queue objects changed** (``config`` entries): the engine takes the difference
in place (:meth:`Leader.reconfigure <kuota.service.leader.Leader.reconfigure>`),
before the slice's workloads are reconciled.

**NeedRebuild.** Some changes cannot be patched into the leader's view: queue
objects changed in a way :mod:`kuota.service.reconfig` does not take in place
(a ResourceFlavor, a Topology, pool members...), a workload holds quota in Redis that the
engine does not hold under the same attempt, or the stream was trimmed past
the last entry read (checked by the leader's node watch). :class:`NeedRebuild`
ends the leader; the service builds a new one from Redis.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from admission.errors import blame
from kuota.service import rebuild
from kuota.service.decisions import Tracked
from queueing.store import WorkloadRecord
from queueing.store.events import Event
from queueing.store.workloads import RecordsRead
from quota.lifecycle import HOLDS_QUOTA, State

if TYPE_CHECKING:
    from kuota.service.leader import Leader

#: Events followed at a time (see :meth:`Follower.follow_some`).
FOLLOW_SLICE = 500


class NeedRebuild(Exception):
    """The leader's view cannot be patched (config changed, events lost): start over."""


class Follower:
    def __init__(self, leader: Leader, last_event: str) -> None:
        self.leader = leader
        #: Id of the last event followed: the next read starts after it.
        self.last_event = last_event
        #: The last step left events unfollowed (see :meth:`follow_some`).
        self.behind = False
        #: Submissions checked by shape: a job array's workloads differ only in their names.
        self._specs = rebuild.SpecCache(limit=1024)

    def follow_some(self, events: Sequence[Event], now: float) -> None:
        """Follow the events read, slice by slice, for at most ``Timing.follow_budget``: a
        burst of thousands of submissions must not hold back the decisions (and the lease's
        renewal) for long. What is left is read again by the next step, which comes at once.

        The workloads of the next slice are asked of Redis before this one is reconciled,
        so that Redis reads them while this process works (module doc)."""
        leader = self.leader
        deadline = time.monotonic() + leader.timing.follow_budget
        self.behind = False
        slices = [events[i:i + FOLLOW_SLICE] for i in range(0, len(events), FOLLOW_SLICE)]
        keys = set(leader.recheck)  # (with no events too: the rechecks)
        leader.recheck.clear()
        reading = self._read(keys | _keys_of(slices[0]) if slices else keys)
        for i, part in enumerate(slices or [events]):
            with reading:
                self._see(part)
                ahead = None
                if i + 1 < len(slices) and time.monotonic() < deadline:
                    ahead = self._read(_keys_of(slices[i + 1]))
                try:
                    self._follow(reading, now)
                except BaseException:
                    if ahead is not None:
                        ahead.close()
                    raise
            if part:
                self.last_event = part[-1].id
            if ahead is None:
                self.behind = i + 1 < len(slices)
                return
            if time.monotonic() >= deadline:
                ahead.discard()  # (read again by the next step)
                self.behind = True
                return
            reading = ahead

    def _see(self, events: Iterable[Event]) -> None:
        """What an entry says besides naming a workload to look at again."""
        leader = self.leader
        configs = False
        for event in events:
            if event.kind == "config":
                configs = True
            elif event.kind == "node":
                leader.nodes.dirty = True
                leader.stops.wake_all()  # pods on a lost node are gone
            elif event.kind == "pod":
                leader.nodes.ended(event.pod)
        if configs:  # (however many entries: read once)
            leader.reconfigure()

    def _read(self, keys: set[str]) -> RecordsRead:
        """Ask Redis for the workloads: those the engine (or the dispatched copies) holds
        live without their admission and spec, the others whole."""
        leader, engine = self.leader, self.leader.engine
        known = sorted(k for k in keys if k in leader.dispatched.copies or (
            k in engine.records and engine.records[k].state is not State.FINISHED))
        # A known workload Redis holds Finished is followed as one that is gone (finished
        # and forgotten; a dispatched copy let go), so it is not read at all: in a drain,
        # every pod's end names a workload that has just finished.
        return leader.store.workloads.send_reads(known, sorted(keys.difference(known)),
                                                 skip=(State.FINISHED.value,))

    def _follow(self, reading: RecordsRead, now: float) -> None:
        leader = self.leader
        records = reading.records()
        engine = leader.engine
        # Read without spec as known, but no longer live in the engine (an earlier slice
        # finished it), or another submission under its name: read again whole, to enter.
        again = [k for k in reading.known if k not in leader.dispatched.copies and (
            k not in engine.records or engine.records[k].state is State.FINISHED
            or self._replaced(k, records.get(k)))]
        if again:
            records.update(leader.store.workloads.get_many(again))
        for key in sorted({*reading.known, *reading.new}):
            with blame(key):
                self._reconcile(key, records.get(key), now)
        mirrored = leader.engine.drain_outbox()  # these mirror Redis: nothing to write back
        if leader.members is not None and leader.members.observe(mirrored):
            leader.members.refresh(leader.nodes, leader.unplaced, now)

    def _reconcile(self, key: str, stored: WorkloadRecord | None, now: float) -> None:
        leader = self.leader
        if leader.dispatched.follow(key, stored, now):
            return
        engine = leader.engine
        mine = engine.records.get(key)
        state = stored.state if stored is not None else State.FINISHED
        if stored is not None and stored.corrupt and state not in rebuild.SET_ASIDE:
            raise ValueError(stored.corrupt)  # blamed on the workload: it is quarantined
        if state in rebuild.SET_ASIDE:
            if mine is not None and mine.state is not State.FINISHED:
                engine.finish(key, now)
            leader._forget(key)
            return
        assert stored is not None
        if mine is not None and mine.state is not State.FINISHED \
                and self._replaced(key, stored):
            # Ended (cancelled, say) and submitted again before the leader looked: the
            # workload the engine holds is gone, and this is a new one.
            engine.finish(key, now)
            leader._forget(key)
            mine = None
        tracked = leader.tracked.get(key)
        if state is State.PENDING:
            if mine is None or mine.state is State.FINISHED:
                self._enter(stored, now)
            elif mine.state in HOLDS_QUOTA:  # a pod failed and none of the gang is left
                leader.stops.released_in_store(key, stored, now)
            if key in engine.records:  # not if it was just rejected
                leader.tracked[key] = Tracked(stored.attempt, submission=stored.submission)
            return
        if state in HOLDS_QUOTA:
            if mine is None or mine.state not in HOLDS_QUOTA or tracked is None \
                    or tracked.attempt != stored.attempt:
                raise NeedRebuild(f"workload {key} holds quota the engine does not know of")
            if state is State.EVICTING:
                leader.stops.follow(key, stored, now)
            return
        if state is State.INACTIVE and mine is not None and mine.state is not State.INACTIVE:
            engine.deactivate(key, now, stored.reason or "Inactive", stored.message)

    def _replaced(self, key: str, stored: WorkloadRecord | None) -> bool:
        """Is the stored workload another submission than the one the engine holds?"""
        tracked = self.leader.tracked.get(key)
        return (stored is not None and tracked is not None and bool(tracked.submission)
                and stored.submission != tracked.submission)

    def _enter(self, stored: WorkloadRecord, now: float) -> None:
        checked = rebuild.checked_info(stored, self._specs)
        if isinstance(checked, str):  # never entered the engine: nothing to undo
            self.leader.quarantine(stored.key, checked, now, stored.pod_refs())
            return
        rebuild.add(self.leader.engine, stored, checked)


def _keys_of(events: Iterable[Event]) -> set[str]:
    """The workloads the entries name (the leader's own decisions left out)."""
    return {e.key for e in events if e.key and e.kind != "decision"}
