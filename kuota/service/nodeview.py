"""The active scheduler's picture of the pools: nodes, and what their live pods hold.

Placement needs, for every Ready node, its capacity and labels and the sum of
the requests of the pods holding it (placed or running, not yet ended). The
view reads all of that from Redis when it is *dirty* — at start, when a node
registers or is lost, every node check — and in between keeps itself current
by arithmetic: pods placed this round are added, and each pod that ended
(a ``pod`` event) is subtracted. A pod event the view cannot account for
marks it dirty instead, so a missed or repeated event costs a re-read, never
a wrong count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kuota.service import placing
from placement.model import Node
from queueing.store import NodeRecord, PodRef, Store
from queueing.store.workloads import PodPlacement
from quota.resources import ResourceVector


class NodeView:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.dirty = True
        #: How many times the view was read from Redis (what was added to it before is gone).
        self.refreshes = 0
        self.records: dict[str, NodeRecord] = {}
        self._values: dict[str, Node] = {}
        self._pod_requests: dict[str, ResourceVector] = {}
        self._pod_nodes: dict[str, str] = {}

    def refresh(self, records: Iterable[NodeRecord] | None = None) -> None:
        """Read nodes (unless given ``records`` just read), their pod sets and (for pods
        not seen yet) their requests. A node whose value comes out the same keeps its
        object: placement's rankings re-rank only the nodes that changed."""
        self.records = {n.name: n for n in (self.store.nodes.all() if records is None
                                            else records)}
        ready = [name for name, n in self.records.items() if n.ready]
        holding = self.store.nodes.pod_ids(ready)
        live = {p for ids in holding.values() for p in ids}
        unknown = sorted(live - self._pod_requests.keys())
        if unknown:
            refs = [PodRef.parse(p) for p in unknown]
            for ref, pod in zip(refs, self.store.pods.get_many(refs), strict=True):
                self._pod_requests[ref.id] = pod.requests if pod is not None else {}
        self._pod_requests = {p: r for p, r in self._pod_requests.items() if p in live}
        self._pod_nodes = {p: name for name, ids in holding.items() for p in ids}
        before = self._values
        self._values = {}
        for name in ready:
            value = placing.with_requests(placing.node_value(self.records[name]),
                                          (self._pod_requests[p] for p in sorted(holding[name])))
            kept = before.get(name)
            self._values[name] = kept if kept == value else value
        self.dirty = False
        self.refreshes += 1

    def pools(self) -> dict[str, list[Node]]:
        """Ready nodes not cordoned, as placement values with their usage, by pool."""
        if self.dirty:
            self.refresh()
        pools: dict[str, list[Node]] = {}
        for name, record in self.records.items():
            if record.schedulable:
                pools.setdefault(record.pool, []).append(self._values[name])
        return pools

    def empty_pools(self) -> dict[str, list[Node]]:
        """Ready nodes with nothing on them, by pool: what a gang could ever have."""
        if self.dirty:
            self.refresh()
        pools: dict[str, list[Node]] = {}
        for record in self.records.values():
            if record.schedulable:
                pools.setdefault(record.pool, []).append(placing.node_value(record))
        return pools

    def usage_by_node(self, include: Callable[[str], bool]) -> dict[str, ResourceVector]:
        """Summed requests of the live pods on each node whose workload key passes
        ``include`` (topology-aware admission counts some pods itself)."""
        out: dict[str, dict[str, int]] = {}
        for pod_id, node in self._pod_nodes.items():
            if not include(PodRef.parse(pod_id).workload):
                continue
            used = out.setdefault(node, {})
            for resource, amount in self._pod_requests.get(pod_id, {}).items():
                used[resource] = used.get(resource, 0) + amount
        return dict(out)

    def epoch(self, node: str) -> int:
        return self.records[node].epoch

    def gone(self, node: str, epoch: int) -> bool:
        """Is the incarnation ``epoch`` of ``node`` no longer Ready?"""
        record = self.records.get(node)
        return record is None or not record.ready or record.epoch != epoch

    def update(self, nodes: Mapping[str, Node]) -> None:
        """Nodes with a gang added this round, before it is stored (later gangs see it)."""
        self._values.update(nodes)

    def unplace(self, pods: Iterable[PodPlacement]) -> None:
        """Take back pods added this round (:meth:`update`) that will not be stored."""
        for p in pods:
            if p.node in self._values:
                self._values[p.node] = placing.without_requests(self._values[p.node],
                                                                p.requests)

    def placed(self, pods: Iterable[PodPlacement]) -> None:
        """Pods stored as placed: remember them so their end can be subtracted."""
        for p in pods:
            self._pod_requests[p.ref.id] = p.requests
            self._pod_nodes[p.ref.id] = p.node

    def ended(self, pod_id: str) -> None:
        """A pod ended (its capacity is already free in Redis): free it here too."""
        node = self._pod_nodes.pop(pod_id, None)
        requests = self._pod_requests.pop(pod_id, None)
        if node is None or requests is None or node not in self._values:
            self.dirty = True  # not ours to patch: read the nodes again
            return
        self._values[node] = placing.without_requests(self._values[node], requests)
