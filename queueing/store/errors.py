"""What can go wrong in a store write, as exceptions the callers can tell apart.

Scripts answer with status strings (see :mod:`queueing.store.lua`);
:func:`outcome` turns a refusal into one of these. A caller that can recover
(re-read and retry, forget an assumed admission, step down as leader)
catches the specific class; everything else is a :class:`StoreError`.
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """A write was refused; the message says which object and why."""


class Fenced(StoreError):
    """The writer no longer holds the scheduler lease: its decisions are void."""


class NotFound(StoreError):
    """No such workload, pod, node or object."""


class Conflict(StoreError):
    """The object changed under the caller (another state or a newer attempt)."""


class AlreadyExists(StoreError):
    """A live workload of that name exists already."""


class NodeInUse(StoreError):
    """A live worker serves that node name (its heartbeat is recent)."""


def outcome(status: str, what: str) -> str:
    """The value after ``ok:`` (or ``""`` for a bare ``ok``); raise for a refusal."""
    if status == "ok":
        return ""
    if status.startswith("ok:"):
        return status[3:]
    if status == "fenced":
        raise Fenced(f"{what}: refused, this scheduler no longer holds the lease")
    if status == "missing":
        raise NotFound(f"{what}: not found")
    if status.startswith("exists:"):
        raise AlreadyExists(f"{what}: already exists and is {status[7:]}")
    if status.startswith("state:"):
        raise Conflict(f"{what}: not allowed while {status[6:]}")
    if status.startswith("stale:"):
        raise Conflict(f"{what}: changed meanwhile (now at attempt {status[6:]})")
    raise Conflict(f"{what}: refused ({status})")
