"""What the operator writes into status: pure functions from engine state to patches.

* Workload status follows Kueue's conditions: ``QuotaReserved`` (with
  ``status.admission``, and a pod set's ``topologyAssignment`` when it was
  placed on topology domains — see :mod:`kuota.operator.topology`),
  ``Admitted``, ``Evicted`` and ``Preempted`` (with Kueue's reasons; while
  its pods stop an evicted workload is ``Evicted`` *and* still
  ``QuotaReserved``),
  ``Requeued``, ``PodsReady``, ``Finished``. A waiting workload gets
  ``QuotaReserved=False`` with the engine's reason and message, which is how
  ``kubectl describe`` tells a user why it waits.
* ClusterQueue status: pending / reserving / admitted counts,
  ``flavorsReservation`` (every workload holding quota) and ``flavorsUsage``
  (admitted ones), each with the part ``borrowed`` above the nominal quota,
  and ``Active`` with the reason the cache gives for an inactive queue.
* LocalQueue status: the same counts and reservations for its workloads.

Conditions keep their ``lastTransitionTime`` while their status does not
change, as Kubernetes conventions ask.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from admission import cycle, execution
from admission.engine import Engine
from admission.events import Kind, WorkloadEvent
from kuota.operator import tallies
from quota.resources import Amount, FlavorResource, format_amount
from quota.workload import Admission

Body = dict[str, Any]


def timestamp(at: float) -> str:
    moment = datetime.datetime.fromtimestamp(at, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def is_true(body: Body, type_: str) -> bool:
    """Whether the object's ``status.conditions`` has ``type_`` with status True."""
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in (body.get("status") or {}).get("conditions") or [])


def condition(type_: str, status: bool, reason: str, message: str, at: float) -> Body:
    return {"type": type_, "status": "True" if status else "False", "reason": reason or type_,
            "message": message, "lastTransitionTime": timestamp(at)}


def merge_conditions(existing: Iterable[Body], updates: Iterable[Body]) -> list[Body]:
    """``existing`` with each update replacing its type; unchanged statuses keep their time."""
    result = [dict(c) for c in existing]
    for update in updates:
        for i, current in enumerate(result):
            if current.get("type") == update["type"]:
                if current.get("status") == update["status"]:
                    update = dict(update, lastTransitionTime=current.get("lastTransitionTime")
                                  or update["lastTransitionTime"])
                result[i] = update
                break
        else:
            result.append(update)
    return result


def admission_status(admission: Admission,
                     topology: Mapping[str, Body] | None = None) -> Body:
    """``status.admission``; ``topology``: podSet name -> its ``topologyAssignment``."""
    assignments = []
    for ps in admission.pod_sets:
        entry: Body = {"name": ps.name, "flavors": dict(ps.flavors), "count": ps.count,
                       "resourceUsage": {r: format_amount(a, r)
                                         for r, a in sorted(ps.usage.items())}}
        if topology and ps.name in topology:
            entry["topologyAssignment"] = topology[ps.name]
        assignments.append(entry)
    return {"clusterQueue": admission.cluster_queue, "podSetAssignments": assignments}


def _admitted_message(event: WorkloadEvent) -> str:
    assert event.admission is not None
    return f"Quota reserved in ClusterQueue {event.admission.cluster_queue}"


def check_states(current: Body, checks: Mapping[str, tuple[str, str]], at: float) -> list[Body]:
    """``status.admissionChecks`` for the engine's check states; times kept while unchanged."""
    old = {c.get("name"): c for c in (current.get("status") or {}).get("admissionChecks") or []}
    states = []
    for name, (state, message) in sorted(checks.items()):
        before = old.get(name) or {}
        stamp = before.get("lastTransitionTime") if before.get("state") == state else None
        states.append({"name": name, "state": state, "message": message,
                       "lastTransitionTime": stamp or timestamp(at)})
    return states


def workload_status(current: Body, event: WorkloadEvent,
                    checks: Mapping[str, tuple[str, str]] | None = None,
                    requeue: tuple[int, float | None] | None = None,
                    topology: Mapping[str, Body] | None = None) -> Body:
    """The ``status`` merge patch that records ``event`` on a Workload body.

    ``checks``: the engine's admission check states (name -> (state, message));
    ``requeue``: pods-ready evictions so far and when the backoff ends;
    ``topology``: podSet name -> ``topologyAssignment`` of the admission.
    """
    at = event.at
    conditions = (current.get("status") or {}).get("conditions") or []
    updates: list[Body] = []
    patch: Body = {}
    if event.kind in (Kind.QUOTA_RESERVED, Kind.ADMITTED) and event.admission is not None:
        patch["admission"] = admission_status(event.admission, topology)
        if event.admission.cluster:
            patch["clusterName"] = event.admission.cluster
        if checks:
            patch["admissionChecks"] = check_states(current, checks, at)
        updates.append(condition("QuotaReserved", True, "QuotaReserved",
                                 _admitted_message(event), at))
        admitted = event.kind is Kind.ADMITTED
        updates.append(condition("Admitted", admitted, "Admitted" if admitted else "Pending",
                                 "The workload is admitted" if admitted
                                 else "Waiting for admission checks", at))
        updates.append(condition("Evicted", False, "Admitted", "", at))
        if any(c.get("type") == "Requeued" for c in conditions):
            updates.append(condition("Requeued", False, "Admitted", "", at))
        if any(c.get("type") == "Preempted" for c in conditions):
            updates.append(condition("Preempted", False, "Admitted", "", at))
        if any(c.get("type") == "BlockedOnPreemptionGates" for c in conditions):
            updates.append(condition("BlockedOnPreemptionGates", False, "Admitted", "", at))
    elif event.kind is Kind.EVICTING:
        # As Kueue: Evicted while QuotaReserved and the admission stay until the pods are
        # gone (the EVICTED or DEACTIVATED that follows clears them).
        message = event.message or event.reason
        reason = event.reason
        if reason == "Deactivated":
            reason, message = _deactivation(event.detail, message)
        updates.append(condition("Evicted", True, reason, message, at))
        if event.reason == "Preempted":
            updates.append(condition("Preempted", True, event.detail or "Preempted", message, at))
        updates.append(condition("PodsReady", False, "Evicted", message, at))
    elif event.kind in (Kind.EVICTED, Kind.DEACTIVATED):
        patch["admission"] = None
        if (current.get("status") or {}).get("clusterName"):
            patch["clusterName"] = None
        previous = (current.get("status") or {}).get("admissionChecks") or []
        if previous:  # verdicts were for this reservation; the next one starts over
            patch["admissionChecks"] = check_states(
                current, {c["name"]: ("Pending", "") for c in previous if c.get("name")}, at)
        message = event.message or event.reason
        reason = event.reason
        if event.kind is Kind.DEACTIVATED:
            reason, message = _deactivation(event.reason, message)
        updates += [condition("QuotaReserved", False, "Pending", message, at),
                    condition("Admitted", False, "NoReservation", message, at),
                    condition("Evicted", True, reason, message, at)]
        if event.reason == "Preempted":
            updates.append(condition("Preempted", True, event.detail or "Preempted", message, at))
        if event.kind is Kind.EVICTED:
            updates.append(condition("Requeued", event.reason != "PodsReadyTimeout",
                                     event.reason, message, at))
        updates.append(condition("PodsReady", False, "Evicted", message, at))
    elif event.kind is Kind.REQUEUED:
        updates.append(condition("Requeued", True, event.reason or "BackoffFinished",
                                 "The workload is back in its queue", at))
    elif event.kind is Kind.FINISHED:
        updates.append(condition("Finished", True, event.reason or "Succeeded",
                                 event.message or "The workload finished", at))
    if requeue is not None and requeue[0] and event.kind in (Kind.EVICTED, Kind.REQUEUED):
        count, until = requeue
        patch["requeueState"] = {"count": count,
                                 "requeueAt": timestamp(until) if until is not None else None}
    if event.executed is not None:  # (Kueue clears it once the maximum is reached: 0)
        patch["accumulatedPastExecutionTimeSeconds"] = int(event.executed) or None
    patch["conditions"] = merge_conditions(conditions, updates)
    return {"status": patch}


def _deactivation(cause: str, message: str) -> tuple[str, str]:
    """The Evicted condition's reason and message for a deactivation: Kueue's
    ``DeactivatedDueTo<cause>`` for a cause Kueue names, else ``Deactivated``."""
    if cause == execution.REASON:
        return f"DeactivatedDueTo{cause}", f"The workload is deactivated due to {message}"
    return "Deactivated", message


def pending_status(current: Body, reason: str, message: str, at: float) -> Body | None:
    """``QuotaReserved=False`` with why the workload waits; None if already written."""
    conditions = (current.get("status") or {}).get("conditions") or []
    old = next((c for c in conditions if c.get("type") == "QuotaReserved"), None)
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == \
            ("False", reason, message):
        return None
    updates = [condition("QuotaReserved", False, reason, message, at)]
    if reason == cycle.PREEMPTION_GATED:  # as Kueue: it would preempt, but is gated
        updates.append(condition("BlockedOnPreemptionGates", True, "PreemptionGated",
                                 message, at))
    elif any(c.get("type") == "BlockedOnPreemptionGates" and c.get("status") == "True"
             for c in conditions):
        updates.append(condition("BlockedOnPreemptionGates", False, reason, message, at))
    return {"status": {"conditions": merge_conditions(conditions, updates)}}


def pods_ready_status(current: Body, at: float) -> Body | None:
    conditions = (current.get("status") or {}).get("conditions") or []
    if any(c.get("type") == "PodsReady" and c.get("status") == "True" for c in conditions):
        return None
    update = condition("PodsReady", True, "PodsReady", "All pods reached readiness", at)
    return {"status": {"conditions": merge_conditions(conditions, [update])}}


# -- queues ------------------------------------------------------------------------------------

def _flavor_usage(usage: Mapping[FlavorResource, Amount],
                  nominal: Mapping[FlavorResource, Amount], order: list[FlavorResource],
                  with_borrowed: bool = True) -> list[Body]:
    flavors: dict[str, list[Body]] = {}
    for fr in order:
        total = usage.get(fr, 0)
        entry: Body = {"name": fr.resource, "total": format_amount(total, fr.resource)}
        if with_borrowed:
            borrowed = max(0, total - nominal.get(fr, 0))
            entry["borrowed"] = format_amount(borrowed, fr.resource)
        flavors.setdefault(fr.flavor, []).append(entry)
    return [{"name": name, "resources": resources} for name, resources in flavors.items()]


def cluster_queue_status(engine: Engine, name: str, current: Body, at: float,
                         problem: str | None = None,
                         figures: tallies.QueueFigures | None = None) -> Body:
    """The ``status`` patch of ClusterQueue ``name``; ``problem``: why its spec is invalid;
    ``figures``: its figures counted already (the status sync counts them once for the
    metrics too)."""
    conditions = (current.get("status") or {}).get("conditions") or []
    cq = engine.cache.cluster_queues.get(name)
    if problem is not None or cq is None:
        active = condition("Active", False, "InvalidSpec" if problem else "NotFound",
                           f"Can't admit new workloads: {problem or 'not loaded'}", at)
        return {"status": {"conditions": merge_conditions(conditions, [active]),
                           "pendingWorkloads": 0, "reservingWorkloads": 0,
                           "admittedWorkloads": 0}}
    inactive = engine.cache.inactive.get(name)
    active = (condition("Active", False, inactive.reason, inactive.message, at) if inactive
              else condition("Active", True, "Ready", "Can admit new workloads", at))
    if figures is None:
        figures = tallies.cluster_queue(engine, cq)
    nominal = figures.nominal()
    order = list(cq.quotas)
    return {"status": {
        "conditions": merge_conditions(conditions, [active]),
        "pendingWorkloads": figures.waiting,
        "reservingWorkloads": figures.reserving,
        "admittedWorkloads": figures.admitted,
        "flavorsReservation": _flavor_usage(figures.reserved(), nominal, order),
        "flavorsUsage": _flavor_usage(figures.used(), nominal, order),
    }}


def local_queue_status(engine: Engine, key: str, current: Body, at: float,
                       tally: tallies.LocalQueueTally | None = None,
                       problem: str | None = None) -> Body:
    """The ``status`` patch of LocalQueue ``namespace/name``; ``problem``: why it is invalid;
    ``tally``: its workloads counted already (:func:`kuota.operator.tallies.local_queues`)."""
    conditions = (current.get("status") or {}).get("conditions") or []
    if tally is None:
        tally = tallies.local_queues(engine).get(key, tallies.LocalQueueTally())
    lq = engine.cache.local_queues.get(key)
    if lq is None:
        active = condition("Active", False, "InvalidSpec",
                           f"Can't submit new workloads: {problem or 'not loaded'}", at)
    elif lq.cluster_queue not in engine.cache.cluster_queues:
        active = condition("Active", False, "ClusterQueueDoesNotExist",
                           f"Can't submit new workloads to ClusterQueue {lq.cluster_queue}", at)
    elif lq.cluster_queue in engine.cache.inactive:
        active = condition("Active", False, "ClusterQueueIsInactive",
                           f"Can't submit new workloads to ClusterQueue {lq.cluster_queue}: "
                           f"{engine.cache.inactive[lq.cluster_queue].message}", at)
    else:
        active = condition("Active", True, "Ready", "Can submit new workloads to localQueue", at)
    order = sorted({*tally.reserved, *tally.used})
    return {"status": {
        "conditions": merge_conditions(conditions, [active]),
        "pendingWorkloads": tally.pending,
        "reservingWorkloads": tally.reserving,
        "admittedWorkloads": tally.admitted,
        "flavorsReservation": _flavor_usage(tally.reserved, {}, order, with_borrowed=False),
        "flavorsUsage": _flavor_usage(tally.used, {}, order, with_borrowed=False),
    }}


def differs(current: Body, patch: Body) -> bool:
    """Whether writing ``patch`` would change ``current``'s status (ignoring condition times)."""
    def strip(status: Body) -> Body:
        status = dict(status)
        status["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                                for c in status.get("conditions") or []]
        return status
    have = strip(current.get("status") or {})
    want = strip(patch["status"])
    return any(have.get(k) != v for k, v in want.items())
