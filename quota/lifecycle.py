"""The workload lifecycle: one table of legal transitions, nothing else.

States follow Kueue's conditions::

    Pending --reserve--> QuotaReserved --admit--> Admitted --finish--> Finished
       ^                     |  |                    |  |
       +------release--------+  |                    |  +--evict--> Pending (requeued)
       +------evict-------------+                    |
    any live state --deactivate--> Inactive --activate--> Pending
    Pending / QuotaReserved --finish--> Finished (cancelled or deleted)
    any live state --quarantine--> Invalid --finish--> Finished (cancelled)

    QuotaReserved / Admitted --stop--> Evicting --stopped--> Pending (requeued)
                                          |  --deactivate--> Inactive
                                          +--finish--> Finished

``reserve`` takes quota; ``admit`` happens once every admission check is
Ready (at once when there are none); ``release`` gives quota back before the
workload ran (a failed write, a check asking to retry); ``evict`` stops a
running or reserved workload and puts it back in its queue. Where stopping
takes time — pods terminate gracefully, on Kubernetes and on Redis workers —
an eviction is two steps, as in Kueue (``Evicted=True`` while ``QuotaReserved`` stays True):
``stop`` marks the workload *Evicting*, still holding its quota so nothing
is admitted onto capacity its pods still use; ``stopped`` (its pods are
gone) releases the quota and requeues it, or ``deactivate`` ends an
eviction that was a deactivation. ``quarantine`` sets aside a workload the
scheduler cannot handle (a spec that fails the checks, or one that made a
scheduling step raise): Invalid holds no quota and is never scheduled again;
only cancelling it (``finish``) moves it on, so the user sees it and frees its
name. An illegal transition raises :class:`IllegalTransition` and leaves the
state unchanged — the caller's record is only updated from the returned value.
"""

from __future__ import annotations

import enum
from typing import Final


class State(enum.StrEnum):
    PENDING = "Pending"
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    INACTIVE = "Inactive"
    #: Evicted, but its pods still run: it keeps its quota until they are gone.
    EVICTING = "Evicting"
    INVALID = "Invalid"


class Event(enum.StrEnum):
    RESERVE = "reserve"
    ADMIT = "admit"
    RELEASE = "release"
    EVICT = "evict"
    FINISH = "finish"
    DEACTIVATE = "deactivate"
    ACTIVATE = "activate"
    STOP = "stop"
    STOPPED = "stopped"
    QUARANTINE = "quarantine"


TRANSITIONS: Final[dict[tuple[State, Event], State]] = {
    (State.PENDING, Event.RESERVE): State.QUOTA_RESERVED,
    (State.PENDING, Event.FINISH): State.FINISHED,
    (State.PENDING, Event.DEACTIVATE): State.INACTIVE,
    (State.QUOTA_RESERVED, Event.ADMIT): State.ADMITTED,
    (State.QUOTA_RESERVED, Event.RELEASE): State.PENDING,
    (State.QUOTA_RESERVED, Event.EVICT): State.PENDING,
    (State.QUOTA_RESERVED, Event.FINISH): State.FINISHED,
    (State.QUOTA_RESERVED, Event.DEACTIVATE): State.INACTIVE,
    (State.ADMITTED, Event.FINISH): State.FINISHED,
    # The admission was decided but could not be persisted: it never happened.
    (State.ADMITTED, Event.RELEASE): State.PENDING,
    (State.ADMITTED, Event.EVICT): State.PENDING,
    (State.ADMITTED, Event.DEACTIVATE): State.INACTIVE,
    (State.INACTIVE, Event.ACTIVATE): State.PENDING,
    (State.INACTIVE, Event.FINISH): State.FINISHED,
    (State.QUOTA_RESERVED, Event.STOP): State.EVICTING,
    (State.ADMITTED, Event.STOP): State.EVICTING,
    (State.EVICTING, Event.STOPPED): State.PENDING,
    (State.EVICTING, Event.DEACTIVATE): State.INACTIVE,
    (State.EVICTING, Event.FINISH): State.FINISHED,
    (State.PENDING, Event.QUARANTINE): State.INVALID,
    (State.QUOTA_RESERVED, Event.QUARANTINE): State.INVALID,
    (State.ADMITTED, Event.QUARANTINE): State.INVALID,
    (State.INACTIVE, Event.QUARANTINE): State.INVALID,
    (State.INVALID, Event.FINISH): State.FINISHED,
}

#: States in which a workload holds quota.
HOLDS_QUOTA: Final = frozenset({State.QUOTA_RESERVED, State.ADMITTED, State.EVICTING})


class IllegalTransition(RuntimeError):
    def __init__(self, key: str, state: State, event: Event) -> None:
        super().__init__(f"workload {key}: cannot {event.value} while {state.value}")
        self.key, self.state, self.event = key, state, event


def transition(key: str, state: State, event: Event) -> State:
    """The state after ``event``; raises :class:`IllegalTransition` if not allowed."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(key, state, event) from None
