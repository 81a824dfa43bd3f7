"""The copy of a Job that a member cluster runs (pure).

Under multi-cluster dispatch the local Job never runs: it stays suspended in
the manager (as under Kueue's MultiKueue) and a *copy* runs in the chosen
member. :func:`build` makes that copy from the local Job and its admission:

* same namespace and name as the local Job — deterministic, so creating it
  twice is harmless (the second create answers 409 and is taken as done), and
  a manager that restarts finds its copies again;
* the admitted flavors' node labels merged into ``nodeSelector`` and their
  tolerations appended (what the manager would do to start it locally),
  ``parallelism`` set to the admitted count, ``suspend: false``;
* queue labels removed, so the member's own kuota or Kueue (if any) does not
  hold it a second time;
* labelled ``kuota.dev/origin=<manager id>`` on the Job *and* its pod template
  (the manager lists its copies by it, and leaves its pods out of the member's
  free capacity, since the dispatcher already counts them), annotated with the
  Workload it stands for (``kuota.dev/origin-workload: ns/name``) and the
  member it was sent to (``kuota.dev/member``);
* without ``spec.managedBy``: the local Job names kuota there
  (:data:`.managed_by.MANAGED_BY`) so that the manager's Job controller leaves
  it alone; the copy must be run by the member's Job controller.

Going back, :func:`.job_status.status_patch` turns the copy's status into one
the manager's API server accepts on the local Job.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kuota.operator import names
from kuota.operator.kinds import jobs
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]

ORIGIN_LABEL: Final = "kuota.dev/origin"
ORIGIN_WORKLOAD_ANNOTATION: Final = "kuota.dev/origin-workload"
MEMBER_ANNOTATION: Final = "kuota.dev/member"
#: Metadata the API server owns; a copy must not carry the local values.
SERVER_FIELDS: Final = ("uid", "resourceVersion", "creationTimestamp", "generation",
                         "managedFields", "ownerReferences", "selfLink", "deletionTimestamp",
                         "deletionGracePeriodSeconds", "finalizers")
#: Pod template labels the Job controller adds from the local Job; the member adds its own.
_CONTROLLER_LABELS: Final = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                             "batch.kubernetes.io/job-name")


class RemoteJobError(ValueError):
    """The local Job cannot be copied (the message names it and the field)."""


def build(job: Body, admission: Admission, flavors: Mapping[str, FlavorConfig], *,
          origin: str, workload: str, member: str) -> Body:
    """The Job to create in ``member`` for ``job`` admitted as ``admission``."""
    meta = job.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not name:
        raise RemoteJobError("Job without metadata.name cannot be dispatched")
    where = f"Job {namespace}/{name}"
    spec = copy.deepcopy(job.get("spec") or {})
    template = spec.get("template")
    if not isinstance(template, dict):
        raise RemoteJobError(f"{where}: spec.template must be an object")
    original = jobs.original_fields(job)
    labels, tolerations = jobs.node_constraints(admission, flavors, jobs.POD_SET)
    pod = template.setdefault("spec", {})
    selector = dict(original["nodeSelector"])
    selector.update(labels)
    merged = list(original["tolerations"])
    merged += [t for t in tolerations if t not in merged]
    for key, value in (("nodeSelector", selector), ("tolerations", merged)):
        if value:
            pod[key] = value
        else:
            pod.pop(key, None)
    count = next((ps.count for ps in admission.pod_sets if ps.name == jobs.POD_SET), None)
    if count is not None:
        spec["parallelism"] = count
    elif original.get("parallelism") is not None:
        spec["parallelism"] = original["parallelism"]
    spec["suspend"] = False
    # The member's Job controller makes its own selector and labels for the copy, and runs
    # it: the managedBy that keeps the manager's controller off the local Job must not
    # keep the member's off the copy.
    spec.pop("selector", None)
    spec.pop("manualSelector", None)
    spec.pop("managedBy", None)
    tmeta = template.setdefault("metadata", {})
    tlabels = {k: v for k, v in (tmeta.get("labels") or {}).items()
               if k not in _CONTROLLER_LABELS}
    tlabels[ORIGIN_LABEL] = origin
    tmeta["labels"] = tlabels
    job_labels = {k: v for k, v in (meta.get("labels") or {}).items()
                  if k not in names.QUEUE_LABELS and k not in _CONTROLLER_LABELS}
    job_labels[ORIGIN_LABEL] = origin
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in (names.ORIGINAL_ANNOTATION, names.ADMISSION_ANNOTATION)}
    annotations[ORIGIN_WORKLOAD_ANNOTATION] = workload
    annotations[MEMBER_ANNOTATION] = member
    new_meta: Body = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
    new_meta.update(name=name, namespace=namespace, labels=job_labels, annotations=annotations)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": new_meta, "spec": spec}


def workload_of(remote: Body) -> str | None:
    """The local Workload (``ns/name``) a remote copy stands for, from its annotation."""
    annotations = (remote.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(ORIGIN_WORKLOAD_ANNOTATION)
    return value if isinstance(value, str) and "/" in value else None

