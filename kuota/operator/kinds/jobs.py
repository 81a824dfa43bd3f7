"""Jobs (``batch/v1``) as workloads: what a Job asks for, and how admission changes it.

Pure functions over Job bodies (dicts as the API returns them); no I/O.

* A queue-labelled Job becomes one Workload owned by it, with one podSet
  ``main`` of ``min(parallelism, completions)`` pods whose template is the
  Job's pod template (requests summed the Kubernetes way by the API model:
  containers, the largest init container, overhead), and ``minCount`` from
  the ``kuota.dev/job-min-parallelism`` annotation (partial admission).
* When the Workload is admitted the Job is *started*: the flavors' node
  labels are merged into ``nodeSelector``, their tolerations appended,
  ``parallelism`` set to the admitted count, ``suspend`` cleared — and what
  was there before is saved in an annotation. A template asking for topology
  is labelled ``kuota.dev/tas`` so its pods are gated until pinned.
* When it is evicted (or was never admitted) the Job is *stopped*:
  suspended, with the saved template fields put back.

Kubernetes lets a Job's pod template change (its scheduling directives:
nodeSelector, tolerations, node affinity, template labels) only while the Job
is suspended and ``status.startTime`` is unset (``pkg/registry/batch/job``:
``AllowMutableSchedulingDirectives``); a Job that ran keeps its startTime
after suspension — the Job controller clears it itself only from 1.36
(``MutableSchedulingDirectivesForSuspendedJobs``). So, as Kueue does, a Job
that ran is stopped in steps, one write each, every step read again from the
Job as last seen (:func:`stop_write`): suspend it; wait until the Job
controller reports no active and no terminating pod (1.36 also refuses the
template change before that, and the Workload's quota is released only
then); clear ``startTime`` through the ``status`` subresource (allowed on a
suspended Job); put the saved template back. Starting it again
(:func:`start_write`) clears a startTime left over first.

Writes are JSON merge patches computed from the Job as last seen, and are
``None`` when the Job already is as it should be, so replaying a decision
(after a restart, or a watch event of our own write) writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kuota.operator import names
from kuota.operator.kinds import contract
from kuota.operator.kinds.contract import Write, fingerprint, node_constraints, queue_of
from kuota.operator.kinds.templated import job_pods
from quota import convert
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]
POD_SET = "main"


__all__ = ["JOB", "Write", "node_constraints", "queue_of"]


def pod_count(job: Body) -> int:
    return job_pods(job.get("spec") or {})


def original_fields(job: Body) -> Body:
    """The template fields admission changes, as they were before kuota touched them."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    saved = annotations.get(names.ORIGINAL_ANNOTATION)
    if saved:
        try:
            data = json.loads(saved)
            if isinstance(data, dict):
                return data
        except ValueError:
            pass
    spec = job.get("spec") or {}
    pod = ((spec.get("template") or {}).get("spec")) or {}
    return {"nodeSelector": dict(pod.get("nodeSelector") or {}),
            "tolerations": list(pod.get("tolerations") or []),
            "parallelism": spec.get("parallelism")}


def pod_sets(job: Body) -> list[Body]:
    """The Job's one pod set, as the user asked it (not as kuota started it)."""
    meta = job["metadata"]
    spec = job.get("spec") or {}
    template = json.loads(json.dumps(spec.get("template") or {}))
    original = original_fields(job)
    pod = template.setdefault("spec", {})
    pod["nodeSelector"] = original["nodeSelector"]
    pod["tolerations"] = original["tolerations"]
    for key in ("nodeSelector", "tolerations"):
        if not pod[key]:
            del pod[key]
    tmeta = template.get("metadata") or {}
    template["metadata"] = {k: tmeta[k] for k in ("labels", "annotations") if tmeta.get(k)}
    # Counted from the parallelism the user asked for, not one kuota set for partial admission.
    count = pod_count(dict(job, spec=dict(spec, parallelism=original.get("parallelism"))))
    pod_set: Body = {"name": POD_SET, "count": count, "template": template}
    min_count = names.first_of(meta.get("annotations"), names.MIN_PARALLELISM_ANNOTATIONS)
    if min_count is not None and min_count.isdigit() and 0 < int(min_count) < count:
        pod_set["minCount"] = int(min_count)
    return [pod_set]


def workload_for(job: Body, *, queue: str, priority: int,
                 priority_class: str | contract.PriorityClass | None) -> Body:
    """The Workload manifest standing for ``job``."""
    return contract.workload_for(JOB, job, queue=queue, priority=priority,
                                 priority_class=priority_class)


def asks_topology(job: Body) -> bool:
    """Whether the Job's pod template carries a podset topology annotation."""
    template = (job.get("spec") or {}).get("template") or {}
    return convert.topology_request((template.get("metadata") or {}).get("annotations")
                                    or {}) is not None


def finished(job: Body) -> tuple[str, str] | None:
    """("Succeeded" | "Failed", message) once the Job is complete or failed."""
    return contract.ended_by(job, "Complete", "Failed", what="Job")


def pods_ready(job: Body) -> bool:
    """Every pod the Job runs now is ready (or already succeeded), as Kueue counts it."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    want = pod_count(job)
    have = int(status.get("ready") or 0) + int(status.get("succeeded") or 0)
    return not spec.get("suspend") and want > 0 and have >= want


def start_patch(job: Body, admission: Admission, flavors: Mapping[str, FlavorConfig],
                workload_count: int) -> Body | None:
    """The merge patch that starts ``job`` under ``admission``; None if it already runs so."""
    meta = job.get("metadata") or {}
    mark = fingerprint(admission)
    spec = job.get("spec") or {}
    if (meta.get("annotations") or {}).get(names.ADMISSION_ANNOTATION) == mark \
            and spec.get("suspend") is False:
        return None
    original = original_fields(job)
    labels, tolerations = node_constraints(admission, flavors, POD_SET)
    selector = dict(original["nodeSelector"])
    selector.update(labels)
    current = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    selector_patch: Body = {k: None for k in current if k not in selector}
    selector_patch.update(selector)
    merged = list(original["tolerations"])
    merged += [t for t in tolerations if t not in merged]
    pod: Body = {"nodeSelector": selector_patch or None, "tolerations": merged or None}
    count = next((ps.count for ps in admission.pod_sets if ps.name == POD_SET), workload_count)
    template: Body = {"spec": pod}
    if asks_topology(job):
        # Its pods are created carrying the label, so any replica's webhook gates them.
        template["metadata"] = {"labels": {names.TOPOLOGY_LABEL: "true"}}
    patch_spec: Body = {"suspend": False, "template": template}
    if count != workload_count:
        patch_spec["parallelism"] = count
    return {
        "metadata": {"annotations": {names.ADMISSION_ANNOTATION: mark,
                                     names.ORIGINAL_ANNOTATION: json.dumps(original,
                                                                           sort_keys=True)}},
        "spec": patch_spec,
    }


def pods_left(job: Body) -> int:
    """Pods the Job controller still counts: active, and terminating (tracked from 1.29)."""
    status = job.get("status") or {}
    return int(status.get("active") or 0) + int(status.get("terminating") or 0)


def stopped(job: Body) -> bool:
    """Suspended, and none of its pods is left running or terminating."""
    return (job.get("spec") or {}).get("suspend") is True and pods_left(job) == 0


def _reset() -> Write:
    return Write("reset", {"status": {"startTime": None}}, "status")


def start_write(job: Body, admission: Admission, flavors: Mapping[str, FlavorConfig],
                workload_count: int) -> Write | None:
    """The next write that starts ``job`` under ``admission``; None once it runs so (or
    while the pods of its previous run are still going)."""
    patch = start_patch(job, admission, flavors, workload_count)
    if patch is None:
        return None
    if (job.get("spec") or {}).get("suspend") is not True:
        # Running under another admission (or started by someone else): its template
        # cannot change before it is suspended.
        return Write("suspend", {"spec": {"suspend": True}})
    if pods_left(job):
        return None
    if (job.get("status") or {}).get("startTime"):
        return _reset()
    return Write("start", patch)


def stop_write(job: Body) -> Write | None:
    """The next write towards a stopped ``job``; None once it is stopped and restored (or
    while the Job controller still stops its pods)."""
    spec = job.get("spec") or {}
    if spec.get("suspend") is not True:
        return Write("suspend", {"spec": {"suspend": True}})
    if pods_left(job):
        return None
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    if names.ORIGINAL_ANNOTATION not in annotations \
            and names.ADMISSION_ANNOTATION not in annotations:
        return None  # never started by kuota: nothing to put back
    if (job.get("status") or {}).get("startTime"):
        return _reset()
    return Write("restore", restore_patch(job))


def restore_patch(job: Body) -> Body:
    """The merge patch putting back what :func:`start_patch` changed (and its annotations)."""
    spec = job.get("spec") or {}
    original = original_fields(job)
    current = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    selector: Body = {k: None for k in current if k not in original["nodeSelector"]}
    selector.update(original["nodeSelector"])
    template: Body = {"spec": {"nodeSelector": selector or None,
                               "tolerations": original["tolerations"] or None}}
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if names.TOPOLOGY_LABEL in (template_labels or {}):
        template["metadata"] = {"labels": {names.TOPOLOGY_LABEL: None}}
    patch_spec: Body = {"suspend": True, "template": template}
    if original.get("parallelism") is not None:
        patch_spec["parallelism"] = original["parallelism"]
    return {"metadata": {"annotations": {names.ORIGINAL_ANNOTATION: None,
                                         names.ADMISSION_ANNOTATION: None}},
            "spec": patch_spec}


class JobKind:
    """Jobs, as the workload-kind contract has them (:mod:`kuota.operator.kinds.contract`)."""

    kind = "Job"
    res = names.JOBS
    prefix = "job"
    runs_through: str | None = None

    def pod_sets(self, obj: Body) -> list[Body]:
        return pod_sets(obj)

    def start_write(self, obj: Body, admission: Admission,
                    flavors: Mapping[str, FlavorConfig]) -> Write | None:
        return start_write(obj, admission, flavors, pod_sets(obj)[0]["count"])

    def stop_write(self, obj: Body) -> Write | None:
        return stop_write(obj)

    def suspended(self, obj: Body) -> bool:
        return (obj.get("spec") or {}).get("suspend") is True

    def suspend_patch(self) -> Body:
        return {"spec": {"suspend": True}}

    def refusal(self, obj: Body) -> str | None:
        return None

    def stopped(self, obj: Body) -> bool:
        return stopped(obj)

    def finished(self, obj: Body) -> tuple[str, str] | None:
        return finished(obj)

    def pods_ready(self, obj: Body) -> bool:
        return pods_ready(obj)


JOB = JobKind()
