"""Admission webhooks: no pod of an unadmitted Job may start.

The mutating webhook sees every Job at creation and sets ``spec.suspend:
true`` on those kuota manages (a queue label, or the namespace's ``default``
LocalQueue when the deployment opts in), so the Job controller creates no
pods until kuota admits the Job. Pods of a pod group get the scheduling gate
``kuota.dev/admission`` instead, so kube-scheduler does not place them
until their group is admitted. Deciding is a pure function of the Job and
whether the LocalQueue exists; the kopf registration is in
:mod:`kuota.operator.handlers`.

Kueue's webhook also rejects Jobs whose queue label is not a valid name;
kuota does the same, with the field named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuota.operator import jobs, names, podgroups
from quota.api.names import dns_subdomain_error

Body = dict[str, Any]


class Rejected(ValueError):
    """The object must not be created; the message says why."""


def job_needs_suspend(job: Body, *, default_queue: bool,
                      queue_exists: Callable[[str, str], bool]) -> bool:
    """Whether a new Job must be created suspended; raises :class:`Rejected` on a bad label."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    for label in names.QUEUE_LABELS:
        value = labels.get(label)
        if value is not None:
            problem = dns_subdomain_error(value)
            if problem:
                raise Rejected(f"metadata.labels[{label}]: {problem}")
    queue = jobs.queue_of(job, default_queue=default_queue, queue_exists=queue_exists)
    return queue is not None and (job.get("spec") or {}).get("suspend") is not True


def pod_gates(pod: Body) -> list[Body] | None:
    """The scheduling gates a new pod of a queued pod group must have; None for other pods."""
    try:
        group = podgroups.group_of(pod)
    except podgroups.GroupError as exc:
        raise Rejected(str(exc)) from exc
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if group is None or names.first_of(labels, names.QUEUE_LABELS) is None:
        return None
    gates = list((pod.get("spec") or {}).get("schedulingGates") or [])
    if podgroups.gated(pod):
        return None
    return [*gates, {"name": names.ADMISSION_GATE}]
