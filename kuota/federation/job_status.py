"""A member's Job status, copied home as a status the manager's API server accepts (pure).

Under multi-cluster dispatch the local Job never runs; its copy runs in a
member, and :func:`status_patch` makes the merge patch that shows the copy's
progress and outcome on the local Job (written through its ``status``
subresource), where the operator's usual Job handling finishes the Workload.

**Who writes the local Job's status.** A Job created into a ClusterQueue with
a ``kuota.dev/multicluster`` check carries ``spec.managedBy:
kuota.dev/multicluster`` (:mod:`.managed_by`, set by kuota's webhook at
creation; the field is immutable), so the manager's own Job controller skips
it and kuota is the only writer — as Kueue's MultiKueue does with
``kueue.x-k8s.io/multikueue``. A Job without it is run by the manager's Job
controller, which rewrites ``active``/``ready`` from the pods it sees (none)
and would finish the Job itself from copied counts; for such a Job (one
dispatched before this rule, see ``docs/multicluster.md``) only the outcome is
copied, in one write, once the copy has finished — the controller leaves a
finished Job alone.

**What the API server accepts.** Since Kubernetes 1.32 (``JobManagedBy``
on by default, locked on from 1.35) every status write to a Job is held to the
rules the 1.31+ Job controller follows, whoever manages the Job (checked in
the 1.34 and 1.36 sources). A member's status is therefore not copied as it
is, but rebuilt:

* a finished copy finishes the local Job in one write: ``SuccessCriteriaMet``
  with ``Complete``, or ``FailureTarget`` with ``Failed`` (the member's own
  interim condition when it wrote one — a 1.31+ member does — else one made
  from the terminal condition; older members and pools write only the terminal
  one); ``startTime`` (required once finished); ``completionTime`` with
  ``Complete`` only, never before ``startTime``; no ``active``, ``ready``,
  ``terminating`` or uncounted pods;
* ``succeeded`` and ``failed`` never decrease: a workload moved to another
  member starts a fresh copy counting from zero, so the local Job keeps the
  highest count it has shown;
* ``ready`` never exceeds ``active``;
* a finished local Job is never written again (its terminal condition and
  ``completionTime`` may not change), and ``startTime`` is only moved while the
  local Job is suspended (as it always is under dispatch).

Times missing on the member are taken from the terminal condition, else from
``now`` (passed in: the module reads no clock).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from kuota.federation.managed_by import MANAGED_BY, managed_by

Body = dict[str, Any]

#: Terminal condition -> the interim condition the API server wants before it.
INTERIM: Final = {"Complete": "SuccessCriteriaMet", "Failed": "FailureTarget"}
_COUNTS: Final = ("succeeded", "failed")


def is_true(status: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or [])


def outcome(status: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` once a Job status says it finished, else None."""
    return next((kind for kind in INTERIM if is_true(status, kind)), None)


def status_patch(local: Body, remote: Body, *, now: str) -> Body | None:
    """The merge patch of ``local``'s status showing ``remote``'s; None if nothing changes.

    ``now``: the current time in Kubernetes' format, for times the member did not give.
    """
    ours, theirs = local.get("status") or {}, remote.get("status") or {}
    if outcome(ours) is not None:
        return None  # finished: the server allows no further change, and none is needed
    ended = outcome(theirs)
    if ended is None and managed_by(local) != MANAGED_BY:
        return None  # the manager's Job controller owns the running counts
    wanted: Body = {field: max(_count(ours, field), _count(theirs, field)) for field in _COUNTS}
    if ended is None:
        active = _count(theirs, "active")
        wanted.update(active=active, ready=min(_count(theirs, "ready"), active))
        if theirs.get("startTime"):
            wanted["startTime"] = _start(local, theirs["startTime"])
    else:
        wanted.update(_finished(local, theirs, ended, now))
    patch = {field: value for field, value in wanted.items() if _differs(ours, field, value)}
    return {"status": patch} if patch else None


def _count(status: Mapping[str, Any], field: str) -> int:
    value = status.get(field)
    return value if isinstance(value, int) and value > 0 else 0


def _start(local: Body, start: str) -> str:
    """The startTime to show: the stored one stays on a Job that is not suspended."""
    stored = (local.get("status") or {}).get("startTime")
    suspended = (local.get("spec") or {}).get("suspend") is True
    return stored if stored and not suspended else start


def _finished(local: Body, theirs: Mapping[str, Any], ended: str, now: str) -> Body:
    """The status fields of a local Job that finishes as ``theirs`` did."""
    ours = local.get("status") or {}
    terminal = _condition(theirs, ended) or {"type": ended, "status": "True"}
    at = terminal.get("lastTransitionTime") or theirs.get("completionTime") or now
    interim = _condition(theirs, INTERIM[ended]) or {
        **{k: v for k, v in terminal.items() if k != "type"}, "type": INTERIM[ended]}
    kept = [c for c in ours.get("conditions") or []
            if c.get("type") not in (ended, INTERIM[ended])]
    start = _start(local, theirs.get("startTime") or ours.get("startTime") or at)
    fields: Body = {"conditions": [*kept, _timed(interim, at), _timed(terminal, at)],
                    "active": 0, "ready": 0}
    if ended == "Complete":
        end = theirs.get("completionTime") or at
        if _parse(end) < _parse(start):
            start = end
        fields["completionTime"] = end
    fields["startTime"] = start
    if ours.get("terminating"):
        fields["terminating"] = 0
    pods = ours.get("uncountedTerminatedPods") or {}
    if pods.get("succeeded") or pods.get("failed"):
        fields["uncountedTerminatedPods"] = {"succeeded": [], "failed": []}
    return fields


def _condition(status: Mapping[str, Any], kind: str) -> Body | None:
    return next((dict(c) for c in status.get("conditions") or []
                 if c.get("type") == kind and c.get("status") == "True"), None)


def _timed(condition: Body, at: str) -> Body:
    """A condition with its transition time: the member's, else when the copy ended."""
    return {**condition, "lastTransitionTime": condition.get("lastTransitionTime") or at}


def _parse(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _differs(ours: Mapping[str, Any], field: str, value: Any) -> bool:
    """Whether writing ``value`` changes ``field`` (an absent count reads as 0)."""
    stored = ours.get(field)
    if stored is None and field in ("active", "ready", "succeeded", "failed", "terminating"):
        stored = 0
    return bool(stored != value)
