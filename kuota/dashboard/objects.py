"""An engine from Kubernetes object bodies, as the operator rebuilds one when it leads.

The dashboard's Kubernetes mode lists the kuota objects (ResourceFlavors,
AdmissionChecks, Cohorts, ClusterQueues, LocalQueues, Workloads,
MemberClusters) and namespaces, and hands the bodies here. Like
:meth:`kuota.operator.controller.Controller.rebuild`, queue objects go in
first, in dependency order; then the Workloads holding quota are *restored*
from ``status.admission`` (usage counted, admission checks kept) before the
waiting ones are queued by creation time, so positions follow the order the
operator's engine uses. Finished Workloads are left out; a Workload with
``spec.active: false`` is queued and deactivated, so it counts nowhere.

No cycle runs: the picture is the operator's state, not a guess at its next
decision. Why a Workload waits is what the operator wrote on its status
(the ``QuotaReserved`` condition), read by :func:`kuota.explanation.from_object`
as ``kuota why --kubeconfig`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from admission.engine import Engine
from kuota import explanation
from kuota.dashboard.model import Facts, HistoryRow, Member, Overview, overview
from kuota.operator.restore import admission_from_status, epoch
from quota import api, convert
from quota.api.membercluster import ACTIVE
from quota.api.meta import find_condition
from quota.config import EngineConfig
from quota.resources import format_amount, parse_amount

#: Queue objects in the order the engine needs them (flavors before the queues using them).
CONFIG_KINDS = ("ResourceFlavor", "AdmissionCheck", "Cohort", "ClusterQueue", "LocalQueue")

Body = Mapping[str, Any]


@dataclass
class Objects:
    """What the adapter listed: bodies per kind, namespace labels."""

    bodies: dict[str, list[Body]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Pods bound to a node that belong to a Job or a pod group (where workloads run).
    pods: list[Body] = field(default_factory=list)


#: Labels naming a pod's Job, and a pod's pod group (kuota's and Kueue's spelling).
JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name")
GROUP_LABELS = ("kuota.dev/pod-group-name", "kueue.x-k8s.io/pod-group-name")
#: The label the operator puts on a pod group's Workload.
WORKLOAD_GROUP_LABEL = "kuota.dev/pod-group"


def pod_nodes(pods: Iterable[Body]) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(namespace, "Job" | "group", name) -> the nodes its pods are bound to."""
    out: dict[tuple[str, str, str], dict[str, None]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        labels = meta.get("labels") or {}
        namespace = meta.get("namespace") or "default"
        for kind, names in (("Job", JOB_LABELS), ("group", GROUP_LABELS)):
            owner = next((labels[n] for n in names if labels.get(n)), None)
            if owner:
                out.setdefault((namespace, kind, owner), {})[node] = None
    return {k: tuple(v) for k, v in out.items()}


def workload_nodes(body: Body, nodes: Mapping[tuple[str, str, str], tuple[str, ...]]
                   ) -> tuple[str, ...]:
    """The nodes the pods of a Workload's Job or pod group run on."""
    meta = body.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    group = (meta.get("labels") or {}).get(WORKLOAD_GROUP_LABEL)
    if group:
        return nodes.get((namespace, "group", group), ())
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") == "Job":
            return nodes.get((namespace, "Job", str(ref.get("name"))), ())
    return ()


def _name(body: Body) -> str:
    meta = body.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def build(objects: Objects, *, source: str, now: float) -> Overview:
    engine = Engine(config=EngineConfig(), wait_for_stop=True)
    for name, labels in objects.namespaces.items():
        engine.set_namespace(name, labels)
    problems: list[str] = []
    priority_classes: dict[str, int] = {}
    for body in objects.bodies.get("WorkloadPriorityClass", ()):
        parsed = _parse("WorkloadPriorityClass", body, problems)
        if isinstance(parsed, api.WorkloadPriorityClass):
            priority_classes[parsed.metadata.name] = parsed.value
    configs = []
    for kind in CONFIG_KINDS:
        for body in objects.bodies.get(kind, ()):
            parsed = _parse(kind, body, problems)
            if parsed is not None:
                configs.append(convert.config(parsed))
    engine.apply_all(configs)
    facts: dict[str, Facts] = {}
    nodes = pod_nodes(objects.pods)
    workloads = [(body, w) for body in objects.bodies.get("Workload", ())
                 if isinstance(w := _parse("Workload", body, problems), api.Workload)
                 and not w.is_finished]
    # Quota held is counted before anything queues, as when the operator rebuilds.
    workloads.sort(key=lambda pair: not pair[1].has_quota_reservation)
    for body, obj in workloads:
        key = f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
        priority = obj.spec.priority
        if priority is None:
            priority = priority_classes.get(obj.spec.priority_class_name or "", 0)
        created = epoch((body.get("metadata") or {}).get("creationTimestamp"), now)
        try:
            info = convert.workload(obj, priority=priority, created=created)
            admission = obj.status.admission
            if admission is not None and obj.has_quota_reservation:
                held = admission_from_status(admission, engine, info)
                checks = {c.name: (c.state, c.message) for c in obj.status.admission_checks}
                engine.restore(info, held, created, admitted=obj.is_admitted, checks=checks,
                               now=now)
            else:
                engine.submit(info)
                if not obj.spec.active:
                    engine.deactivate(key, now, "InactiveWorkload", "spec.active is false")
        except ValueError as exc:
            problems.append(f"Workload {key}: {exc}")
            continue
        facts[key] = Facts(explanation.from_object(obj), workload_nodes(body, nodes))
    engine.drain_outbox()
    members = [member(m) for body in objects.bodies.get("MemberCluster", ())
               if isinstance(m := _parse("MemberCluster", body, problems), api.MemberCluster)]
    return overview(engine, facts, source=source, members=members, problems=problems)


def _parse(kind: str, body: Body, problems: list[str]) -> Any:
    try:
        return api.parse_object(dict(body), source=f"{kind} {_name(body)}")
    except api.ObjectError as exc:
        problems.extend(str(p) for p in exc.problems)
        return None


def member(obj: api.MemberCluster) -> Member:
    active = find_condition(obj.status.conditions, ACTIVE)
    healthy = active is not None and active.status == "True"
    health = "Unknown" if active is None else (
        "Active" if healthy else f"{active.reason or 'Inactive'}: {active.message}".rstrip(": "))
    free = {(f.name, r): q for f in obj.status.free_capacity for r, q in f.resources.items()}
    resources = tuple(
        (f"{f.name}/{r}", _amount(free.get((f.name, r)), r), _amount(q, r))
        for f in obj.status.capacity for r, q in sorted(f.resources.items()))
    return Member(obj.metadata.name, healthy, health, None, obj.status.node_count, resources)


def _amount(quantity: object, resource: str) -> str:
    if quantity is None:
        return "?"
    return format_amount(parse_amount(str(quantity)), resource)


def conditions(obj: api.Workload) -> list[tuple[str, str, str, str]]:
    return [(c.type, c.status, c.reason, c.message) for c in obj.status.conditions]


def history(obj: api.Workload, events: Iterable[Body]) -> list[HistoryRow]:
    """What happened to a Workload: its conditions' last transitions and its Events,
    oldest first (Kubernetes keeps no more than that)."""
    rows: list[HistoryRow] = []
    for c in obj.status.conditions:
        at = c.last_transition_time.timestamp() if c.last_transition_time else None
        rows.append(HistoryRow(at, f"{c.type}={c.status}",
                               ": ".join(p for p in (c.reason, c.message) if p)))
    for event in events:
        stamp = event.get("lastTimestamp") or event.get("eventTime") or \
            (event.get("metadata") or {}).get("creationTimestamp")
        count = event.get("count") or 1
        rows.append(HistoryRow(epoch(stamp, 0.0) or None, str(event.get("reason", "?")),
                               str(event.get("message", ""))
                               + (f" (×{count})" if count > 1 else "")))
    rows.sort(key=lambda r: (r.at is None, r.at or 0.0))
    return rows
