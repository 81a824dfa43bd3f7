"""The lease is kept through a long step (a rebuild of a big store), and not for a loop
that makes no progress."""

from __future__ import annotations

import time

import fakeredis

from kuota.service.leasekeeper import LeaseKeeper
from queueing.store import Store
from queueing.store.lease import Lease

TTL = 0.3


def lease_pair() -> tuple[Lease, Lease]:
    store = Store(fakeredis.FakeRedis(decode_responses=True), "t")
    return store.lease("leader", TTL), store.lease("standby", TTL)


def held(lease: Lease) -> str:
    assert lease.holder is not None
    return lease.holder


def test_a_step_longer_than_the_lease_keeps_it() -> None:
    leader, standby = lease_pair()
    assert leader.acquire()
    keeper = LeaseKeeper(leader)
    keeper.start(held(leader))
    try:
        deadline = time.monotonic() + 4 * TTL  # one "step" four leases long
        while time.monotonic() < deadline:
            assert not standby.acquire()
            time.sleep(TTL / 4)
        assert leader.renew() and not keeper.lost.is_set()
    finally:
        keeper.stop()


def test_a_loop_without_progress_lets_the_lease_go() -> None:
    leader, standby = lease_pair()
    assert leader.acquire()
    keeper = LeaseKeeper(leader, max_silence=2 * TTL)
    keeper.start(held(leader))
    try:
        deadline = time.monotonic() + 10 * TTL
        while not standby.acquire():
            assert time.monotonic() < deadline, "the keeper renewed for a stuck loop"
            time.sleep(TTL / 4)
    finally:
        keeper.stop()


def test_a_lease_taken_over_is_reported_lost() -> None:
    leader, _ = lease_pair()
    assert leader.acquire()
    keeper = LeaseKeeper(leader)
    keeper.start(held(leader))
    try:
        leader.release()  # as if it had run out and another had taken it
        assert keeper.lost.wait(2 * TTL)
    finally:
        keeper.stop()
