"""Redis's own time, script by script, read from its slow log.

Redis counts the time of every command (``INFO commandstats``) but an ``EVALSHA`` is one
command whatever script it runs, and the store's work is a dozen scripts. Its slow log
keeps each command's arguments (the script's SHA among them) and how long it ran: with
the threshold brought down to a few microseconds it logs every script call, which is
then summed per script, named by matching the SHA against the store's sources.

The times are the scripts' execution alone (the redis.call commands inside them
included); reading requests and writing replies is not in them. The threshold leaves
out the cheapest plain commands, never a script call: an ``EVALSHA`` costs more than
that before its script runs. Logging costs Redis some time of its own, so a run
measured this way is a little slower than one that is not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import redis

from queueing.store import lua

#: Commands that ran at least this long (µs) are logged.
THRESHOLD_US = 8
#: Entries kept: a large-scale run logs some 250,000.
KEPT = 1_000_000


@dataclass
class ScriptTimes:
    """Per script name: calls and seconds; filled when the measured block ends."""

    scripts: dict[str, tuple[int, float]] = field(default_factory=dict)
    #: The log filled up: its oldest entries were dropped and the figures are short.
    full: bool = False

    def lines(self, workloads: int) -> list[str]:
        rows = sorted(self.scripts.items(), key=lambda kv: -kv[1][1])
        out = [f"{name:<16}{seconds:>6.2f} s {calls:>8,} calls"
               f"{1e6 * seconds / calls:>9.1f} µs a call"
               f"{1e6 * seconds / workloads:>8.1f} µs a workload"
               for name, (calls, seconds) in rows]
        if self.full:
            out.append(f"(the log filled up at {KEPT:,} entries: the figures are short)")
        return out


@contextmanager
def script_times(url: str) -> Iterator[ScriptTimes]:
    """Log every script call on the Redis at ``url`` while the block runs, then sum them
    (the server's slow-log settings are put back as they were)."""
    server = redis.Redis.from_url(url)
    before = server.config_get("slowlog-*")
    server.config_set("slowlog-log-slower-than", THRESHOLD_US)
    server.config_set("slowlog-max-len", KEPT)
    server.slowlog_reset()
    times = ScriptTimes()
    try:
        yield times
        names = {hashlib.sha1(lua.source(n).encode()).hexdigest(): n for n in lua.SCRIPTS}
        entries = server.slowlog_get(KEPT)
        times.full = len(entries) >= KEPT
        sums: dict[str, list[float]] = {}
        for entry in entries:
            words = entry["command"].split(b" ", 2)
            if words[0].lower() != b"evalsha" or len(words) < 2:
                continue
            sha = words[1].decode()
            s = sums.setdefault(names.get(sha, sha[:12]), [0, 0.0])
            s[0] += 1
            s[1] += entry["duration"] / 1e6
        times.scripts = {name: (int(c), t) for name, (c, t) in sums.items()}
    finally:
        for name, value in before.items():
            server.config_set(name, value)
        server.slowlog_reset()
        server.close()
