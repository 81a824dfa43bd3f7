"""Kubeflow Trainer v2 TrainJobs (``trainer.kubeflow.org/v1alpha1``) as workloads.

A TrainJob names a training runtime (``spec.runtimeRef``: a
ClusterTrainingRuntime or a TrainingRuntime, which holds a JobSet template)
and says what differs for this job: how many nodes, the resources per node,
image and command, and ``spec.podTemplateOverrides`` (per replicated Job of
the runtime: node selector, tolerations, ...). The Trainer's controller
builds from both a JobSet of the TrainJob's name, controlled by it, and
keeps that JobSet's ``suspend`` the TrainJob's ``spec.suspend``.

**Pod sets.** What the pods will be is decided by the runtime's plugins
(torch, MPI, ...) inside the Trainer's controller. Rather than redo that in
kuota (Kueue runs the Trainer's runtime code in its own process, tying it to
one Trainer release), kuota reads the pod sets from the JobSet the Trainer
built: it exists, suspended, as soon as the suspended TrainJob does, and it
is exactly what will run. One pod set per replicated Job, as for any JobSet
(:mod:`~kuota.operator.kinds.jobsets`), so the Workload looks as Kueue's
does. The operator gives this kind the TrainJob with its JobSet attached
(:func:`~kuota.operator.kinds.contract.with_child`); the Workload is made
once that JobSet is seen.

**Start.** The Trainer refuses a change of ``podTemplateOverrides`` unless the
TrainJob is suspended and its JobSet's Jobs are inactive, so a start is two
writes. First (``prepare``) one override per admitted pod set is appended,
targeting its replicated Job: the flavors' node labels, and the tolerations
its pods are to have. The Trainer applies the overrides in order as
strategic merge patches of the runtime's pod template, where a node
selector merges key by key but a tolerations list replaces the one before
it; so kuota's list is the JobSet template's own (the runtime's and the
user's overrides') with the flavors' added. Then ``spec.suspend`` goes
false, and the Trainer rebuilds its JobSet from both and unsuspends it.

**Stop.** The TrainJob is suspended (the Trainer suspends its JobSet, whose
Jobs' pods go); once no Job is active (``status.jobsStatus``), the overrides
the user wrote, saved in an annotation at the start, are put back. A JobSet
not yet rebuilt since may still hold the tolerations of the admission
before; a toleration only allows a node, the node selector is what places
the pods.

A TrainJob ends with its ``Complete`` or ``Failed`` condition. One whose
``spec.managedBy`` hands it to Kueue's MultiKueue is never run by the
Trainer here: kuota refuses to queue it, naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kuota.operator import names
from kuota.operator.kinds.contract import (
    Write,
    child_of,
    ended_by,
    fingerprint,
    pod_set_infos,
)
from kuota.operator.kinds.jobsets import JOBSET
from kuota.operator.names import Res
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]

TRAINJOBS = Res("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob", True)
#: ``spec.managedBy`` of a TrainJob the Trainer's own controller runs (also its default).
TRAINER_MANAGER = "trainer.kubeflow.org/trainjob-controller"


class TrainJobKind:
    kind = "TrainJob"
    res = TRAINJOBS
    prefix = "trainjob"
    runs_through: str | None = "JobSet"

    def pod_sets(self, obj: Body) -> list[Body]:
        jobset = child_of(obj)
        if jobset is None:
            raise ValueError("the Trainer has not built its JobSet yet")
        return JOBSET.pod_sets(jobset)

    def suspended(self, obj: Body) -> bool:
        return (obj.get("spec") or {}).get("suspend") is True

    def suspend_patch(self) -> Body:
        return {"spec": {"suspend": True}}

    def refusal(self, obj: Body) -> str | None:
        manager = (obj.get("spec") or {}).get("managedBy")
        if manager not in (None, TRAINER_MANAGER):
            return (f"spec.managedBy is {manager!r}: the Trainer leaves such a TrainJob to "
                    f"another controller, so nothing would run it here; leave the field "
                    f"unset to queue it")
        return None

    def stopped(self, obj: Body) -> bool:
        return self.suspended(obj) and _jobs(obj, "active") == 0

    def finished(self, obj: Body) -> tuple[str, str] | None:
        return ended_by(obj, "Complete", "Failed", what="TrainJob")

    def pods_ready(self, obj: Body) -> bool:
        """Every replicated Job's Jobs ready or succeeded, none failed."""
        statuses = (obj.get("status") or {}).get("jobsStatus") or []
        if self.suspended(obj) or not statuses:
            return False
        return all(_count(s, "failed") == 0 and _count(s, "active") + _count(s, "succeeded") > 0
                   and _count(s, "ready") >= _count(s, "active") for s in statuses)

    def start_write(self, obj: Body, admission: Admission,
                    flavors: Mapping[str, FlavorConfig]) -> Write | None:
        mark = fingerprint(admission)
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not self.suspended(obj):
            if annotations.get(names.ADMISSION_ANNOTATION) == mark:
                return None
            # Running under another admission (or started by someone else): its overrides
            # change only while it is suspended.
            return Write("suspend", self.suspend_patch())
        jobset = child_of(obj)
        if _jobs(obj, "active") or jobset is None:
            return None
        original = _original_overrides(obj)
        wanted = original + _admitted_overrides(jobset, admission, flavors)
        if annotations.get(names.ADMISSION_ANNOTATION) != mark \
                or names.ORIGINAL_ANNOTATION not in annotations \
                or ((obj.get("spec") or {}).get("podTemplateOverrides") or []) != wanted:
            saved = json.dumps({"podTemplateOverrides": original}, sort_keys=True)
            return Write("prepare", {
                "metadata": {"annotations": {names.ADMISSION_ANNOTATION: mark,
                                             names.ORIGINAL_ANNOTATION: saved}},
                "spec": {"podTemplateOverrides": wanted or None}})
        return Write("start", {"spec": {"suspend": False}})

    def stop_write(self, obj: Body) -> Write | None:
        if not self.suspended(obj):
            return Write("suspend", self.suspend_patch())
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if _jobs(obj, "active") or (names.ORIGINAL_ANNOTATION not in annotations
                                    and names.ADMISSION_ANNOTATION not in annotations):
            return None  # still stopping, or never started by kuota: nothing to put back
        return Write("restore", {
            "metadata": {"annotations": {names.ADMISSION_ANNOTATION: None,
                                         names.ORIGINAL_ANNOTATION: None}},
            "spec": {"podTemplateOverrides": _original_overrides(obj) or None}})


def _count(status: Body, field: str) -> int:
    return int(status.get(field) or 0)


def _jobs(obj: Body, field: str) -> int:
    """Child Jobs in state ``field`` (``active``, ...) over every replicated Job."""
    return sum(_count(s, field) for s in (obj.get("status") or {}).get("jobsStatus") or [])


def _original_overrides(obj: Body) -> list[Body]:
    """The TrainJob's ``podTemplateOverrides`` as its user wrote them: saved at the start
    when kuota has started it, else as they are."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(names.ORIGINAL_ANNOTATION)
    if raw:
        try:
            saved = json.loads(raw)
        except ValueError:
            saved = None
        if isinstance(saved, dict) and isinstance(saved.get("podTemplateOverrides"), list):
            return list(saved["podTemplateOverrides"])
    return list((obj.get("spec") or {}).get("podTemplateOverrides") or [])


def _admitted_overrides(jobset: Body, admission: Admission,
                        flavors: Mapping[str, FlavorConfig]) -> list[Body]:
    """One override per admitted pod set whose flavors place it: their node labels, and
    the JobSet template's tolerations with theirs added."""
    infos = pod_set_infos(admission, flavors)
    out = []
    for replicated in (jobset.get("spec") or {}).get("replicatedJobs") or []:
        name = str(replicated.get("name"))
        info = infos.get(name)
        if info is None or not (info.node_selector or info.tolerations):
            continue
        spec: Body = {}
        if info.node_selector:
            spec["nodeSelector"] = dict(info.node_selector)
        if info.tolerations:
            template = ((replicated.get("template") or {}).get("spec") or {}).get("template")
            own = list(((template or {}).get("spec") or {}).get("tolerations") or [])
            spec["tolerations"] = own + [t for t in info.tolerations if t not in own]
        out.append({"targetJobs": [{"name": name}], "spec": spec})
    return out


TRAINJOB = TrainJobKind()
