"""What an update of a built-in object may change, as the real validation decides.

Facts from ``pkg/apis/core/validation`` (``ValidatePodUpdate``) and
``pkg/apis/batch/validation`` with ``pkg/registry/batch/job/strategy.go``,
Kubernetes 1.34 (1.36 differences noted):

**Pods.** The spec is immutable but for container images,
``activeDeadlineSeconds`` (set, or lowered), tolerations (only added; an
existing one may change only its ``tolerationSeconds``) and scheduling
gates (only removed). While the pod *was* gated (the stored pod has a
gate), ``nodeSelector`` may get new keys — never a changed or removed one —
and required node-affinity terms may get new requirements. Anything else is
422. So a gated pod whose ``nodeSelector`` already has a key with another
value can never be given that key: ungating it that way fails every time.

**Jobs.** ``spec.template`` is immutable, except — on a Job that is
suspended *and* has no ``status.startTime`` (never started, or reset) — its
scheduling directives: ``nodeSelector``, ``tolerations``, node affinity,
scheduling gates, and the template's labels and annotations. The Job
controller sets ``startTime`` when a Job starts and, before 1.36, never
clears it on suspend; whoever suspends a Job that ran must clear it through
the ``status`` subresource before changing those fields. (1.36 enables
``MutableSchedulingDirectivesForSuspendedJobs`` by default: the controller
clears ``startTime`` when it marks the Job suspended, and the directives are
also mutable on a suspended Job with ``JobSuspended=True`` once no pod is
active. The emulator keeps the 1.34 rule, which is the stricter one.)
``completionMode`` is immutable. A status write may change a set
``startTime`` only while the Job is suspended (or resuming).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .patches import clone

Obj = dict[str, Any]
_POD_UPDATABLE = ("spec.containers[*].image, spec.initContainers[*].image, "
                  "spec.activeDeadlineSeconds, spec.tolerations (only additions to existing "
                  "tolerations), spec.schedulingGates (only deletions), and, while gated, "
                  "additions to spec.nodeSelector and spec.affinity.nodeAffinity")


def check(resource: tuple[str, str], new: Obj, old: Obj) -> list[str]:
    """Why this update of ``resource`` (``(group, plural)``) is invalid; [] if it is not."""
    rule = _RULES.get(resource)
    return rule(new, old) if rule is not None else []


def _normal(value: Any) -> Any:
    """Drop empty values, as the server's semantic equality treats nil and empty alike."""
    if isinstance(value, Mapping):
        out = {k: _normal(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _put(target: Obj, key: str, value: Any) -> None:
    if value is None:
        target.pop(key, None)
    else:
        target[key] = clone(value)


# -- pods ----------------------------------------------------------------------------------------

def _pod(new: Obj, old: Obj) -> list[str]:
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    if _normal(spec) == _normal(before):
        return []
    problems = _tolerations(spec, before) + _gates(spec, before)
    munged = clone(spec)
    for key in ("containers", "initContainers"):
        mine, theirs = munged.get(key) or [], before.get(key) or []
        if len(mine) == len(theirs):
            for container, previous in zip(mine, theirs, strict=True):
                _put(container, "image", previous.get("image"))
    problems += _deadline(spec, before)
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _put(munged, key, before.get(key))
    if before.get("schedulingGates"):
        problems += _gated(munged, before)
    if _normal(munged) != _normal(before):
        problems.append(f"spec: Forbidden: pod updates may not change fields other than "
                        f"{_POD_UPDATABLE}")
    return problems


def _tolerations(spec: Obj, before: Obj) -> list[str]:
    added = spec.get("tolerations") or []
    for toleration in before.get("tolerations") or []:
        kept = {k: v for k, v in toleration.items() if k != "tolerationSeconds"}
        if not any({k: v for k, v in t.items() if k != "tolerationSeconds"} == kept
                   for t in added):
            return ["spec.tolerations: Forbidden: existing toleration can not be modified "
                    "except its tolerationSeconds"]
    return []


def _gates(spec: Obj, before: Obj) -> list[str]:
    known = {g.get("name") for g in before.get("schedulingGates") or []}
    return [f"spec.schedulingGates[{i}].name: Forbidden: only deletion is allowed, but found "
            f"new scheduling gate '{g.get('name')}'"
            for i, g in enumerate(spec.get("schedulingGates") or []) if g.get("name") not in known]


def _deadline(spec: Obj, before: Obj) -> list[str]:
    new, old = spec.get("activeDeadlineSeconds"), before.get("activeDeadlineSeconds")
    if new is None and old is not None:
        return ["spec.activeDeadlineSeconds: Invalid value: null: must not update from a "
                "positive integer to nil value"]
    if new is not None and (new < 0 or (old is not None and new > old)):
        return [f"spec.activeDeadlineSeconds: Invalid value: {new}: must be less than or "
                "equal to previous value"]
    return []


def _gated(munged: Obj, before: Obj) -> list[str]:
    """A gated pod's nodeSelector and node affinity: additions only (munged in place)."""
    problems = []
    selector, previous = munged.get("nodeSelector") or {}, before.get("nodeSelector") or {}
    if selector != previous:
        if any(selector.get(k) != v for k, v in previous.items()):
            problems.append(f"spec.nodeSelector: Invalid value: {selector}: only additions to "
                            "spec.nodeSelector are allowed (no mutations or deletions)")
        _put(munged, "nodeSelector", before.get("nodeSelector"))
    affinity = munged.get("affinity") or {}
    new_node = affinity.get("nodeAffinity")
    old_node = (before.get("affinity") or {}).get("nodeAffinity")
    if _normal(new_node) != _normal(old_node):
        problems += _node_affinity(new_node or {}, old_node or {})
        rest = {k: v for k, v in affinity.items() if k != "nodeAffinity"}
        if old_node is not None:
            rest["nodeAffinity"] = old_node
        _put(munged, "affinity", rest or None)
    return problems


def _node_affinity(new: Obj, old: Obj) -> list[str]:
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    path = f"spec.affinity.nodeAffinity.{key}.nodeSelectorTerms"
    old_terms = (old.get(key) or {}).get("nodeSelectorTerms") or []
    new_terms = (new.get(key) or {}).get("nodeSelectorTerms") or []
    if not old_terms:
        return []
    if len(new_terms) != len(old_terms):
        return [f"{path}: Invalid value: no additions/deletions to non-empty "
                "NodeSelectorTerms list are allowed"]
    problems = []
    for i, (term, previous) in enumerate(zip(new_terms, old_terms, strict=True)):
        for field in ("matchExpressions", "matchFields"):
            had, has = previous.get(field) or [], term.get(field) or []
            if has[:len(had)] != had or (not previous.get("matchExpressions")
                                         and not previous.get("matchFields") and has):
                problems.append(f"{path}[{i}]: Invalid value: only additions are allowed "
                                "(no mutations or deletions)")
                break
    return problems


# -- jobs ----------------------------------------------------------------------------------------

#: Template fields a suspended, never-started Job may change (its scheduling directives).
_DIRECTIVES = (("metadata", "labels"), ("metadata", "annotations"), ("spec", "nodeSelector"),
               ("spec", "tolerations"), ("spec", "schedulingGates"))


def _job(new: Obj, old: Obj) -> list[str]:
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    problems = []
    if spec.get("completionMode") != before.get("completionMode"):
        problems.append(f"spec.completionMode: Invalid value: {spec.get('completionMode')!r}: "
                        "field is immutable")
    template, previous = spec.get("template") or {}, before.get("template") or {}
    if _normal(template) != _normal(previous):
        mutable = before.get("suspend") is True and not (old.get("status") or {}).get("startTime")
        allowed = _with_directives(previous, template) if mutable else previous
        if _normal(template) != _normal(allowed):
            why = "" if mutable else (" (scheduling directives may change only while the Job "
                                      "is suspended and status.startTime is unset)")
            problems.append(f"spec.template: Invalid value: the pod template: field is "
                            f"immutable{why}")
    return problems + _start_time(new, old)


def _with_directives(previous: Obj, template: Obj) -> Obj:
    """``previous`` with ``template``'s scheduling directives: what may differ."""
    out = clone(previous)
    for part, key in _DIRECTIVES:
        _put(out.setdefault(part, {}), key, (template.get(part) or {}).get(key))
    new_affinity = (template.get("spec") or {}).get("affinity") or {}
    affinity = dict(out["spec"].get("affinity") or {})
    _put(affinity, "nodeAffinity", new_affinity.get("nodeAffinity"))
    _put(out["spec"], "affinity", affinity or None)
    return out


def _start_time(new: Obj, old: Obj) -> list[str]:
    """A set ``status.startTime`` may change only on a suspended (or resuming) Job."""
    before, after = (old.get("status") or {}), (new.get("status") or {})
    if not before.get("startTime") or after.get("startTime") == before.get("startTime"):
        return []
    if (new.get("spec") or {}).get("suspend") is True:
        return []
    if _suspended(before) == "True" and _suspended(after) == "False":
        return []  # the controller resuming the Job resets it
    return ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]


def _suspended(status: Obj) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Suspended":
            return str(condition.get("status"))
    return None


_RULES: dict[tuple[str, str], Callable[[Obj, Obj], list[str]]] = {
    ("", "pods"): _pod,
    ("batch", "jobs"): _job,
}
