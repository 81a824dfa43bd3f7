"""The event stream: what changed that the active scheduler must look at.

Writers that are not the scheduler (submit, cancel, pod exits, node
registration, config changes) append a small entry to one Redis stream —
``kind`` plus the workload key, pod id or node name. The active scheduler
reads it from the last id it saw; every entry only says *look again*: the
scheduler re-reads the named object from Redis, so handling an entry twice,
or after a rebuild that already saw its effect, changes nothing.

The stream is capped (approximately) at :data:`EVENTS_MAXLEN` entries. A
scheduler that fell further behind than that cannot know what it missed and
rebuilds from scratch (:meth:`EventStream.missed`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from queueing.store.keys import Keys

EVENTS_MAXLEN: Final = 100_000
#: Entries read at a time: a read that returns this many has likely left more behind.
READ_COUNT: Final = 5000
#: Id before every entry.
START: Final = "0-0"


class Event(NamedTuple):
    """One entry (a tuple: the leader reads thousands a step, and a tuple is made in a
    fraction of a frozen dataclass's time)."""

    id: str
    kind: str  # workload | pod | node | config | decision
    #: Workload key; of a ``decision`` entry, every workload the call decided for, a line
    #: each (:func:`named`).
    key: str = ""
    pod: str = ""
    node: str = ""


def named(events: Iterable[Event]) -> set[str]:
    """Every workload the entries name (a decision entry names many)."""
    keys: set[str] = set()
    for e in events:
        if e.kind == "decision":
            keys.update(e.key.split("\n"))
        elif e.key:
            keys.add(e.key)
    keys.discard("")
    return keys


def _id_tuple(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class EventStream:
    def __init__(self, redis: Any, keys: Keys) -> None:
        self._r = redis
        self._keys = keys

    def last_id(self) -> str:
        """Id of the newest entry (read this *before* loading state, then follow from it)."""
        newest = self._r.xrevrange(self._keys.events, count=1)
        return str(newest[0][0]) if newest else START

    def read(self, after: str, *, block_ms: int | None,
             count: int = READ_COUNT) -> list[Event]:
        reply = self._r.xread({self._keys.events: after}, count=count, block=block_ms)
        events: list[Event] = []
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                events.append(Event(str(entry_id), fields.get("kind", ""), fields.get("key", ""),
                                    fields.get("pod", ""), fields.get("node", "")))
        return events

    def read_all(self, after: str, count: int = READ_COUNT) -> list[Event]:
        """Every entry after ``after`` up to the newest one when called (entries added
        meanwhile are left for the next read)."""
        end = _id_tuple(self.last_id())
        found: list[Event] = []
        while True:
            read = self.read(after, block_ms=None, count=count)
            found += [e for e in read if _id_tuple(e.id) <= end]
            if not read or _id_tuple(read[-1].id) >= end:
                return found
            after = read[-1].id

    def rolled_back(self, after: str) -> bool:
        """True if the stream ends before ``after``: Redis lost writes it had answered (a
        restart without the last second of its log, a failover to a lagging replica)."""
        return _id_tuple(self.last_id()) < _id_tuple(after)

    def missed(self, after: str) -> bool:
        """True if entries after ``after`` were trimmed away before being read."""
        if after == START:
            return False
        oldest = self._r.xrange(self._keys.events, count=1)
        if not oldest:
            return False
        return _id_tuple(str(oldest[0][0])) > _id_tuple(after) and \
            self._r.xlen(self._keys.events) >= EVENTS_MAXLEN
