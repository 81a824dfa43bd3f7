"""Kinds whose pod sets are pod templates inside one suspendable object.

Most kinds kuota queues (JobSet, and the training and serving kinds after
it) are one object with a ``suspend`` field and one pod template per role.
:class:`TemplatedKind` fills in the contract
(:class:`~kuota.operator.kinds.contract.WorkloadKind`) for all of them from
two things a kind says: where its suspend field is, and its *roles* — each
role's pod-set name, pod count and the pod template it runs.

Starting runs in two steps, each one write read again from the object as
last seen: an object running under another admission (or unsuspended by
someone else) is suspended first; once its controller reports no pod left
(:meth:`TemplatedKind.pods_left`), each role's template gets the flavors'
node labels merged into its ``nodeSelector`` and their tolerations
appended, and the object is unsuspended — with what the templates held
before saved in an annotation, so that stopping puts it back. The writes
are JSON merge patches computed as the difference between the object and
what it should be (:func:`~kuota.operator.kinds.contract.merge_patch`):
a role list (JobSet's ``replicatedJobs``) is written whole, a map key kuota
added is removed with a null.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kuota.operator import names
from kuota.operator.kinds.contract import Write, fingerprint, merge_patch, pod_set_infos
from kuota.operator.names import Res
from quota import convert
from quota.config import FlavorConfig
from quota.workload import Admission

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Role:
    """One pod set of an object: its name, how many pods, and its pod template (the
    very dict inside the object, so a copy of the object can be changed through it)."""

    name: str
    count: int
    template: Body


class TemplatedKind:
    """A suspendable object with a pod template per role; subclasses say where they are."""

    kind: str
    res: Res
    prefix: str
    #: Where the suspend field is, from the object's top.
    suspend_path: tuple[str, ...] = ("spec", "suspend")
    runs_through: str | None = None

    def roles(self, obj: Body) -> list[Role]:
        raise NotImplementedError

    def pods_left(self, obj: Body) -> int:
        """Pods (or child objects) of the object still running or terminating."""
        raise NotImplementedError

    def finished(self, obj: Body) -> tuple[str, str] | None:
        raise NotImplementedError

    def pods_ready(self, obj: Body) -> bool:
        raise NotImplementedError

    # -- the contract ------------------------------------------------------------------------
    def suspended(self, obj: Body) -> bool:
        value: Any = obj
        for key in self.suspend_path:
            value = (value or {}).get(key) if isinstance(value, dict) else None
        return value is True

    def stopped(self, obj: Body) -> bool:
        return self.suspended(obj) and self.pods_left(obj) == 0

    def pod_sets(self, obj: Body) -> list[Body]:
        original = self._restored(obj)
        out = []
        for role in self.roles(original):
            template = copy.deepcopy(role.template)
            tmeta = template.get("metadata") or {}
            template["metadata"] = {k: tmeta[k] for k in ("labels", "annotations")
                                    if tmeta.get(k)}
            out.append({"name": role.name, "count": role.count, "template": template})
        return out

    def start_write(self, obj: Body, admission: Admission,
                    flavors: Mapping[str, FlavorConfig]) -> Write | None:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if annotations.get(names.ADMISSION_ANNOTATION) == fingerprint(admission) \
                and not self.suspended(obj):
            return None
        if not self.suspended(obj):
            # Running under another admission (or started by someone else): its templates
            # are changed only while it is suspended.
            return Write("suspend", self.suspend_patch())
        if self.pods_left(obj):
            return None
        return Write("start", self._patch(obj, self.started(obj, admission, flavors)))

    def started(self, obj: Body, admission: Admission,
                flavors: Mapping[str, FlavorConfig]) -> Body:
        """A copy of ``obj`` as it runs under ``admission``: each role's template with its
        flavors' node labels and tolerations, unsuspended, with what the templates held
        before saved in an annotation (also what a member cluster is sent, under
        multi-cluster dispatch)."""
        infos, mark = pod_set_infos(admission, flavors), fingerprint(admission)
        wanted = self._restored(obj)
        saved = {}
        for role in self.roles(wanted):
            spec = role.template.setdefault("spec", {})
            saved[role.name] = {"nodeSelector": dict(spec.get("nodeSelector") or {}),
                                "tolerations": list(spec.get("tolerations") or [])}
            info = infos.get(role.name)
            if info is None:
                continue
            if info.node_selector:
                spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}),
                                        **info.node_selector}
            tolerations = list(spec.get("tolerations") or [])
            tolerations += [t for t in info.tolerations if t not in tolerations]
            if tolerations:
                spec["tolerations"] = tolerations
            if convert.topology_request(
                    (role.template.get("metadata") or {}).get("annotations") or {}) is not None:
                # Its pods are created carrying the label, so the webhook gates them.
                role.template.setdefault("metadata", {}).setdefault(
                    "labels", {})[names.TOPOLOGY_LABEL] = "true"
        self._set_suspend(wanted, False)
        meta = wanted.setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               names.ADMISSION_ANNOTATION: mark,
                               names.ORIGINAL_ANNOTATION: json.dumps(saved, sort_keys=True)}
        return wanted

    def stop_write(self, obj: Body) -> Write | None:
        if not self.suspended(obj):
            return Write("suspend", self.suspend_patch())
        if self.pods_left(obj):
            return None
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if names.ORIGINAL_ANNOTATION not in annotations \
                and names.ADMISSION_ANNOTATION not in annotations:
            return None  # never started by kuota: nothing to put back
        return Write("restore", self._patch(obj, self._restored(obj)))

    # -- helpers -----------------------------------------------------------------------------
    def _restored(self, obj: Body) -> Body:
        """A copy of ``obj`` as it was before kuota started it: each role's nodeSelector
        and tolerations put back, kuota's labels and annotations gone."""
        out = copy.deepcopy(obj)
        meta = out.get("metadata") or {}
        annotations = dict(meta.get("annotations") or {})
        saved = _saved(annotations.pop(names.ORIGINAL_ANNOTATION, None))
        annotations.pop(names.ADMISSION_ANNOTATION, None)
        if "metadata" in out:
            out["metadata"] = {**meta, "annotations": annotations}
        for role in self.roles(out):
            labels = (role.template.get("metadata") or {}).get("labels")
            if labels:
                labels.pop(names.TOPOLOGY_LABEL, None)
            original = saved.get(role.name)
            if original is None:
                continue
            spec = role.template.setdefault("spec", {})
            for key in ("nodeSelector", "tolerations"):
                if original.get(key):
                    spec[key] = original[key]
                else:
                    spec.pop(key, None)
        return out

    def _patch(self, obj: Body, wanted: Body) -> Body:
        patch: Body = merge_patch(obj, wanted) or {}
        patch.pop("status", None)
        return patch

    def _set_suspend(self, obj: Body, value: bool) -> None:
        node = obj
        for key in self.suspend_path[:-1]:
            node = node.setdefault(key, {})
        node[self.suspend_path[-1]] = value

    def suspend_patch(self) -> Body:
        patch: Body = {}
        self._set_suspend(patch, True)
        return patch

    def refusal(self, obj: Body) -> str | None:
        return None


def _saved(raw: str | None) -> dict[str, Body]:
    """The templates' fields saved at start (role -> nodeSelector, tolerations)."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} \
        if isinstance(data, dict) else {}


def job_pods(job_spec: Body) -> int:
    """Pods a Job spec runs at once: ``min(parallelism, completions)``, parallelism 1 when
    unset (as Kueue counts a Job's pods)."""
    raw = job_spec.get("parallelism")
    parallelism = 1 if raw is None else int(raw)
    completions = job_spec.get("completions")
    return parallelism if completions is None else min(parallelism, int(completions))
