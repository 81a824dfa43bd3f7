"""Ports for the servers tests start: each pytest worker draws from its own part of the
range below the ephemeral ports, and a process is never given the same port twice — a
port kept for later (the real tier's webhook, bound again by each test's operator) must
not be handed to another server while nobody listens on it."""

from __future__ import annotations

import pytest

from tests import ports


@pytest.mark.parametrize(("worker", "count", "want_part"), [
    ("", "", None), ("gw0", "2", 0), ("gw1", "2", 1), ("gw3", "4", 3), ("master", "2", None),
])
def test_each_worker_draws_from_its_own_part(worker: str, count: str, want_part: int | None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    low, high = 18000, 30000
    got_low, got_high = ports._worker_range(low, high)
    if want_part is None:
        assert (got_low, got_high) == (low, high)
    else:
        span = (high - low) // int(count)
        assert (got_low, got_high) == (low + want_part * span, low + (want_part + 1) * span)


def test_a_port_is_given_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_GIVEN", set())
    # A narrow range, so that a port given twice would show.
    monkeypatch.setattr(ports, "_worker_range", lambda low, high: (high - 40, high))
    given = [ports.free_port() for _ in range(30)]
    assert len(set(given)) == 30
