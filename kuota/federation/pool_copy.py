"""A Job's copy for a Redis worker pool, and the pool copy's progress as Job status (pure).

A pool member runs no Kubernetes objects: the operator hands the pool a
*dispatched workload* (:mod:`kuota.service.dispatched_spec`) made from the
same copy :func:`kuota.federation.remote_job.build` makes for a Kubernetes
member — so the flavors' nodeLabels are already in the pod template's
``nodeSelector``, their tolerations in ``tolerations``, and ``parallelism`` is
the admitted pod count:

* :func:`from_job` — the pool copy: key ``namespace/name`` of the Job (the
  same deterministic name a Kubernetes copy gets, so create-if-absent works
  across retries and restarts), one pod set ``main`` of ``parallelism`` pods
  (each runs once: a pool has no completions or indexes), the pod template,
  and ``backoffLimit`` (default 6, as Kubernetes): how many times the gang is
  restarted after a failed pod before the copy fails.
* :func:`refusal` — why a Job cannot run on a pool at all: its first
  container has no ``command`` (a pool runs processes, not images) or reads
  ``env`` through ``valueFrom``. The operator turns this into a dispatch hint
  so the ClusterAffinity filter keeps the Job off pool members
  (:data:`POOL_LABEL`), instead of sending it somewhere it can never run.
* :func:`job_status` — what the operator copies home: a Job-shaped body whose
  ``status`` reads as a 1.31+ Job controller would write it (``active``,
  ``succeeded``, ``failed``, ``startTime``; once the copy finished,
  ``SuccessCriteriaMet`` + ``Complete`` with ``completionTime``, or
  ``FailureTarget`` + ``Failed``) and goes through the same
  :func:`kuota.federation.job_status.status_patch` as a Kubernetes copy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kuota.federation.remote_job import workload_of
from kuota.operator.status import timestamp
from kuota.service.dispatched_spec import DispatchedPodSet, DispatchedSpec, SpecError, check
from multicluster.hints import CLUSTER_SELECTOR
from queueing.store import Outcome, WorkloadRecord
from quota.lifecycle import State

Body = dict[str, Any]

#: Selector label every pool member carries for dispatch (value: the pool's name).
POOL_LABEL: Final = "kuota.dev/pool"
POD_SET: Final = "main"
#: Kubernetes' default ``spec.backoffLimit``.
DEFAULT_BACKOFF_LIMIT: Final = 6


class PoolCopyError(ValueError):
    """A Job that cannot become a pool copy (the message names the Job and the field)."""


def from_job(body: Mapping[str, Any], *, origin: str, pool: str, member: str
             ) -> tuple[str, DispatchedSpec]:
    """(record key, spec) of the pool copy of the Job copy ``body``."""
    meta = body.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    where = f"Job {namespace}/{name}"
    if not name:
        raise PoolCopyError("Job without metadata.name cannot be dispatched")
    workload = workload_of(dict(body))
    if workload is None:
        raise PoolCopyError(f"{where}: no origin-workload annotation")
    spec = body.get("spec") or {}
    template = (spec.get("template") or {}).get("spec")
    if not isinstance(template, Mapping):
        raise PoolCopyError(f"{where}: spec.template.spec must be an object")
    count = spec.get("parallelism", 1)
    if count is None:
        count = 1
    limit = spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)
    if limit is None:
        limit = DEFAULT_BACKOFF_LIMIT
    if not isinstance(count, int) or count < 1:
        raise PoolCopyError(f"{where}: spec.parallelism must be a positive integer")
    if not isinstance(limit, int) or limit < 0:
        raise PoolCopyError(f"{where}: spec.backoffLimit must be a non-negative integer")
    result = DispatchedSpec(origin=origin, workload=workload, member=member, pool=pool,
                            pod_sets=(DispatchedPodSet(POD_SET, count, dict(template)),),
                            backoff_limit=limit)
    try:
        check(result)
    except SpecError as exc:
        raise PoolCopyError(f"{where} cannot run on pool {pool}: {exc}") from exc
    return f"{namespace}/{name}", result


def dispatch_hints(workload: Mapping[str, Any] | None,
                   job: Mapping[str, Any] | None) -> dict[str, str]:
    """The annotations dispatch reads hints from: the Job's over the Workload's own; a Job
    that cannot run on a pool also gets ``!kuota.dev/pool`` in its cluster selector, so
    ClusterAffinity refuses every pool member."""
    result: dict[str, str] = {}
    for obj in (workload, job):
        result.update(((obj or {}).get("metadata") or {}).get("annotations") or {})
    if job is not None and refusal(job) is not None:
        selector = result.get(CLUSTER_SELECTOR, "").strip()
        result[CLUSTER_SELECTOR] = ",".join(
            part for part in (selector, f"!{POOL_LABEL}") if part)
    return result


def refusal(job: Mapping[str, Any]) -> str | None:
    """Why the Job cannot run on any pool, or None when it can (nothing but a Job can)."""
    kind = job.get("kind")
    if kind not in (None, "Job"):
        return f"a {kind} cannot run on a worker pool (a pool runs Jobs)"
    template = ((job.get("spec") or {}).get("template") or {}).get("spec")
    if not isinstance(template, Mapping):
        return "spec.template.spec is missing"
    try:
        DispatchedPodSet(POD_SET, 1, dict(template)).command()
    except SpecError as exc:
        return str(exc)
    return None


def _time(at: float | None) -> str | None:
    return None if at is None else timestamp(at)


def job_status(record: WorkloadRecord, spec: DispatchedSpec) -> Body:
    """A Job-shaped body (metadata + status) describing the pool copy's progress."""
    namespace, _, name = record.key.partition("/")
    running = record.state is State.ADMITTED and bool(record.placement)
    status: Body = {"active": record.pods if running else 0,
                    "succeeded": record.pods_done if record.state is State.ADMITTED
                    or record.outcome is Outcome.SUCCEEDED else 0,
                    "failed": record.failures + (1 if record.outcome is Outcome.FAILED else 0)}
    if record.admitted_at is not None and (running or record.state is State.FINISHED):
        status["startTime"] = _time(record.admitted_at)
    if record.state is State.FINISHED:
        at = _time(record.finished_at)
        if record.outcome is Outcome.SUCCEEDED:
            status["succeeded"] = spec.pods
            status["completionTime"] = at
            kinds, reason = ("SuccessCriteriaMet", "Complete"), "Succeeded"
            message = record.message or "all pods exited 0"
        else:
            kinds = ("FailureTarget", "Failed")
            reason = record.reason or record.outcome.value or "Failed"
            message = f"on pool {spec.pool}: {record.message or 'the copy failed'}"
        # As the Job controller (1.31+) writes it: the interim condition, then the terminal.
        status["conditions"] = [{"type": kind, "status": "True", "reason": reason,
                                 "message": message, "lastTransitionTime": at}
                                for kind in kinds]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"namespace": namespace, "name": name,
                         "annotations": {"kuota.dev/origin-workload": spec.workload,
                                         "kuota.dev/member": spec.member}},
            "status": status}
