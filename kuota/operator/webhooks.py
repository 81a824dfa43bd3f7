"""Admission webhooks: no pod of an unadmitted Job may start.

The mutating webhook sees every Job at creation and sets ``spec.suspend:
true`` on those kuota manages (a queue label, or the namespace's ``default``
LocalQueue when the deployment opts in), so the Job controller creates no
pods until kuota admits the Job. Deciding is a pure function of the Job and
whether the LocalQueue exists; the kopf registration is in
:mod:`kuota.operator.handlers`.

Kueue's webhook also rejects Jobs whose queue label is not a valid name;
kuota does the same, with the field named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuota.operator import jobs, names
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
