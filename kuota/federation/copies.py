"""The kinds kuota dispatches to member clusters: what a member is sent, what comes back (pure).

Multi-cluster dispatch carries Jobs and JobSets (MultiKueue's first two
kinds). For each, the local object stays suspended in the manager, named by
``spec.managedBy: kuota.dev/multicluster`` so that the manager's own
controller of that kind leaves it alone (:mod:`.managed_by`), and a *copy*
runs in the chosen member:

* a **Job** is copied by :func:`.remote_job.build`, and its copy's status
  comes home rebuilt under the API server's rules for Job status
  (:func:`.job_status.status_patch`);
* a **JobSet** is copied as kuota would start it locally
  (:meth:`~kuota.operator.kinds.templated.TemplatedKind.started`: each
  replicated Job's template with its flavors' node labels and tolerations,
  unsuspended), with the same metadata rules as a Job's copy: same
  namespace and name, no queue labels, no ``managedBy`` (the member's JobSet
  controller must run it), labelled with the manager (``kuota.dev/origin``,
  on the JobSet and every pod template, so its pods are known as ours) and
  annotated with the Workload and the member. Its status comes home whole
  — JobSet's status has no transition rules on the API server — until the
  local JobSet has ended (``Completed`` or ``Failed``): then it is never
  written again, and its Workload finishes through the usual JobSet
  handling.

A copy is named ``Kind:namespace/name`` (:func:`copy_key`) where copies of
several kinds meet (a member's pods, its observation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kuota.federation import job_status, remote_job
from kuota.federation.remote_job import (
    MEMBER_ANNOTATION,
    ORIGIN_LABEL,
    ORIGIN_WORKLOAD_ANNOTATION,
    SERVER_FIELDS,
    RemoteJobError,
)
from kuota.operator import names
from kuota.operator.kinds.contract import merge_patch
from kuota.operator.kinds.jobsets import JOBSET
from kuota.operator.names import Res
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]

#: The kinds a workload may be dispatched as, and where each is served.
DISPATCHED: Final[Mapping[str, Res]] = {"Job": names.JOBS, "JobSet": JOBSET.res}
#: The label JobSet's controller gives the pods of a JobSet (its name).
JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"


def copy_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}:{namespace}/{name}"


def kind_of(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind")
    return kind if isinstance(kind, str) and kind else "Job"


def build(obj: Body, admission: Admission, flavors: Mapping[str, FlavorConfig], *,
          origin: str, workload: str, member: str) -> Body:
    """The copy of ``obj`` (a Job or a JobSet) to create in ``member``; raises
    :class:`.remote_job.RemoteJobError` naming the object and field when it cannot be."""
    kind = kind_of(obj)
    if kind == "Job":
        return remote_job.build(obj, admission, flavors, origin=origin, workload=workload,
                                member=member)
    if kind != "JobSet":
        raise RemoteJobError(f"a {kind} cannot be dispatched to a member cluster "
                             f"(only {' and '.join(DISPATCHED)})")
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not name:
        raise RemoteJobError("JobSet without metadata.name cannot be dispatched")
    try:
        started = JOBSET.started(obj, admission, flavors)
        roles = JOBSET.roles(started)
    except (TypeError, ValueError, AttributeError) as exc:
        raise RemoteJobError(f"JobSet {namespace}/{name}: spec.replicatedJobs cannot be "
                             f"read: {exc}") from exc
    for role in roles:
        tmeta = role.template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), ORIGIN_LABEL: origin}
    spec = started.get("spec") or {}
    spec.pop("managedBy", None)
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if k not in names.QUEUE_LABELS}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in (names.ORIGINAL_ANNOTATION, names.ADMISSION_ANNOTATION)}
    new_meta: Body = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
    new_meta.update(name=name, namespace=namespace,
                    labels={**labels, ORIGIN_LABEL: origin},
                    annotations={**annotations, ORIGIN_WORKLOAD_ANNOTATION: workload,
                                 MEMBER_ANNOTATION: member})
    return {"apiVersion": JOBSET.res.api_version, "kind": "JobSet", "metadata": new_meta,
            "spec": spec}


def status_patch(local: Body, remote: Body, *, now: str) -> Body | None:
    """The merge patch of ``local``'s status showing its copy ``remote``'s; None when
    nothing changes (``now``: the time for what the member did not date)."""
    if kind_of(local) == "Job":
        return job_status.status_patch(local, remote, now=now)
    if JOBSET.finished(local) is not None:
        return None  # ended: what it ended with stays
    patch = merge_patch(local.get("status") or {}, remote.get("status") or {})
    return {"status": patch} if patch else None


def pod_copy(meta: Mapping[str, Any]) -> str | None:
    """The copy (:func:`copy_key`) a pod of ours belongs to, from its labels and owners:
    a JobSet's pod by its JobSet's name, any other by its Job's."""
    namespace = meta.get("namespace") or "default"
    jobset = (meta.get("labels") or {}).get(JOBSET_NAME_LABEL)
    if jobset:
        return copy_key("JobSet", namespace, jobset)
    job = names.pod_job(meta)
    return copy_key("Job", namespace, job) if job else None
