"""The follow / garbage-collect / health decisions for one member observation (pure).

The federation controller keeps, per workload, the member it is dispatched to
(``wanted``) and, per member, which workloads may have a copy there
(``holders``). After each observation of a member, :func:`reconcile` says:

* **follow** — copies of workloads dispatched to this member: their status
  goes home to the local Job;
* **delete** — copies of workloads *not* dispatched here (any more): the
  workload finished, was evicted, deleted, or moved while the member was
  lost — or a copy nobody knows (an orphan of a previous manager run). This
  is both the periodic orphan collection and the clean-up of a member that
  comes back (:func:`multicluster.failover.stale_copies`);
* **create** — workloads dispatched here with no copy seen and none being
  created: (re)create it (create-if-absent, so a race with a create in flight
  is harmless).

:func:`member_condition` turns an observation's outcome into the member's
``Active`` condition: reachable and clean is Active; a member returning from
being lost stays inactive (``DeletingStaleCopies``) until the copies it kept
are gone, so nothing new lands there before that.

:func:`with_dispatched` adds to observed nodes what the dispatcher placed
there: copies' pods are not counted by the observation (they carry the origin
label), since the dispatcher's own placement is what later decisions use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kuota.federation.member import Copy
from multicluster.failover import stale_copies
from placement.model import Node, add_amounts
from quota.resources import Amount

REACHABLE: Final = "Reachable"
UNREACHABLE: Final = "Unreachable"
DELETING_STALE: Final = "DeletingStaleCopies"
NOT_CONFIGURED: Final = "NotConfigured"


@dataclass(frozen=True, slots=True)
class Plan:
    follow: tuple[Copy, ...] = ()
    delete: tuple[Copy, ...] = ()
    #: Workload keys to create a copy for on this member.
    create: tuple[str, ...] = ()


def reconcile(member: str, copies: Iterable[Copy], wanted: Mapping[str, str], *,
              creating: Iterable[str] = ()) -> Plan:
    """What to do after observing ``copies`` on ``member``; ``creating``: workloads whose
    copy on this member is being created right now."""
    copies = list(copies)
    by_workload: dict[str, list[Copy]] = {}
    for found in copies:
        by_workload.setdefault(found.workload, []).append(found)
    stale = {workload for _, workload in stale_copies({member: by_workload}, wanted)}
    follow = tuple(c for c in copies if c.workload not in stale)
    delete = tuple(c for c in copies if c.workload in stale)
    busy = set(creating)
    create = tuple(sorted(w for w, m in wanted.items()
                          if m == member and w not in by_workload and w not in busy))
    return Plan(follow, delete, create)


def member_condition(*, error: str | None, recovering: bool, stale: int) -> tuple[bool, str, str]:
    """(active, reason, message) of a member after an observation (``error``: why it failed)."""
    if error is not None:
        return False, UNREACHABLE, error
    if recovering and stale:
        return False, DELETING_STALE, (f"the member is back; {stale} stale "
                                       f"cop{'y' if stale == 1 else 'ies'} of workloads moved "
                                       "elsewhere must be deleted first")
    return True, REACHABLE, "the member answered"


def with_dispatched(nodes: Iterable[Node],
                    added: Iterable[Mapping[str, Mapping[str, Amount]]]) -> tuple[Node, ...]:
    """``nodes`` with each dispatched workload's per-node amounts added to ``requested``."""
    extra: dict[str, dict[str, Amount]] = {}
    for per_node in added:
        for name, amounts in per_node.items():
            add_amounts(extra.setdefault(name, {}), amounts)
    return tuple(node.with_requested(extra.get(node.name) or {}) for node in nodes)
