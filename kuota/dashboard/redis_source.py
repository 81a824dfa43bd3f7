"""The dashboard over a Redis store: the engine as a new leader would rebuild it.

:func:`kuota.service.rebuild.load` reads the queue objects and every unfinished
workload and restores the ones holding quota, exactly as a scheduler that
takes over would; the overview is read from that engine
(:func:`kuota.dashboard.model.overview`), so its usage, borrowing and positions
are the scheduler's. Why a workload waits is the reason the leader publishes
on its record; where it runs, the record's placement. Worker pools are the
members (nodes Ready/total, free/total of the Ready nodes, as ``kuota status``).
Nothing is written.
"""

from __future__ import annotations

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
from kuota.service import rebuild
from kuota.service.connection import Connection


class RedisSource:
    def __init__(self, connection: Connection) -> None:
        self.store = connection.store
        self.description = f"Redis {connection.describe()} (prefix {connection.prefix})"

    def overview(self) -> Overview:
        loaded = rebuild.load(self.store)
        facts = {key: Facts(explanation.from_record(record), record.placement)
                 for key, record in loaded.workloads.items()}
        problems = [f"{name}: {text}" for name, text in sorted(loaded.configs.problems.items())]
        problems += [f"workload {key} is set aside: {text}"
                     for key, text in sorted(loaded.invalid.items())]
        return overview(loaded.engine, facts, source=self.description,
                        members=self.members(), problems=problems)

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
        try:
            why = explanation.why(view)
        except ValueError as exc:  # a malformed stored decision: say so, show the rest
            why = f"unreadable dispatch decision: {exc}"
        return workload_page(Facts(view, record.placement), why, overview,
                             history_rows(self.store.workloads.history(key)))
