"""Free TCP ports on 127.0.0.1 for the servers tests start (redis-server, a control plane).

Ports are picked *below* the kernel's ephemeral range: a port from
``bind(("127.0.0.1", 0))`` is ephemeral, so once a server is killed for a
restart the kernel may hand the same port to another test's client socket,
and the restarted server could not bind it (or, worse, a readiness check
would be answered by someone else's server). Ports below the range are only
ever taken on purpose.

Some ports are kept for later and bound again and again: the real tier's
webhook port is picked once per control plane, and each test's operator
binds it anew. Between two tests nobody listens on it, so a plain "is it free
now?" could hand it to another server — a redis-server of the other pytest
worker, living for the whole session — and every later operator would fail
to bind ("address already in use"). So each pytest-xdist worker draws from
its own part of the range, and no process is given the same port twice.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

#: Ports this process was given (never given again).
_GIVEN: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _worker_range(low: int, high: int) -> tuple[int, int]:
    """This pytest-xdist worker's part of ``low..high`` (all of it outside xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or not worker[2:].isdigit() or count < 2:
        return low, high
    span = (high - low) // count
    start = low + int(worker[2:]) % count * span
    return start, start + span


def free_port() -> int:
    """A port nobody listens on now, below the kernel's ephemeral range, in this worker's
    part of it, and not given to this process before."""
    low, high = _worker_range(max(1024, min(_ephemeral_range()[0], 65536) - 12000),
                              min(_ephemeral_range()[0], 65536))
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(low, high)
        if port in _GIVEN:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            _GIVEN.add(port)
            return port
    raise RuntimeError(f"no free port found in {low}..{high}")
