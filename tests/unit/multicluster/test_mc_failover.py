"""Failover helpers: member states, lost members, moves, stale copies, starting a new copy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from multicluster.failover import (
    CLUSTER_LOST,
    FailoverPlan,
    MemberState,
    Move,
    lost_members,
    may_start,
    member_state,
    plan_failover,
    stale_copies,
)
from multicluster.model import Health

NOW = 1_000.0


def seen(ago: float | None, *, active: bool = True) -> Health:
    return Health(active, last_seen=None if ago is None else NOW - ago)


@dataclass(frozen=True)
class StateCase:
    name: str
    health: Health
    want: MemberState


STATES = [
    StateCase("fresh", seen(10), MemberState.READY),
    StateCase("at staleAfter", seen(60), MemberState.READY),
    StateCase("past staleAfter", seen(61), MemberState.STALE),
    StateCase("inactive but seen", seen(1, active=False), MemberState.STALE),
    StateCase("just before the timeout", seen(299.9), MemberState.STALE),
    StateCase("at the timeout", seen(300), MemberState.LOST),
    StateCase("never seen", seen(None), MemberState.LOST),
]


@pytest.mark.parametrize("case", STATES, ids=[c.name for c in STATES])
def test_member_state(case: StateCase) -> None:
    assert member_state(case.health, NOW, stale_after=60, lost_after=300) is case.want


def test_lost_members_default_timeout_is_five_minutes() -> None:
    health = {"a": seen(299), "b": seen(301), "c": seen(None), "d": seen(5, active=False)}
    assert lost_members(health, NOW) == ("b", "c")
    assert lost_members(health, NOW, timeout=600) == ("c",)


def test_plan_moves_the_workloads_of_lost_members_only() -> None:
    dispatched = {"ml/b": "eu", "ml/a": "eu", "ml/c": "us", "ml/d": "ghost"}
    plan = plan_failover(dispatched, {"eu": seen(400), "us": seen(5)}, NOW, timeout=300)
    assert plan == FailoverPlan(("eu", "ghost"), (
        Move("ml/a", "eu", CLUSTER_LOST,
             "member cluster eu was last seen 400s ago (workerLostTimeout 300s)"),
        Move("ml/b", "eu", CLUSTER_LOST,
             "member cluster eu was last seen 400s ago (workerLostTimeout 300s)"),
        Move("ml/d", "ghost", CLUSTER_LOST,
             "member cluster ghost has never been seen (workerLostTimeout 300s)"),
    ))


def test_nothing_moves_while_members_are_only_stale() -> None:
    plan = plan_failover({"ml/a": "eu"}, {"eu": seen(120, active=False)}, NOW)
    assert plan == FailoverPlan((), ())


@pytest.mark.parametrize(("remote", "dispatched", "want"), [
    ({"eu": ["ml/a"]}, {"ml/a": "eu"}, ()),
    ({"eu": ["ml/a", "ml/b"]}, {"ml/a": "us"}, (("eu", "ml/a"), ("eu", "ml/b"))),
    ({"eu": ["ml/a"], "us": ["ml/a"]}, {"ml/a": "us"}, (("eu", "ml/a"),)),
    ({}, {"ml/a": "us"}, ()),
])
def test_stale_copies(remote: dict[str, list[str]], dispatched: dict[str, str],
                      want: tuple[tuple[str, str], ...]) -> None:
    assert stale_copies(remote, dispatched) == want


@pytest.mark.parametrize(("copies", "states", "want_ok", "want_reason"), [
    ({}, {}, True, ""),
    ({"us": True}, {"us": MemberState.READY}, True, ""),  # the target's own copy
    ({"eu": False}, {"eu": MemberState.READY}, True, ""),  # deletion confirmed
    ({"eu": True}, {"eu": MemberState.LOST}, True, ""),  # lost stands for fenced
    ({"eu": True}, {"eu": MemberState.STALE}, False,
     "a copy on member eu (Stale) is not deleted yet; the new copy on us waits"),
    ({"eu": True}, {"eu": MemberState.READY}, False, "a copy on member eu (Ready)"),
    ({"gone": True}, {}, True, ""),  # a member nobody knows counts as lost
])
def test_may_start(copies: dict[str, bool], states: dict[str, MemberState], want_ok: bool,
                   want_reason: str) -> None:
    ok, reason = may_start("us", copies, states)
    assert ok is want_ok
    assert want_reason in reason and (reason == "") is want_ok
