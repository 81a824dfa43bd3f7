"""The store's indexes of workloads by state: the unfinished ones, the finished by when.

A pool keeps its finished workloads for ``--retain-finished`` (a week by default): at
one job a second, 600,000 records. What reads only live workloads — a scheduler's
rebuild, the dashboard, ``kuota status``, ``kuota get workloads`` — walks
:attr:`~queueing.store.keys.Keys.unfinished`; retention and ``kuota history --since``
walk :attr:`~queueing.store.keys.Keys.finished`, ordered by end time. Every Lua script
that stores, finishes, purges or removes a workload keeps both, in the same call as the
state change (``finished()`` in the scripts' prologue).

An index can be wrong only where a writer did not keep it — an older kuota — and only
in the safe way for readers, who check the state they read: a stale entry costs a read,
a missing one hides a workload until :meth:`WorkloadIndexes.mend` (the scheduler's
resync window) puts it back. A store written before the indexes existed is indexed once
(:meth:`WorkloadIndexes.build`, by the first scheduler that leads it); until then
readers walk every workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from queueing.store.keys import Keys
from queueing.store.scripts import Scripts

#: Workloads one indexing call looks at (Redis is never held long).
CHUNK = 2_000


class WorkloadIndexes:
    def __init__(self, redis: Any, keys: Keys, scripts: Scripts) -> None:
        self._r = redis
        self._keys = keys
        self._scripts = scripts

    def complete(self) -> bool:
        """Whether both indexes hold every workload (:meth:`build` has run)."""
        return bool(self._r.exists(self._keys.unfinished_marker))

    def build(self, *, chunk: int = CHUNK) -> int:
        """Index every stored workload, once per store, and mark the indexes complete;
        returns how many were missing."""
        if self.complete():
            return 0
        added = self.mend(self._r.zrange(self._keys.workloads, 0, -1, withscores=True),
                          chunk=chunk)
        self._r.set(self._keys.unfinished_marker, "1")
        return added

    def mend(self, entries: Sequence[tuple[str, float]], *, chunk: int = CHUNK) -> int:
        """Put each of the (key, submission time) workloads in the index its state calls
        for where missing (stored or finished by an older kuota), ``chunk`` at a time;
        returns how many were missing."""
        k = self._keys
        added = 0
        for start in range(0, len(entries), chunk):
            part = entries[start:start + chunk]
            added += int(self._scripts.read(
                "index_workloads",
                [k.unfinished, k.finished, *(k.workload(key) for key, _ in part)],
                [*(at for _, at in part), *(key for key, _ in part)]))
        return added

    def window(self, rank: int, count: int) -> list[tuple[str, float]]:
        """At most ``count`` (> 0) stored workloads, finished or not, with their
        submission times, oldest first, from the ``rank``-th (0: the oldest)."""
        if count <= 0:
            raise ValueError(f"count must be positive, not {count}")
        return [(str(key), float(at)) for key, at in self._r.zrange(
            self._keys.workloads, rank, rank + count - 1, withscores=True)]

    def unfinished_index(self) -> str:
        """The index to walk for the unfinished workloads (a few finished ones too, at
        times): every workload's while the indexes are incomplete."""
        return self._keys.unfinished if self.complete() else self._keys.workloads

    def unfinished_keys(self) -> list[str]:
        """The keys of every workload not finished (a few finished ones too, at times),
        oldest submission first; every key while the indexes are incomplete."""
        return [str(key) for key in self._r.zrange(self.unfinished_index(), 0, -1)]

    def finished_keys(self, since: float | None = None) -> list[str]:
        """The keys of the workloads finished (since ``since``), the earliest end first;
        every key while the indexes are incomplete (readers check the state they read)."""
        if not self.complete():
            return [str(key) for key in self._r.zrange(self._keys.workloads, 0, -1)]
        low = "-inf" if since is None else since
        return [str(key) for key in self._r.zrangebyscore(self._keys.finished, low, "+inf")]

    def finished_before(self, cutoff: float, limit: int) -> list[str]:
        """At most ``limit`` workloads that finished before ``cutoff``, the oldest first:
        what retention forgets next."""
        return [str(key) for key in self._r.zrangebyscore(
            self._keys.finished, "-inf", f"({cutoff}", start=0, num=limit)]
