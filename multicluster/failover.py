"""Failover: which members are lost, which workloads must move, which remote copies must go.

Values in, values out; the controller owns the clock and the API calls.

**Member state.** From a member's health and ``now``:

- *Ready* — Active and seen within ``staleAfter``: it gets new workloads;
- *Stale* — inactive, or not seen for longer than ``staleAfter``: it gets
  nothing new (the Health filter) but keeps what it runs — a short network
  blip must not restart every job;
- *Lost* — not seen for ``workerLostTimeout`` (default 5 minutes) or never
  seen at all: its workloads are evicted with reason ``ClusterLost`` and
  dispatched again (the Health filter keeps them off the lost member).

**No two running copies.** A workload may run in one member at a time. A new
copy may start only when every other member that held a copy has confirmed
its deletion, or is *Lost* (:func:`may_start`). A lost member cannot be asked
to delete anything, so being lost stands in for being fenced; when it comes
back, :func:`stale_copies` lists every copy it holds of a workload that is no
longer dispatched to it (moved, finished, deleted), and the controller
deletes those before the member is marked Active again. (A member that is
cut off but still running cannot be told anything, so its copy may run until
it returns; this is also Kueue MultiKueue's guarantee.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from multicluster.model import Health
from multicluster.settings import DEFAULT_STALE_AFTER, DEFAULT_WORKER_LOST_TIMEOUT

CLUSTER_LOST: Final = "ClusterLost"


class MemberState(StrEnum):
    READY = "Ready"
    STALE = "Stale"
    LOST = "Lost"


def member_state(health: Health, now: float, *, stale_after: float = DEFAULT_STALE_AFTER,
                 lost_after: float = DEFAULT_WORKER_LOST_TIMEOUT) -> MemberState:
    if health.last_seen is None:
        return MemberState.LOST
    age = now - health.last_seen
    if age >= lost_after:
        return MemberState.LOST
    if not health.active or age > stale_after:
        return MemberState.STALE
    return MemberState.READY


def lost_members(health: Mapping[str, Health], now: float, *,
                 timeout: float = DEFAULT_WORKER_LOST_TIMEOUT) -> tuple[str, ...]:
    """Names of the members lost at ``now``, sorted."""
    return tuple(sorted(name for name, h in health.items()
                        if member_state(h, now, stale_after=0.0, lost_after=timeout)
                        is MemberState.LOST))


@dataclass(frozen=True, slots=True)
class Move:
    """Evict ``workload`` from ``cluster`` and dispatch it again."""

    workload: str
    cluster: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class FailoverPlan:
    lost: tuple[str, ...]
    #: Sorted by workload key.
    moves: tuple[Move, ...]


def plan_failover(dispatched: Mapping[str, str], health: Mapping[str, Health], now: float, *,
                  timeout: float = DEFAULT_WORKER_LOST_TIMEOUT) -> FailoverPlan:
    """``dispatched`` maps workload key → member. A member missing from ``health`` counts as
    never seen (lost): a workload must not stay on a member nobody knows."""
    known = set(health)
    lost = set(lost_members(health, now, timeout=timeout))
    lost.update(cluster for cluster in dispatched.values() if cluster not in known)
    moves = []
    for workload in sorted(dispatched):
        cluster = dispatched[workload]
        if cluster not in lost:
            continue
        seen = health[cluster].last_seen if cluster in health else None
        why = ("has never been seen" if seen is None
               else f"was last seen {now - seen:.0f}s ago")
        moves.append(Move(workload, cluster, CLUSTER_LOST,
                          f"member cluster {cluster} {why} (workerLostTimeout {timeout:.0f}s)"))
    return FailoverPlan(tuple(sorted(lost)), tuple(moves))


def stale_copies(remote: Mapping[str, Iterable[str]],
                 dispatched: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(member, workload) for every copy ``remote[member]`` holds of a workload that is not
    dispatched to that member now; sorted."""
    stale = [(member, workload) for member, workloads in remote.items()
             for workload in workloads if dispatched.get(workload) != member]
    return tuple(sorted(set(stale)))


def may_start(target: str, copies: Mapping[str, bool],
              states: Mapping[str, MemberState]) -> tuple[bool, str]:
    """May a copy start on ``target``? ``copies`` maps member → whether a copy may still
    exist there (False once its deletion is confirmed). Answers (yes/no, why not)."""
    for member in sorted(copies):
        if member == target or not copies[member]:
            continue
        state = states.get(member, MemberState.LOST)
        if state is not MemberState.LOST:
            return False, (f"a copy on member {member} ({state}) is not deleted yet; the new "
                           f"copy on {target} waits for its deletion")
    return True, ""
