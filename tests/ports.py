"""Free TCP ports on 127.0.0.1 for the servers tests start (redis-server, a control plane).

Ports are picked *below* the kernel's ephemeral range: a port from
``bind(("127.0.0.1", 0))`` is ephemeral, so once a server is killed for a
restart the kernel may hand the same port to another test's client socket,
and the restarted server could not bind it (or, worse, a readiness check
would be answered by someone else's server). Ports below the range are only
ever taken on purpose.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A port nobody listens on now, below the kernel's ephemeral range."""
    low = max(1024, min(_ephemeral_range()[0], 65536) - 12000)
    high = min(_ephemeral_range()[0], 65536)
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port found in {low}..{high}")
