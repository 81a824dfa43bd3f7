"""Why a workload waits, and where it runs: one explanation for ``kuota why``, ``kubectl
kuota why``, ``describe`` and the dashboard.

:func:`from_record` (Redis mode: the workload's record) and :func:`from_object`
(Kubernetes: the Workload object's status) turn what the store holds into a
:class:`WorkloadView`. :func:`why` then explains it from an engine — the scheduler's,
or one rebuilt from the store as a new leader would — with the core's
:mod:`admission.explain` (what it needs per pod set and resource, what is free at each
level of its cohort tree, who borrows it, what its preemption policy allows, its
position, what would make it fit), and only for a multi-cluster workload adds the
dispatch decision, kept next to the workload in the shape of
:meth:`multicluster.decision.Decision.to_dict` (Redis: the record's ``dispatch`` field;
Kubernetes: ``status.dispatch`` and ``status.clusterName``), rendered with
:func:`multicluster.explain.render`, or why there is none yet.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from queueing.store import WorkloadRecord
from quota import api
from quota.lifecycle import State

if TYPE_CHECKING:
    from admission.engine import Engine
    from multicluster.decision import Decision

#: The admission check controller of multi-cluster dispatch
#: (:data:`multicluster.controller.CONTROLLER_NAME`; that module is heavier to import).
MULTICLUSTER_CONTROLLER: Final = "kuota.dev/multicluster"


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
    details += pod_set_details(record.spec())
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
    details += pod_set_details(obj.to_dict())
    cluster_queue = status.admission.cluster_queue if status.admission is not None else ""
    return WorkloadView(
        key=key, state=state, reason=reason, message=message, queue=obj.spec.queue_name or "",
        cluster_queue=cluster_queue,
        cluster=status.cluster_name, decision=decision, details=details)


def pod_set_details(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a Workload manifest asks for, as (label, value) lines: per pod set, its pods'
    requests (``Requests main``: ``4 pods × cpu=1, nvidia.com/gpu=1``) and what they run
    (``Command main``), whole (a page or a terminal wraps them; nothing is cut)."""
    spec = manifest.get("spec") if isinstance(manifest, Mapping) else None
    pod_sets = spec.get("podSets") if isinstance(spec, Mapping) else None
    rows: list[tuple[str, str]] = []
    for ps in pod_sets if isinstance(pod_sets, list) else []:
        if not isinstance(ps, Mapping):
            continue
        name, count = str(ps.get("name", "main")), ps.get("count", 1)
        containers = ((ps.get("template") or {}).get("spec") or {}).get("containers") or []
        requests, commands = [], []
        for c in containers if isinstance(containers, list) else []:
            wanted = (c.get("resources") or {}).get("requests") or {}
            label = f"{c.get('name')}: " if len(containers) > 1 else ""
            requests.append(label + (", ".join(f"{r}={q}" for r, q in sorted(wanted.items()))
                                     or "nothing"))
            argv = [str(a) for a in [*(c.get("command") or []), *(c.get("args") or [])]]
            if argv:
                commands.append(label + shlex.join(argv))
        pods = f"{count} pod{'s' if count != 1 else ''}"
        rows.append((f"Requests {name}", f"{pods} × " + "; ".join(requests or ["nothing"])))
        if commands:
            rows.append((f"Command {name}", "; ".join(commands)))
    return rows


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
    # (here, not at the top: the multi-cluster models cost describe and why a tenth of a
    # second on every single-pool workload)
    from multicluster.decision import Decision

    return Decision.from_dict(data)


def why(view: WorkloadView, engine: Engine | None = None) -> str:
    """The explanation: the engine's (:mod:`admission.explain`: what it needs, what is free
    at each level of its cohort tree, who borrows it, what preemption allows, its position,
    what would make it fit), then — for a multi-cluster workload only — the dispatch
    decision, or why there is none yet. Without ``engine`` (or a workload it does not hold:
    finished, invalid), the stored state stands in for the engine's."""
    from admission import explain

    if engine is not None and view.key in engine.records:
        text = explain.render(explain.explain(engine, view.key, reason=view.reason,
                                              message=view.message))
    else:
        where = f" in ClusterQueue {view.cluster_queue}" if view.cluster_queue else ""
        said = ": ".join(p for p in (view.reason, view.message) if p)
        text = f"Workload {view.key} is {view.state}{where}.\n" + (
            f"Reason: {said}\n" if said else "")
    if _multicluster(view, engine):
        text += "Dispatch:\n" + "".join(f"  {line}\n" for line in dispatch(view).splitlines())
    return text


def cluster_queue(view: WorkloadView, engine: Engine | None) -> str:
    """The workload's ClusterQueue: the one holding its quota, else (waiting) the one its
    LocalQueue points at in ``engine``; empty when there is none."""
    if view.cluster_queue or engine is None:
        return view.cluster_queue
    record = engine.records.get(view.key)
    lq = engine.cache.local_queues.get(record.info.local_queue_key) \
        if record is not None else None
    return lq.cluster_queue if lq is not None else ""


def _multicluster(view: WorkloadView, engine: Engine | None) -> bool:
    """Whether the workload is dispatched to member clusters: it has a decision or a
    cluster, or its ClusterQueue has a kuota.dev/multicluster admission check."""
    if view.decision is not None or view.cluster:
        return True
    if engine is None:
        return False
    cq = engine.cache.cluster_queues.get(cluster_queue(view, engine))
    checks = engine.cache.admission_checks
    return cq is not None and any(
        name in checks and checks[name].controller_name == MULTICLUSTER_CONTROLLER
        for name, _ in cq.admission_checks)


def dispatch(view: WorkloadView) -> str:
    """The multi-cluster dispatch decision, rendered, or why there is none yet."""
    from multicluster import explain as dispatch_explain

    decision = decision_of(view)
    if decision is not None:
        text = dispatch_explain.render(decision)
        if view.state == State.QUOTA_RESERVED.value and decision.cluster is None:
            text += "Waiting with its quota reserved; tried again when a member changes.\n"
        return text
    if view.cluster:
        return f"No decision is stored, but it was dispatched to {view.cluster}.\n"
    if view.state == State.INACTIVE.value:
        return "No decision: it is inactive.\n"
    return "No decision yet: a member cluster is chosen once quota is reserved.\n"


def describe(view: WorkloadView, engine: Engine | None = None) -> str:
    """Status lines, then the explanation."""
    rows = [("Name", view.key), ("Queue", view.queue or "-"),
            ("ClusterQueue", cluster_queue(view, engine) or "-"), ("State", view.state),
            ("Reason", view.reason or "-"), ("Message", view.message or "-"),
            ("Cluster", view.cluster or "-"), *view.details]
    width = max(len(label) for label, _ in rows) + 1
    lines = [f"{(label + ':').ljust(width)} {value}" for label, value in rows]
    return "\n".join(lines) + "\nWhy:\n" + "".join(
        f"  {line}\n" for line in why(view, engine).splitlines())
