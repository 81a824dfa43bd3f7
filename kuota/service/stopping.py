"""Workloads whose pods are stopping: their quota is held until Redis says the pods are gone.

A pod asked to stop — a failed gang mate's, a cancelled or evicted workload's —
runs until its worker ends it, and Kueue counts an evicted workload's quota
until then. So the store keeps such a workload *Evicting* (its admission and
placement kept, ``after`` saying what follows: requeue, deactivate or finish),
and this leader completes it with the fenced ``stopped`` script, which Redis
refuses (``running``) while a pod of the attempt is still placed or running.
Then the engine releases the quota: :meth:`~admission.engine.Engine.stopped`
requeues or deactivates the workload as its eviction said, or
:meth:`~admission.engine.Engine.finish` ends it. A dispatched copy (no engine
record; :mod:`kuota.service.dispatched`) is completed the same way, and the
leader follows its new state from the event the script emits.

Completion is tried when there may be something to complete: when the stop is
written or seen, on a pod or node event, and at every node check (an event
may be missed). The state is in Redis, so a new leader restores Evicting
workloads as holding quota and picks their stops up again.

Engine events that only mirror what Redis already holds — the eviction of a
workload Redis requeued or stopped itself, and the release that completes a
stop — are not written back: their keys are in :attr:`Stops.completing`
until the final event (:mod:`kuota.service.decisions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from admission.errors import blame
from queueing.store import WorkloadRecord
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Engine
    from queueing.store import Store


class Placement(Protocol):
    """What the leader knows of a workload's pods (its ``Tracked``)."""

    placed: tuple[tuple[str, int], ...]
    pods: int


class Copies(Protocol):
    @property
    def copies(self) -> Mapping[str, object]:
        """The dispatched copies this pool runs for other managers, by workload."""


class StopsHost(Protocol):
    """What completing stops needs of the leader (:class:`kuota.service.leader.Leader`):
    an interface owned here, so that this module does not import the leader."""

    @property
    def engine(self) -> Engine: ...
    @property
    def store(self) -> Store: ...
    @property
    def holder(self) -> str: ...
    @property
    def tracked(self) -> Mapping[str, Placement]: ...
    @property
    def unplaced(self) -> dict[str, None]: ...
    @property
    def recheck(self) -> set[str]: ...
    @property
    def dispatched(self) -> Copies: ...

    def _check(self, status: str, what: str) -> None: ...
    def _forget(self, key: str) -> None: ...


class Stops:
    def __init__(self, leader: StopsHost) -> None:
        self.leader = leader
        #: Workloads Evicting in the store -> (attempt, pods of the attempt).
        self.waiting: dict[str, tuple[int, int]] = {}
        #: Of those, the ones to try to complete next.
        self.due: set[str] = set()
        #: Workloads whose engine events up to the final one are not written (module doc).
        self.completing: set[str] = set()

    def begin(self, key: str, attempt: int, pods: int) -> None:
        """The workload is Evicting in the store: complete it once its pods are gone."""
        self.waiting[key] = (attempt, pods)
        self.due.add(key)

    def wake_all(self) -> None:
        """Pods may have ended unseen (a lost node, a missed event): try every stop again."""
        self.due |= self.waiting.keys()

    def forget(self, key: str) -> None:
        self.waiting.pop(key, None)

    def follow(self, key: str, stored: WorkloadRecord, now: float) -> None:
        """Redis says the workload's pods are stopping (a failed gang mate, a cancel, or this
        leader's own eviction): the engine holds its quota until they are gone."""
        engine = self.leader.engine
        if engine.records[key].state is not State.EVICTING:
            if stored.after == "finish":
                engine.finishing(key, now)
            else:
                engine.evict(key, now, stored.reason or "Evicted", "", stored.message)
        self.leader.unplaced.pop(key, None)
        self.begin(key, stored.attempt, stored.pods)

    def released_in_store(self, key: str, stored: WorkloadRecord, now: float) -> None:
        """Redis requeued a workload whose pods were all gone already: release its quota."""
        engine = self.leader.engine
        self.completing.add(key)
        if engine.records[key].state is not State.EVICTING:
            engine.evict(key, now, stored.reason or "PodFailed", "", stored.message)
        engine.stopped(key, now)
        self.leader.unplaced.pop(key, None)
        self.forget(key)

    def complete(self, now: float) -> bool:
        """Complete the stops whose pods are all gone (Redis checks each pod in the same
        atomic step); True if the engine released quota."""
        keys = sorted(self.due & self.waiting.keys())
        self.due.clear()
        if not keys:
            return False
        leader, engine = self.leader, self.leader.engine
        due = [WorkloadRecord(key, State.EVICTING, attempt=self.waiting[key][0],
                              pods=self.waiting[key][1]) for key in keys]
        released = False
        for stored, status in zip(due, leader.store.workloads.stopped_many(leader.holder, due,
                                                                           now), strict=True):
            key = stored.key
            leader._check(status, f"completing the eviction of {key}")
            if status == "running":
                continue
            self.forget(key)
            if key in leader.dispatched.copies:
                continue  # no quota here: its new state comes with the script's event
            record = engine.records.get(key)
            if not status.startswith("ok:") or record is None \
                    or record.state is not State.EVICTING:
                leader.recheck.add(key)
                continue
            with blame(key):
                self.completing.add(key)
                if State(status[3:]) is State.FINISHED:
                    engine.finish(key, now)
                    leader._forget(key)
                else:  # requeued, or deactivated, as the engine's eviction said
                    engine.stopped(key, now)
                    tracked = leader.tracked[key]
                    tracked.placed, tracked.pods = (), 0
            released = True
        return released
