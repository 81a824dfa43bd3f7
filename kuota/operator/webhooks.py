"""Admission webhooks: no pod of an unadmitted Job (or JobSet, ...) may start.

The mutating webhook sees every object of a suspendable kind
(:mod:`kuota.operator.kinds`) at creation and sets ``spec.suspend: true`` on
those kuota manages (a queue label, or the namespace's ``default``
LocalQueue when the deployment opts in), so the Job controller creates no
pods until kuota admits the Job. A Job whose queue dispatches to member
clusters also gets ``spec.managedBy: kuota.dev/multicluster``, so the
manager's Job controller never manages it — the field is immutable, so now
is the only time (:mod:`kuota.federation.managed_by`). Pods of a pod group get the scheduling gate
``kuota.dev/admission`` instead, so kube-scheduler does not place them
until their group is admitted. Pods that ask for topology (a podset
topology annotation) — of a Job kuota manages, or of a queued pod group —
also get ``kuota.dev/topology`` (and the label ``kuota.dev/tas``, which is
how the operator watches them): they wait for their domain
(:mod:`kuota.operator.pinning`). Deciding is a pure function of the Job and
whether the LocalQueue exists; the kopf registration is in
:mod:`kuota.operator.handlers`.

Kueue's webhook also rejects Jobs whose queue label is not a valid name;
kuota does the same, with the field named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from admission import flavors
from admission.inadmissible import Verdict
from kuota.federation import managed_by
from kuota.federation.managed_by import Lookup
from kuota.operator import kinds, names
from kuota.operator.kinds import contract, podgroups
from quota import api, convert
from quota.api.names import dns_subdomain_error
from quota.workload import WorkloadInfo

Body = dict[str, Any]


class Rejected(ValueError):
    """The object must not be created; the message says why."""


def needs_suspend(obj: Body, *, default_queue: bool,
                  queue_exists: Callable[[str, str], bool]) -> bool:
    """Whether a new object of a suspendable kind (a Job, a JobSet, ...) must be created
    suspended; raises :class:`Rejected` on a bad label, or on a queued object its kind
    cannot queue (an autoscaling Ray cluster). One that is part of another object kuota
    queues (a JobSet's Jobs) is left to that object's controller."""
    kind = kinds.KINDS.get(str(obj.get("kind") or "Job"), kinds.KINDS["Job"])
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for label in names.QUEUE_LABELS:
        value = labels.get(label)
        if value is not None:
            problem = dns_subdomain_error(value)
            if problem:
                raise Rejected(f"metadata.labels[{label}]: {problem}")
    if kinds.owner_of(obj.get("metadata") or {}) is not None:
        return False
    queue = contract.queue_of(obj, default_queue=default_queue, queue_exists=queue_exists)
    if queue is None:
        return False
    problem = kind.refusal(obj)
    if problem is not None:
        raise Rejected(problem)
    return not kind.suspended(obj)


#: What the webhook warns of: the queues' shape refuses the object. A LocalQueue or
#: ClusterQueue not found may be one created a moment ago that this replica has not seen
#: yet; the leader's Warning Event on the object tells those once it has looked.
_WARNED: Final = (flavors.EXCEEDS_MAX_QUOTA, flavors.NO_MATCHING_FLAVOR)


def never_fits_warning(obj: Body, *, default_queue: bool,
                       queue_exists: Callable[[str, str], bool],
                       never_fits: Callable[[WorkloadInfo], Verdict | None] | None
                       ) -> str | None:
    """The admission warning for a new object kuota queues that can never be admitted as
    the queues are configured (``never_fits``: the leader's engine's verdict,
    :meth:`admission.engine.Engine.never_fits`): kubectl prints it at once. None when it may
    fit, or when there is no engine to ask (a replica that does not lead: the leader's
    Warning Event on the object says it too)."""
    kind = kinds.KINDS.get(str(obj.get("kind") or "Job"))
    meta = obj.get("metadata") or {}
    if never_fits is None or kind is None:
        return None
    queue = contract.queue_of(obj, default_queue=default_queue, queue_exists=queue_exists)
    if queue is None:
        return None
    named = {**obj, "metadata": {**meta, "name": meta.get("name") or meta.get("generateName")
                                 or "new", "namespace": meta.get("namespace") or "default"}}
    try:
        pod_sets = kind.pod_sets(named)
        if not pod_sets:  # made from a child object that does not exist yet (a TrainJob)
            return None
        manifest = contract.workload_for(kind, named, queue=queue, priority=0,
                                         priority_class=None)
        parsed = api.parse_object(manifest, source="")
    except (api.ObjectError, ValueError, KeyError, TypeError):
        return None  # the Workload's creation reports what is wrong with it, by field
    assert isinstance(parsed, api.Workload)
    verdict = never_fits(convert.workload(parsed, priority=0, created=0.0))
    if verdict is None or verdict.reason not in _WARNED:
        return None
    return (f"{kind.kind} {named['metadata']['namespace']}/{meta.get('name') or '(new)'} can "
            f"never be admitted as the queues are configured; it waits until they change: "
            f"{verdict.text()}")


def managed_by_default(job: Body, *, default_queue: bool,
                       queue_exists: Callable[[str, str], bool], lookup: Lookup) -> str | None:
    """The ``spec.managedBy`` a new Job or JobSet must be created with; None to leave it
    as it is.

    ``lookup(kind, key)``: the LocalQueue, ClusterQueue and AdmissionCheck objects seen.
    """
    if kinds.owner_of(job.get("metadata") or {}) is not None:
        return None
    queue = contract.queue_of(job, default_queue=default_queue, queue_exists=queue_exists)
    return managed_by.default_for(job, queue, lookup)


def pod_gates(pod: Body, *,
              job_managed: Callable[[str, str], bool] = lambda namespace, name: False,
              ) -> list[Body] | None:
    """All the scheduling gates a new pod must have; None if it needs none added.

    ``job_managed(namespace, name)``: whether kuota manages that Job (has a queue).
    """
    try:
        group = podgroups.group_of(pod)
    except podgroups.GroupError as exc:
        raise Rejected(str(exc)) from exc
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    queued_group = group is not None and names.first_of(labels, names.QUEUE_LABELS) is not None
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    present = {g.get("name") for g in gates if isinstance(g, dict)}
    added: list[Body] = []
    if queued_group and names.ADMISSION_GATE not in present:
        added.append({"name": names.ADMISSION_GATE})
    if names.TOPOLOGY_GATE not in present and asks_topology(pod) \
            and (queued_group or _of_managed_job(pod, job_managed)):
        added.append({"name": names.TOPOLOGY_GATE})
    return [*gates, *added] if added else None


def asks_topology(pod: Body) -> bool:
    """Whether a pod (or pod template) carries a podset topology annotation."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return convert.topology_request(annotations) is not None


def job_of(pod: Body) -> str | None:
    """The name of the Job a pod belongs to: its owner, else the Job controller's label."""
    return names.pod_job(pod.get("metadata") or {})


def _of_managed_job(pod: Body, job_managed: Callable[[str, str], bool]) -> bool:
    meta = pod.get("metadata") or {}
    if names.TOPOLOGY_LABEL in (meta.get("labels") or {}):
        return True  # the template of a Job kuota started says so
    job = job_of(pod)
    return job is not None and job_managed(meta.get("namespace") or "default", job)
