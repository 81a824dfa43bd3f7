"""The active scheduler's side of dispatched workloads: placed in their pool, run, re-placed.

A dispatched workload (:mod:`queueing.store.dispatched`) was admitted by its
manager; this scheduler's engine never sees it — no queue, no quota, no
preemption — and :class:`DispatchedWorkloads` carries it instead, next to
the engine, in the same leader loop and with the same fenced writes:

* **Place** — an Admitted copy not placed yet is placed on the Ready nodes of
  its pool only (``spec.pool``): all pods or none, each pod asking for its
  requests, ``nodeSelector`` (the manager's flavors' nodeLabels are in it),
  required node affinity and tolerations, with the same gang placer as local
  gangs (:func:`kuota.service.placing.place`). A copy that does not fit waits
  (reason ``WaitingForNodes``, the placer's message) and is tried again every
  round. Copies are placed before the engine's own gangs: their quota was
  decided by the manager, and they take only what the nodes have free.
* **Run** — its pods go to their nodes' rq queues as any pod does; the
  workers run the first container's ``command`` + ``args``; the store's
  ``POD_EXIT`` script finishes the copy (Succeeded when all pods exit 0,
  Failed past ``backoffLimit``), which is what the manager follows home.
* **Restart in place** — a copy back in ``Pending`` (a pod failed with retries
  left — once its gang mates have stopped, :mod:`kuota.service.stopping` — or
  its node was lost) is admitted again at once with its own admission,
  keeping its pool: **node loss re-places it in the same pool** (the manager
  chose the pool; moving is the manager's decision, which it
  makes when the whole pool stops answering). A node lost under a placed copy
  evicts it with reason ``NodeFailures`` first (its other pods are stopped).
* **Cancel / remove** — ``kuota cancel`` finishes it like any workload; the
  manager's delete removes the record; either way it is forgotten here.

A copy whose stored spec cannot be read is rejected (finished, reason
``Invalid``) with the problem as its message.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kuota.service import jobs, placing
from kuota.service.dispatched_spec import DispatchedSpec, SpecError, admission, check
from queueing.store import PodPhase, PodRecord, PodRef, WorkloadRecord
from queueing.store.workloads import AdmitRequest, PlaceRequest, PodPlacement
from quota.lifecycle import State

if TYPE_CHECKING:
    from kuota.service.leader import Leader

log = logging.getLogger(__name__)

WAITING: str = "WaitingForNodes"
NODE_FAILURES: str = "NodeFailures"


@dataclass(slots=True)
class Copy:
    key: str
    spec: DispatchedSpec
    state: State
    attempt: int
    #: (node, node epoch) of every pod of the attempt; empty until placed.
    placed: tuple[tuple[str, int], ...] = ()
    #: Why it waits for nodes (last written).
    why: str = ""
    sent_at: float | None = None


class DispatchedWorkloads:
    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        self.copies: dict[str, Copy] = {}

    # -- following the store -----------------------------------------------------------
    def resume(self, records: list[WorkloadRecord], now: float) -> None:
        """Take over the live copies a new leader found in Redis."""
        for record in records:
            self.follow(record.key, record, now)
        refs = [ref for c in self.copies.values() if c.state is State.ADMITTED and c.placed
                for ref in self._refs(c)]
        epochs = {p.ref: p.epoch for p in self.leader.store.pods.get_many(refs) if p is not None}
        for copy in self.copies.values():
            if copy.state is State.ADMITTED and copy.placed:
                copy.placed = tuple((node, epochs.get(ref, -1)) for (node, _), ref
                                    in zip(copy.placed, self._refs(copy), strict=True))
                copy.sent_at = now - self.leader.timing.resend_after  # resent next check

    def knows(self, key: str, state: str | None, attempt: str | None) -> bool:
        copy = self.copies.get(key)
        return copy is not None and copy.state == state and str(copy.attempt) == attempt

    def follow(self, key: str, stored: WorkloadRecord | None, now: float) -> bool:
        """Follow what Redis says of ``key``; False when it is not a dispatched copy."""
        if stored is None:  # removed by its manager (or never stored)
            return self.copies.pop(key, None) is not None
        if not stored.dispatched:  # a workload submitted here, perhaps reusing the name
            self.copies.pop(key, None)
            return False
        if stored.state is State.FINISHED:
            self.copies.pop(key, None)
            return True
        if stored.state is State.EVICTING:  # a failed pod's gang mates, or a cancel, stop
            self.leader.stops.begin(key, stored.attempt, stored.pods)
        copy = self.copies.get(key)
        if copy is None:
            spec = self._spec(key, stored, now)
            if spec is None:
                return True
            copy = self.copies[key] = Copy(key, spec, stored.state, stored.attempt)
        if copy.attempt != stored.attempt or copy.state is not stored.state:
            copy.placed, copy.why, copy.sent_at = (), "", None
        copy.state, copy.attempt = stored.state, stored.attempt
        if stored.placement and not copy.placed:
            copy.placed = tuple((node, -1) for node in stored.placement)
        return True

    def _spec(self, key: str, stored: WorkloadRecord, now: float) -> DispatchedSpec | None:
        text = stored.spec_json or self.leader.store.workloads.specs([key]).get(key, "")
        try:
            doc = json.loads(text) if text else None
            if not isinstance(doc, dict):
                raise SpecError(f"dispatched workload {key}: stored spec is not an object")
            spec = DispatchedSpec.from_dict(doc, where=f"dispatched workload {key}")
            check(spec)
        except (SpecError, ValueError) as exc:
            log.warning("rejecting dispatched workload %s: %s", key, exc)
            self.leader._check(self.leader.store.workloads.reject(
                self.leader.holder, key, message=str(exc), now=now), f"rejecting {key}")
            return None
        return spec

    # -- the round -----------------------------------------------------------------------
    def step(self, now: float) -> None:
        """Admit again what came back to Pending, then place what waits for nodes."""
        if self.copies:
            self._readmit(now)
            self._place(now)

    def _readmit(self, now: float) -> None:
        pending = [c for c in self.copies.values() if c.state is State.PENDING]
        if not pending:
            return
        requests = [AdmitRequest(c.key, c.attempt, admission(c.spec), c.spec.pods,
                                 self.leader.next_decision_id()) for c in pending]
        statuses = self.leader.store.workloads.admit_many(self.leader.holder, requests, now)
        for copy, status in zip(pending, statuses, strict=True):
            self.leader._check(status, f"admitting dispatched {copy.key} again")
            if status.startswith("ok:"):
                copy.state, copy.attempt = State.ADMITTED, int(status[3:])
                copy.placed, copy.why, copy.sent_at = (), "", None
            else:
                log.info("dispatched %s not admitted again (%s)", copy.key, status)
                self.leader.recheck.add(copy.key)

    def _place(self, now: float) -> None:
        waiting = [c for c in self.copies.values() if c.state is State.ADMITTED and not c.placed]
        if not waiting:
            return
        view = self.leader.nodes
        pools = self.leader.placer.pools()
        requests: list[PlaceRequest] = []
        gangs: dict[str, list[placing.GangPod]] = {}
        reasons: list[tuple[str, int, str, str]] = []
        for copy in waiting:
            pods = _gang(copy.spec)
            nodes = pools.get(copy.spec.pool)
            result = (placing.place(pods, {copy.spec.pool: nodes}) if nodes and nodes.nodes else
                      placing.Unplaceable(f"pool {copy.spec.pool} has no Ready nodes"))
            if isinstance(result, placing.Unplaceable):
                if result.reason != copy.why:
                    copy.why = result.reason
                    reasons.append((copy.key, copy.attempt, WAITING, result.reason))
                continue
            assert nodes is not None
            view.update(result.updated)
            nodes.update(result.updated.values())
            gangs[copy.key] = pods
            requests.append(PlaceRequest(copy.key, copy.attempt, tuple(
                PodPlacement(PodRef(copy.key, copy.attempt, p.index), node, p.pod_set,
                             p.requests, view.epoch(node))
                for p, node in zip(pods, result.nodes, strict=True))))
        if reasons:
            self.leader._check(self.leader.store.workloads.set_reasons(
                self.leader.holder, reasons), "publishing why dispatched workloads wait")
        if not requests:
            return
        statuses = self.leader.store.workloads.place_many(self.leader.holder, requests, now)
        to_send: list[jobs.PodJob] = []
        for request, status in zip(requests, statuses, strict=True):
            self.leader._check(status, f"placing dispatched {request.key}")
            copy = self.copies[request.key]
            if status.startswith("ok"):
                copy.placed = tuple((p.node, p.epoch) for p in request.pods)
                copy.sent_at = now
                view.placed(request.pods)
                to_send += self._jobs(copy, range(len(copy.placed)))
            else:
                log.info("placement of dispatched %s not stored (%s)", request.key, status)
                view.dirty = True
                if not status.startswith("node:"):
                    self.leader.recheck.add(request.key)
        jobs.enqueue(self.leader.conn.raw, self.leader.store.keys, to_send)

    def _jobs(self, copy: Copy, indices: range | list[int]) -> list[jobs.PodJob]:
        pods = _gang(copy.spec)
        peers = tuple(node for node, _ in copy.placed)
        by_set = {ps.name: ps for ps in copy.spec.pod_sets}
        out = []
        for i in indices:
            pod, (node, epoch) = pods[i], copy.placed[i]
            command, env = by_set[pod.pod_set].command()
            out.append(jobs.PodJob(self.leader.store.prefix,
                                   PodRef(copy.key, copy.attempt, i).id, node, epoch,
                                   len(peers), pod.pod_set, peers, command, env, pod.requests))
        return out

    @staticmethod
    def _refs(copy: Copy) -> list[PodRef]:
        return [PodRef(copy.key, copy.attempt, i) for i in range(len(copy.placed))]

    # -- nodes ----------------------------------------------------------------------------
    def check_nodes(self, now: float) -> None:
        """Evict copies with a pod live on a lost node (re-placed next round, same pool),
        and send again the pods still not started long after they were sent — also those
        of a copy that is stopping: the start of a pod asked to stop gives its node back,
        and the copy waits for no pod that nobody would start."""
        leader, view = self.leader, self.leader.nodes
        placed = [c for c in self.copies.values()
                  if c.state in (State.ADMITTED, State.EVICTING) and c.placed]
        if not placed:
            return
        pods = leader.store.pods.get_many([ref for c in placed for ref in self._refs(c)])
        found = {p.ref: p for p in pods if p is not None}
        for copy in placed:
            refs = self._refs(copy)
            lost = sorted({node for (node, epoch), ref in zip(copy.placed, refs, strict=True)
                           if view.gone(node, epoch) and _lost(found.get(ref))})
            if lost and copy.state is State.ADMITTED:
                self._evict(copy, f"node(s) {', '.join(lost)} lost while running the "
                                  f"dispatched workload; placing it again in pool "
                                  f"{copy.spec.pool}", now)
                continue
            unstarted = [i for i, ref in enumerate(refs)
                         if ref in found and found[ref].state is PodPhase.PLACED]
            if not unstarted:
                continue
            if copy.sent_at is None:  # sent before this leader saw the copy's new state
                copy.sent_at = now
            elif now - copy.sent_at >= leader.timing.resend_after:
                copy.sent_at = now
                # (the pods' own records say which incarnation of each node they are for)
                copy.placed = tuple((node, found[ref].epoch if ref in found else epoch)
                                    for (node, epoch), ref in zip(copy.placed, refs,
                                                                  strict=True))
                jobs.enqueue(leader.conn.raw, leader.store.keys, self._jobs(copy, unstarted))

    def _evict(self, copy: Copy, message: str, now: float) -> None:
        leader = self.leader
        record = leader.store.workloads.find(copy.key)
        if record is None or record.attempt != copy.attempt:
            leader.recheck.add(copy.key)
            return
        status = leader.store.workloads.settle(leader.holder, record, event="evict",
                                               reason=NODE_FAILURES, message=message,
                                               queued_at=record.queued_at, now=now)
        leader._check(status, f"evicting dispatched {copy.key}")
        log.warning("dispatched %s: %s (%s)", copy.key, message, status)
        if status == "ok":
            copy.state, copy.placed, copy.why, copy.sent_at = State.PENDING, (), "", None
        else:
            leader.recheck.add(copy.key)


def _lost(pod: PodRecord | None) -> bool:
    return pod is None or pod.died_with_node


def _gang(spec: DispatchedSpec) -> list[placing.GangPod]:
    pods: list[placing.GangPod] = []
    for ps in spec.pod_sets:
        requirements = ps.requirements()
        for _ in range(ps.count):
            pods.append(placing.GangPod(len(pods), ps.name, dict(requirements.requests),
                                        requirements))
    return pods
