"""The dashboard over a Redis store: the engine as a new leader would rebuild it.

:class:`~kuota.dashboard.redis_reader.RedisReader` rebuilds the engine from the
queue objects and every unfinished workload, restoring the ones holding quota,
exactly as a scheduler that takes over would (re-reading only what changed);
the overview is read from that engine (:func:`kuota.dashboard.model.overview`),
so its usage, borrowing and positions are the scheduler's. Why a workload
waits is the reason the leader publishes on its record; where it runs, the
record's placement. Worker pools are the
members (nodes Ready/total, free/total of the Ready nodes, as ``kuota status``).
Nothing is written.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote

from kuota import explanation
from kuota.commands.status import _nodes_and_pools
from kuota.dashboard.model import (
    Facts,
    Member,
    Overview,
    WorkloadPage,
    history_rows,
    overview,
    workload_page,
)
from kuota.dashboard.redis_reader import Loaded, RedisReader
from kuota.service.connection import Connection
from queueing.store import PodRef


class RedisSource:
    def __init__(self, connection: Connection) -> None:
        self.store = connection.store
        self.description = f"Redis {connection.describe()} (prefix {connection.prefix})"
        self.reader = RedisReader(self.store)
        self._last: tuple[Loaded, Overview] | None = None

    def overview(self) -> Overview:
        loaded = self.reader.load()
        members = tuple(self.members())
        if self._last is not None and self._last[0] is loaded:
            # Nothing read changed: the picture is the same, but for the pools.
            last = self._last[1]
            return last if last.members == members else replace(last, members=members)
        previous = self._last[1] if self._last is not None else None
        built = overview(loaded.engine, loaded.facts, source=self.description,
                         members=members, problems=loaded.problems, previous=previous,
                         changed=loaded.changed)
        self._last = (loaded, built)
        return built

    def members(self) -> list[Member]:
        _nodes, pools = _nodes_and_pools(self.store, self.store.nodes.time())
        return [Member(p["name"] or "(no pool)", p["nodesReady"] > 0,
                       "Active" if p["nodesReady"] else "NoReadyNodes",
                       p["nodesReady"], p["nodes"],
                       tuple((r, v["free"], v["total"]) for r, v in p["resources"].items()))
                for p in pools]

    def workload(self, key: str, overview: Overview | None) -> WorkloadPage | None:
        record = self.store.workloads.find(key)
        if record is None:
            return None
        view = explanation.from_record(record)
        namespace, _, name = key.partition("/")
        return workload_page(Facts(view, record.placement), overview,
                             history_rows(self.store.workloads.history(key)),
                             logs_url=f"/workloads/{quote(namespace, safe='')}/"
                                      f"{quote(name, safe='')}/logs")

    def logs(self, key: str) -> str | None:
        """The output of the workload's current attempt (every pod, with a header each),
        or None when there is no such workload."""
        record = self.store.workloads.find(key)
        if record is None:
            return None
        refs = [PodRef(record.key, record.attempt, i) for i in range(record.pods)] \
            if record.attempt else []
        if not refs:
            return f"workload {key}: no pod has run yet\n"
        return "".join(f"==> pod {ref.index} (attempt {ref.attempt}) <==\n"
                       f"{self.store.pods.logs(ref)}" for ref in refs)
