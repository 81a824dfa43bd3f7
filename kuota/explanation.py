"""Why a workload runs where it runs: one view of a workload for ``kuota why`` and ``describe``.

Both deployments keep the multi-cluster dispatch decision next to the
workload, in the shape of :meth:`multicluster.decision.Decision.to_dict`:

* **Redis mode** — the ``dispatch`` field of the workload's record, written by
  the active scheduler (:mod:`kuota.service.members`);
* **Kubernetes** — the Workload object's ``status.dispatch`` (with
  ``status.clusterName``), written by the operator.

:func:`from_record` and :func:`from_object` turn either into a
:class:`WorkloadView`; :func:`why` renders the decision with
:func:`multicluster.explain.render`, or says plainly why there is none: the
workload is still waiting for quota (with the pending message), or its
ClusterQueue does not dispatch (no ``kuota.dev/multicluster`` check).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from multicluster import explain
from multicluster.decision import Decision
from queueing.store import WorkloadRecord
from quota import api
from quota.lifecycle import State


@dataclass(frozen=True)
class WorkloadView:
    key: str
    #: Pending, QuotaReserved, Admitted, Inactive or Finished.
    state: str
    reason: str = ""
    message: str = ""
    queue: str = ""
    cluster_queue: str = ""
    #: The member cluster the workload was dispatched to, if any.
    cluster: str | None = None
    #: The stored decision (``Decision.to_dict()`` shape), if any.
    decision: Mapping[str, Any] | None = None
    #: More (label, value) lines for ``describe``.
    details: list[tuple[str, str]] = field(default_factory=list)


def from_record(record: WorkloadRecord) -> WorkloadView:
    """A workload as the Redis store holds it."""
    admission = record.admission
    details = [("Attempt", str(record.attempt))]
    if record.outcome.value:
        details.append(("Outcome", record.outcome.value))
    if admission is not None:
        details.append(("Flavors", ", ".join(
            f"{ps.name}: " + ", ".join(f"{r}={f}" for r, f in sorted(ps.flavors.items()))
            for ps in admission.pod_sets)))
        for ps in admission.pod_sets:
            if ps.nodes:
                details.append((f"Topology {ps.name}", ", ".join(
                    f"{node}×{count}" for node, count in ps.nodes)))
    if record.placement:
        details.append(("Nodes", ", ".join(record.placement)))
    return WorkloadView(
        key=record.key, state=record.state.value, reason=record.reason, message=record.message,
        queue=record.queue, cluster_queue=record.cluster_queue,
        cluster=admission.cluster if admission is not None else None,
        decision=record.dispatch(), details=details)


def from_object(obj: api.Workload) -> WorkloadView:
    """A Workload object as the Kubernetes API returns it (status written by the operator)."""
    status = obj.status
    key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
    state, reason, message = State.PENDING.value, "", ""
    for type_, state_ in (("Finished", State.FINISHED), ("Evicted", State.EVICTING),
                          ("Admitted", State.ADMITTED), ("QuotaReserved", State.QUOTA_RESERVED)):
        if status.is_true(type_):
            state = state_.value
            break
    if state == State.EVICTING.value and not status.is_true("QuotaReserved"):
        state = State.PENDING.value  # evicted and released: waiting again
    if state == State.EVICTING.value:  # evicted, its pods still stopping: quota held
        condition = status.condition("Evicted")
        if condition is not None:
            reason, message = condition.reason, condition.message
    elif state == State.PENDING.value:
        condition = status.condition("QuotaReserved")
        if condition is not None:
            reason, message = condition.reason, condition.message
    elif state == State.QUOTA_RESERVED.value:
        waiting = [c for c in status.admission_checks if c.state != "Ready"]
        if waiting:
            reason = "AdmissionCheck"
            message = "; ".join(f"{c.name}: {c.state}" + (f": {c.message}" if c.message else "")
                                for c in waiting)
    elif state == State.FINISHED.value:
        condition = status.condition("Finished")
        if condition is not None:
            reason, message = condition.reason, condition.message
    decision = status.dispatch.to_dict() if status.dispatch is not None else None
    details = []
    owner = owner_of(obj)
    if owner:
        details.append(("Owner", owner))
    if status.admission is not None:
        details.append(("Flavors", ", ".join(
            f"{ps.name}: " + ", ".join(f"{r}={f}" for r, f in sorted(ps.flavors.items()))
            for ps in status.admission.pod_set_assignments)))
    return WorkloadView(
        key=key, state=state, reason=reason, message=message, queue=obj.spec.queue_name or "",
        cluster_queue=status.admission.cluster_queue if status.admission is not None else "",
        cluster=status.cluster_name, decision=decision, details=details)


def owner_of(obj: api.Workload) -> str:
    """What a Workload stands for, as ``Kind name``: its controlling owner (a Job, a
    JobSet, ...), else the kind kuota labelled it with (a pod group: ``Pod``,
    ``StatefulSet``, ``Deployment``, ``PodGroup``) and its group."""
    meta = obj.metadata
    for ref in meta.owner_references:
        if ref.controller:
            return f"{ref.kind} {ref.name}"
    kind = meta.labels.get("kuota.dev/owner-kind", "")
    group = meta.labels.get("kuota.dev/pod-group", "")
    return " ".join(part for part in (kind, group) if part)


def decision_of(view: WorkloadView) -> Decision | None:
    """The stored decision as a value; ValueError if it is malformed."""
    if view.decision is None:
        return None
    # Empty fields are left out of stored status: give them back their defaults.
    data = {"workload": view.key, "clusters": [], **view.decision}
    return Decision.from_dict(data)


def why(view: WorkloadView) -> str:
    """The explanation: the rendered decision, or why there is none."""
    decision = decision_of(view)
    if decision is not None:
        text = explain.render(decision)
        if view.state == State.QUOTA_RESERVED.value and decision.cluster is None:
            text += "Waiting with its quota reserved; tried again when a member changes.\n"
        return text
    head = f"Workload {view.key}: no multi-cluster dispatch decision"
    if view.state == State.PENDING.value:
        waiting = ": ".join(p for p in (view.reason, view.message) if p)
        return (f"{head} yet: it is still pending"
                + (f" ({waiting})" if waiting else "") + ".\n"
                "A decision is made once quota is reserved.\n")
    if view.state == State.INACTIVE.value:
        return f"{head}: it is inactive ({view.reason or 'Inactive'}: {view.message}).\n"
    if view.cluster:
        return f"{head} is stored, but it was dispatched to {view.cluster}.\n"
    return (f"{head}: it is not a multi-cluster workload (its ClusterQueue "
            f"{view.cluster_queue or '?'} has no kuota.dev/multicluster admission check).\n")


def describe(view: WorkloadView) -> str:
    """Status lines, then the explanation."""
    rows = [("Name", view.key), ("Queue", view.queue or "-"),
            ("ClusterQueue", view.cluster_queue or "-"), ("State", view.state),
            ("Reason", view.reason or "-"), ("Message", view.message or "-"),
            ("Cluster", view.cluster or "-"), *view.details]
    width = max(len(label) for label, _ in rows) + 1
    lines = [f"{(label + ':').ljust(width)} {value}" for label, value in rows]
    return "\n".join(lines) + "\nDispatch:\n" + "".join(
        f"  {line}\n" for line in why(view).splitlines())
