"""Applying the engine's decisions to Redis: decide → assume → persist → forget on failure.

The engine assumes its decisions at once (quota counted, lifecycle moved)
and lists them in its outbox (:class:`admission.events.WorkloadEvent`). This
module writes them to the store, in order:

* **Admitted / QuotaReserved** — batched into one pipeline of fenced ``admit``
  scripts (a reservation admitted later in the same batch is stored once, admitted;
  one admitted in a later round moves the stored reservation to Admitted). While
  Redis stores them the gangs are placed as if stored (``while_admitting``:
  :meth:`kuota.service.placer.Placer.plan_ahead`). A
  refused admission (the workload was cancelled meanwhile, say) is *forgotten*:
  the engine gives the quota back and requeues it, and the workload is re-read
  from Redis next round.
* **Evicting** (preemption, node failure, a stopped queue, a deactivation of a
  workload holding quota) — a fenced ``settle`` script that moves the workload to
  Evicting and asks its pods to stop; its quota stays held until they are gone,
  when the leader completes the eviction (:mod:`kuota.service.stopping`).
* **Evicted / Deactivated / Finished** that complete such a stop, or that follow
  a change Redis made itself (a failed pod, a cancel), need no write: the keys in
  ``Stops.completing``. A deactivation of a waiting workload is a ``settle``.
* **Requeued** needs no write: a requeue after backoff leaves the stored
  workload Pending.

A ``fenced`` answer means another scheduler leads now: :class:`Fenced`
propagates and the caller drops all its state. New kinds of decision land
here, in :func:`apply`, and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from admission.engine import Engine
from admission.events import Kind, WorkloadEvent
from kuota.service.stopping import Stops
from queueing.store import Fenced, Store, WorkloadRecord
from queueing.store.workloads import AdmitRequest
from quota.lifecycle import State

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Tracked:
    """What the leader knows was persisted for a live workload."""

    attempt: int
    pods: int = 0
    #: (node, node epoch) of every pod of the attempt; empty until placed.
    placed: tuple[tuple[str, int], ...] = ()
    #: The submission the engine holds (a workload ended and submitted again under its
    #: name is another one).
    submission: str = ""


class Leadership(Protocol):
    """The parts of the active scheduler that decisions touch."""

    store: Store
    holder: str
    engine: Engine
    tracked: dict[str, Tracked]
    #: Admitted workloads waiting for nodes, in admission order.
    unplaced: dict[str, None]
    #: Workloads to re-read from Redis next round.
    recheck: set[str]
    #: Workloads whose pods stop, holding their quota until they are gone.
    stops: Stops

    def next_decision_id(self) -> str: ...

    def while_admitting(self) -> None:
        """Work done while Redis stores admissions, as if they were stored (placement)."""

    def waits_for_nodes(self, key: str) -> None:
        """Admitted gang ``key`` is to be placed (it joins :attr:`unplaced`)."""


@dataclass
class Applied:
    admitted: list[str] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def apply(leader: Leadership, events: Sequence[WorkloadEvent], now: float) -> Applied:
    """Persist the outbox in order; raises :class:`Fenced` if no longer leading."""
    applied = Applied()
    batch: list[WorkloadEvent] = []
    for event in events:
        if event.kind in (Kind.ADMITTED, Kind.QUOTA_RESERVED):
            batch.append(event)
            continue
        _admit(leader, batch, now, applied)
        batch = []
        if event.key in leader.stops.completing:
            if event.kind in (Kind.EVICTED, Kind.DEACTIVATED, Kind.FINISHED):
                leader.stops.completing.discard(event.key)
        elif event.kind in (Kind.EVICTING, Kind.EVICTED, Kind.DEACTIVATED):
            _settle(leader, event, now, applied)
    _admit(leader, batch, now, applied)
    return applied


def _admit(leader: Leadership, events: list[WorkloadEvent], now: float,
           applied: Applied) -> None:
    by_key: dict[str, AdmitRequest] = {}
    for event in events:
        admission = event.admission
        if admission is None:
            continue
        tracked = leader.tracked.get(event.key)
        attempt = tracked.attempt if tracked is not None else 0
        # A reservation whose admission checks answered Ready in the same round (multi-cluster
        # dispatch can answer at once) is stored once, as the admission it became.
        by_key.pop(event.key, None)
        by_key[event.key] = AdmitRequest(
            key=event.key, attempt=attempt, admission=admission,
            pods=sum(ps.count for ps in admission.pod_sets),
            decision=leader.next_decision_id(), admit=event.kind is Kind.ADMITTED)
    requests = list(by_key.values())
    if not requests:
        return
    held = {r.key: leader.tracked.get(r.key) for r in requests}
    with leader.store.workloads.send_admit_many(leader.holder, requests, now) as sent:
        # Meanwhile placement is worked out as if they were stored: each admission with the
        # attempt Redis gives it — the next one, or the same for a stored reservation (a
        # guess: a placement made for another attempt is dropped, and made again).
        for r in requests:
            if r.admit:
                before = held[r.key]
                reserved = before is not None and before.pods > 0
                leader.tracked[r.key] = _tracked(r.attempt if reserved else r.attempt + 1,
                                                 r.pods, before)
                leader.waits_for_nodes(r.key)
        leader.while_admitting()
        statuses = sent.statuses()
    for request, status in zip(requests, statuses, strict=True):
        if status == "fenced":
            raise Fenced(f"admitting {request.key}: this scheduler no longer holds the lease")
        if status.startswith("ok:"):
            leader.tracked[request.key] = _tracked(int(status[3:]), request.pods,
                                                   held[request.key])
            if request.admit:
                leader.waits_for_nodes(request.key)
            applied.admitted.append(request.key)
            continue
        # Not stored: the admission never happened. Give the quota back now and
        # learn from Redis what became of the workload.
        before = held[request.key]
        if before is None:
            leader.tracked.pop(request.key, None)
        else:
            leader.tracked[request.key] = before
        leader.unplaced.pop(request.key, None)
        log.info("admission of %s not stored (%s); forgetting it", request.key, status)
        record = leader.engine.records.get(request.key)
        if record is not None and record.state in (State.QUOTA_RESERVED, State.ADMITTED):
            leader.engine.forget(request.key, now)
        leader.recheck.add(request.key)
        applied.refused.append(request.key)


def _tracked(attempt: int, pods: int, before: Tracked | None) -> Tracked:
    """What the leader knows of a workload admitted in ``attempt`` (placed nowhere yet)."""
    return Tracked(attempt, pods, submission=before.submission if before is not None else "")


def _settle(leader: Leadership, event: WorkloadEvent, now: float, applied: Applied) -> None:
    tracked = leader.tracked.get(event.key)
    record = leader.engine.records.get(event.key)
    if tracked is None or record is None:
        leader.recheck.add(event.key)
        return
    stop = event.kind is Kind.EVICTING
    deactivate = event.kind is Kind.DEACTIVATED or (stop and event.reason == "Deactivated")
    stored = WorkloadRecord(event.key, State.ADMITTED, attempt=tracked.attempt,
                            pods=tracked.pods)
    status = leader.store.workloads.settle(
        leader.holder, stored,
        event="stop" if stop else "deactivate" if deactivate else "evict",
        after="deactivate" if deactivate else "requeue",
        reason=event.detail if stop and deactivate else event.reason,
        message=event.message or event.detail, queued_at=record.info.created, now=now)
    if status == "fenced":
        raise Fenced(f"evicting {event.key}: this scheduler no longer holds the lease")
    leader.unplaced.pop(event.key, None)
    if status in ("ok", "ok:again"):
        if stop:
            # The quota stays held until the pods are gone (their placement is kept to
            # find them); the node capacity comes back as each one stops (a pod event each).
            leader.stops.begin(event.key, tracked.attempt, tracked.pods)
        else:
            tracked.placed, tracked.pods = (), 0
        applied.settled.append(event.key)
    else:
        log.info("eviction of %s not stored (%s); re-reading it", event.key, status)
        leader.recheck.add(event.key)
        applied.refused.append(event.key)
