"""Read-only views for ``kuota get`` and ``kuota pending``, computed by the real engine.

ClusterQueue usage, borrowing and queue positions are not re-derived here:
the view rebuilds an engine from Redis exactly as a new leader would
(:mod:`kuota.service.rebuild`) and reads its quota tree and pending queues.
What the leader alone knows — why a workload waits — comes from the reason
it publishes on each workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kuota.service import rebuild
from queueing.store import Store, WorkloadRecord
from quota.resources import FlavorResource
from quota.tree import QuotaNode


@dataclass(frozen=True)
class Cell:
    flavor: str
    resource: str
    usage: int
    nominal: int
    borrowed: int
    borrowing_limit: int | None


@dataclass(frozen=True)
class ClusterQueueView:
    name: str
    cohort: str
    cells: list[Cell]
    pending: int
    admitted: int
    active: bool
    message: str = ""


@dataclass(frozen=True)
class LocalQueueView:
    key: str
    cluster_queue: str
    pending: int
    admitted: int


@dataclass(frozen=True)
class PendingView:
    key: str
    position: int
    local_queue: str
    local_position: int
    priority: int
    reason: str
    message: str
    #: Set aside: it can never fit as configured, so it blocks no one (listed last).
    inadmissible: bool = False


@dataclass
class Snapshot:
    cluster_queues: list[ClusterQueueView] = field(default_factory=list)
    local_queues: list[LocalQueueView] = field(default_factory=list)
    pending: dict[str, list[PendingView]] = field(default_factory=dict)


def _cells(node: QuotaNode | None, quotas: dict[FlavorResource, object]) -> list[Cell]:
    cells = []
    for fr in sorted(quotas):
        cell = node.quotas.get(fr) if node is not None else None
        nominal = cell.nominal if cell is not None else 0
        usage = node.usage.get(fr, 0) if node is not None else 0
        cells.append(Cell(fr.flavor, fr.resource, usage, nominal, max(0, usage - nominal),
                          cell.borrowing_limit if cell is not None else None))
    return cells


def snapshot(store: Store) -> Snapshot:
    loaded = rebuild.load(store)
    engine = loaded.engine
    records: dict[str, WorkloadRecord] = loaded.workloads
    out = Snapshot()
    admitted_by_lq: dict[str, int] = {}
    for entry in engine.cache.all_holding():
        lq = f"{entry.info.namespace}/{entry.info.queue_name}"
        admitted_by_lq[lq] = admitted_by_lq.get(lq, 0) + 1
    pending_by_lq: dict[str, int] = {}
    for name, cq in sorted(engine.cache.cluster_queues.items()):
        node = engine.cache.tree.queues.get(name)
        inactive = engine.cache.inactive.get(name)
        entries: list[PendingView] = []
        for info, position, local_position in engine.queues.positions(name):
            lq = f"{info.namespace}/{info.queue_name}"
            pending_by_lq[lq] = pending_by_lq.get(lq, 0) + 1
            stored = records.get(info.key)
            aside = engine.queues.set_aside(info.key)
            # The leader's published reason; the engine's own when it sets the workload aside.
            reason, message = aside if aside is not None else (
                (stored.reason, stored.message) if stored else ("", ""))
            entries.append(PendingView(info.key, position, lq, local_position, info.priority,
                                       reason, message, inadmissible=aside is not None))
        out.pending[name] = entries
        out.cluster_queues.append(ClusterQueueView(
            name, cq.cohort or "", _cells(node, dict(cq.quotas)), len(entries),
            len(engine.cache.workloads.get(name, {})), inactive is None,
            inactive.message if inactive is not None else ""))
    for key, lq_config in sorted(engine.cache.local_queues.items()):
        out.local_queues.append(LocalQueueView(key, lq_config.cluster_queue,
                                               pending_by_lq.get(key, 0),
                                               admitted_by_lq.get(key, 0)))
    return out
