"""JobSets (``jobset.x-k8s.io/v1alpha2``) as workloads.

A JobSet runs groups of identical Jobs (``spec.replicatedJobs``: each a Job
template and how many ``replicas`` of it); it is the base of distributed
training (a driver and workers, or a leader and a slice of workers), and
Kubeflow's Trainer runs through it. As in Kueue, each replicated Job is one
pod set, named after it, of ``replicas × min(parallelism, completions)``
pods, its template the Job template's pod template. The whole JobSet is
one gang: it is admitted whole or not at all.

``spec.suspend`` suspends it: the JobSet controller creates its Jobs
suspended (so no pod) and, while it is suspended, lets the pod templates
change — which is how each role gets its flavor. It counts its child Jobs
in ``status.replicatedJobsStatus`` (``active``, ``ready``, ``succeeded``);
an evicted JobSet is stopped once none of its Jobs is active, and it ends
with the condition ``Completed`` or ``Failed``.
"""

from __future__ import annotations

from typing import Any

from kuota.operator.kinds.contract import ended_by
from kuota.operator.kinds.templated import Role, TemplatedKind, job_pods
from kuota.operator.names import Res

Body = dict[str, Any]

JOBSETS = Res("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet", True)


class JobSetKind(TemplatedKind):
    kind = "JobSet"
    res = JOBSETS
    prefix = "jobset"

    def roles(self, obj: Body) -> list[Role]:
        out = []
        for replicated in (obj.get("spec") or {}).get("replicatedJobs") or []:
            job_spec = replicated.setdefault("template", {}).setdefault("spec", {})
            replicas = int(replicated.get("replicas", 1))
            out.append(Role(str(replicated.get("name")), replicas * job_pods(job_spec),
                            job_spec.setdefault("template", {})))
        return out

    def pods_left(self, obj: Body) -> int:
        return sum(int(s.get("active") or 0)
                   for s in (obj.get("status") or {}).get("replicatedJobsStatus") or [])

    def finished(self, obj: Body) -> tuple[str, str] | None:
        return ended_by(obj, "Completed", "Failed", what="JobSet")

    def pods_ready(self, obj: Body) -> bool:
        """Every replicated Job's replicas ready or succeeded (Kueue counts Jobs here)."""
        if self.suspended(obj):
            return False
        replicas = sum(int(r.get("replicas", 1))
                       for r in (obj.get("spec") or {}).get("replicatedJobs") or [])
        ready = sum(int(s.get("ready") or 0) + int(s.get("succeeded") or 0)
                    for s in (obj.get("status") or {}).get("replicatedJobsStatus") or [])
        return replicas > 0 and ready >= replicas


JOBSET = JobSetKind()
