"""The scheduler lease: one holder, a new fencing token per reign, deposed writes refused."""

from __future__ import annotations

from store_builders import admit, new_store, submit


def test_one_holder_at_a_time() -> None:
    store = new_store()
    a, b = store.lease("a", 30), store.lease("b", 30)
    assert a.acquire() and a.token == 1
    assert not b.acquire() and b.holder is None
    assert a.acquire() and a.token == 1, "re-acquiring keeps the reign's token"


def test_two_processes_with_one_identity_do_not_both_lead() -> None:
    """Issue 12: two schedulers started with the same --identity both led."""
    store = new_store()
    first, second = store.lease("sched", 30), store.lease("sched", 30)
    assert first.acquire()
    assert not second.acquire() and second.holder is None
    assert first.renew() and first.acquire() and first.token == 1
    first.release()
    assert second.acquire() and second.token == 2


def test_a_new_reign_gets_a_new_token() -> None:
    store = new_store()
    a, b = store.lease("a", 30), store.lease("b", 30)
    a.acquire()
    a.release()
    assert b.acquire() and b.token == 2


def test_renew_fails_once_the_lease_passed_on() -> None:
    store = new_store()
    a, b = store.lease("a", 30), store.lease("b", 30)
    a.acquire()
    store.redis.delete(store.keys.lease)  # as if the TTL ran out
    assert b.acquire()
    assert a.renew() is False and a.holder is None


def test_a_deposed_leaders_decision_is_refused() -> None:
    store = new_store()
    old, new = store.lease("old", 30), store.lease("new", 30)
    old.acquire()
    stale = old.holder
    store.redis.delete(store.keys.lease)
    new.acquire()
    submit(store)
    assert stale is not None and new.holder is not None
    assert admit(store, stale) == "fenced"
    assert admit(store, new.holder) == "ok:1"


def test_the_lease_expires_by_itself() -> None:
    store = new_store()
    lease = store.lease("a", 0.05)
    lease.acquire()
    assert 0 < store.redis.pttl(store.keys.lease) <= 50


def test_identity_must_not_contain_the_separator() -> None:
    import pytest

    with pytest.raises(ValueError, match="identity"):
        new_store().lease("a|b", 1)
