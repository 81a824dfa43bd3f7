"""What the API server checks on a Job write: ``spec.managedBy`` and the status rules.

Since Kubernetes 1.32 (``JobManagedBy`` beta, on by default; GA and locked on
in 1.35) the Job registry validates every status write against rules written
for external controllers — a Job may name one in ``spec.managedBy``, and the
built-in Job controller then leaves it alone, so the server must keep such a
controller honest. The rules are the same whatever ``managedBy`` says: a
status write to a Job that the built-in controller runs is held to them too
(``pkg/registry/batch/job/strategy.go``, ``getStatusValidationOptions``; the
checks in ``pkg/apis/batch/validation``; identical in 1.34 and 1.36). So a
controller that copies a status onto a Job must write what the 1.31+ Job
controller writes itself:

* a Job finishes in two steps — ``SuccessCriteriaMet`` before ``Complete``,
  ``FailureTarget`` before ``Failed`` (both may land in one write);
* ``Complete`` needs ``completionTime``, and ``completionTime`` needs
  ``Complete`` (a failed Job has none); ``completionTime`` is not before
  ``startTime`` and never changes once set;
* a finished Job has ``startTime``, no ``active``, ``terminating`` or
  uncounted pods; ``ready`` never exceeds ``active``;
* ``Complete``/``Failed``/``FailureTarget``/``SuccessCriteriaMet`` once true
  stay true; ``SuccessCriteriaMet`` never joins ``Failed`` or ``FailureTarget``,
  ``Complete`` never joins ``Failed`` or ``FailureTarget``;
* ``succeeded`` and ``failed`` never decrease (``succeeded`` may for an
  Indexed Job whose completions equal its parallelism: it can be scaled down);
* ``startTime`` of a running (unsuspended) Job is not changed once set.

Like the real server, most rules are checked only when a field they read
changed, so a write that leaves an old violation alone passes (the server lets
a controller repair a status step by step). Index bookkeeping
(``completedIndexes``, ``failedIndexes``) is not emulated.

``spec.managedBy`` is a domain-prefixed path of at most 63 characters and is
immutable.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]

#: The value that means "the built-in Job controller" (the same as leaving it out).
JOB_CONTROLLER = "kubernetes.io/job-controller"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")
_TERMINAL = ("Failed", "Complete", "FailureTarget")


def problems(job: Obj, old: Obj | None) -> list[str]:
    """Why the server refuses this Job (create when ``old`` is None, else update)."""
    found = _managed_by(job, old)
    new_status, old_status = job.get("status") or {}, (old or {}).get("status") or {}
    if new_status != old_status:
        found += _status(job, old or {})
    return found


def _managed_by(job: Obj, old: Obj | None) -> list[str]:
    value = (job.get("spec") or {}).get("managedBy")
    found = []
    if value is not None:
        host, slash, path = str(value).partition("/")
        if not slash or not host or not path:
            found.append(f'spec.managedBy: Invalid value: "{value}": must be a '
                         'domain-prefixed path (such as "acme.io/foo")')
        elif not _SUBDOMAIN.match(host) or len(host) > 253:
            found.append(f'spec.managedBy: Invalid value: "{host}": a lowercase RFC 1123 '
                         "subdomain must consist of lower case alphanumeric characters, '-' "
                         "or '.', and must start and end with an alphanumeric character")
        elif not _HTTP_PATH.match(path):
            found.append(f'spec.managedBy: Invalid value: "{path}": Invalid path')
        if len(str(value)) > 63:
            found.append("spec.managedBy: Too long: may not be more than 63 bytes")
    if old is not None and (old.get("spec") or {}).get("managedBy") != value:
        shown = "null" if value is None else f'"{value}"'
        found.append(f"spec.managedBy: Invalid value: {shown}: field is immutable")
    return found


def is_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _finished(status: Mapping[str, Any]) -> bool:
    return is_true(status, "Complete") or is_true(status, "Failed")


def _time(value: Any) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _field(status: Mapping[str, Any], name: str) -> Any:
    """A status field as the server compares it: the counters are plain integers (absent
    is 0), the rest are pointers (absent differs from 0)."""
    value = status.get(name)
    return int(value or 0) if name in ("active", "succeeded", "failed") else value


def _uncounted(status: Mapping[str, Any]) -> list[Any]:
    pods = status.get("uncountedTerminatedPods") or {}
    return list(pods.get("succeeded") or []) + list(pods.get("failed") or [])


def _status(job: Obj, old: Obj) -> list[str]:
    """The status rules (``validateJobStatus`` and ``ValidateJobStatusUpdate``)."""
    spec, new, was = job.get("spec") or {}, job.get("status") or {}, old.get("status") or {}
    found: list[str] = []

    def changed(*fields: str) -> bool:
        return any(_field(new, f) != _field(was, f) for f in fields)

    def flipped(kind: str) -> bool:
        return is_true(new, kind) != is_true(was, kind)

    def invalid(where: str, why: str) -> None:
        found.append(f"status.{where}: Invalid value: {why}")

    for field in ("active", "succeeded", "failed", "ready", "terminating"):
        if int(new.get(field) or 0) < 0:
            invalid(field, f"{new[field]}: must be greater than or equal to 0")
    uids = _uncounted(new)
    if any(not uid for uid in uids) or len(set(uids)) != len(uids):
        invalid("uncountedTerminatedPods", "each pod uid must be given once")

    complete, failed = is_true(new, "Complete"), is_true(new, "Failed")
    finished = complete or failed
    finish_changed = _finished(new) != _finished(was)
    start, end = _time(new.get("startTime")), _time(new.get("completionTime"))
    if complete and failed and (flipped("Complete") or flipped("Failed")):
        invalid("conditions", "cannot set Complete=True and Failed=true conditions")
    if complete and is_true(new, "FailureTarget") \
            and (flipped("Complete") or flipped("FailureTarget")):
        invalid("conditions", "cannot set Complete=True and FailureTarget=true conditions")
    if flipped("Complete") or changed("completionTime"):
        if end is not None and not complete:
            invalid("completionTime", "cannot set completionTime when there is no "
                    "Complete=True condition")
        if end is None and complete:
            found.append("status.completionTime: Required value: completionTime is required "
                         "for Complete jobs")
    if changed("startTime", "completionTime") and start and end and end < start:
        invalid("completionTime", "must be equal to or after `startTime`")
    if flipped("Failed") and failed and not is_true(new, "FailureTarget"):
        invalid("conditions", "cannot set Failed=True condition without the "
                "FailureTarget=true condition")
    if (flipped("Complete") or flipped("SuccessCriteriaMet")) and complete \
            and not is_true(new, "SuccessCriteriaMet"):
        invalid("conditions", "cannot set Complete=True condition without the "
                "SuccessCriteriaMet=true condition")
    if (finish_changed or changed("active")) and finished and int(new.get("active") or 0) > 0:
        invalid("active", "active>0 is invalid for finished job")
    suspended_empty = spec.get("suspend") is True and spec.get("completions") == 0
    if (finish_changed or changed("startTime")) and finished and start is None \
            and not suspended_empty:
        found.append("status.startTime: Required value: startTime is required for finished "
                     "job")
    if (finish_changed or changed("uncountedTerminatedPods")) and finished and uids:
        invalid("uncountedTerminatedPods", "must be empty for finished job")
    if (finish_changed or changed("terminating")) and finished \
            and int(new.get("terminating") or 0) > 0:
        invalid("terminating", "terminating>0 is invalid for finished job")
    if changed("ready", "active") and new.get("ready") is not None \
            and int(new["ready"]) > int(new.get("active") or 0):
        invalid("ready", "cannot set more ready pods than active")
    criteria = is_true(new, "SuccessCriteriaMet")
    if criteria and failed:
        invalid("conditions", "cannot set SuccessCriteriaMet=True and Failed=true conditions")
    if criteria and is_true(new, "FailureTarget"):
        invalid("conditions", "cannot set SuccessCriteriaMet=True and FailureTarget=true "
                "conditions")
    if spec.get("successPolicy") is not None and complete and not criteria:
        invalid("conditions", "cannot set Complete=True for Job with SuccessPolicy unless "
                "SuccessCriteriaMet=True")

    # transitions from the stored status
    for kind in _TERMINAL:
        if is_true(was, kind) and not is_true(new, kind):
            invalid("conditions", f"cannot disable the terminal {kind}=True condition")
    if int(new.get("failed") or 0) < int(was.get("failed") or 0):
        invalid("failed", f"{new.get('failed') or 0}: cannot decrease the failed counter")
    scalable = spec.get("completionMode") == "Indexed" \
        and spec.get("completions") == spec.get("parallelism")
    if not scalable and int(new.get("succeeded") or 0) < int(was.get("succeeded") or 0):
        invalid("succeeded", f"{new.get('succeeded') or 0}: cannot decrease the succeeded "
                "counter")
    old_end = _time(was.get("completionTime"))
    if end is not None and old_end is not None and end != old_end:
        invalid("completionTime", f"{new['completionTime']}: field is immutable")
    resuming = is_true(was, "Suspended") and any(
        c.get("type") == "Suspended" and c.get("status") == "False"
        for c in new.get("conditions") or [])
    if was.get("startTime") and _time(was.get("startTime")) != start \
            and spec.get("suspend") is not True and not resuming:
        found.append("status.startTime: Invalid value: field is immutable for unsuspended "
                     "job once set")
    if is_true(was, "SuccessCriteriaMet") and not criteria:
        invalid("conditions", "cannot disable the SuccessCriteriaMet=True condition")
    if is_true(was, "Complete") and not is_true(was, "SuccessCriteriaMet") and criteria:
        invalid("conditions", "cannot set SuccessCriteriaMet=True for Job already has "
                "Complete=true conditions")
    return found
