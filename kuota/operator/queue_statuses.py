"""Which ClusterQueue and LocalQueue statuses a status sync writes.

A queue's status is made of a few inputs: its stored object, the problem its spec has
(if any), its figures (:mod:`kuota.operator.tallies`), its config in the engine and
whether it (or its ClusterQueue) is inactive. With 1,000 ClusterQueues and their
LocalQueues, making and comparing 2,000 statuses every second cost more than counting
them once nothing was counted again; so what each status was made of is remembered
when it needed no write, and while all of it stays the same the status is not made
again. A status that needed a write is made again at the next sync (the write may
fail) — once the write is observed, its new object is an input that changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kuota.operator import names, status, tallies
from kuota.operator.objects import key_of

if TYPE_CHECKING:
    from kuota.operator.controller import Controller

Body = dict[str, Any]
#: A status to write: the resource, the stored object and the patch.
Write = tuple[names.Res, Body, Body]


class QueueStatuses:
    def __init__(self) -> None:
        #: The queues' figures, counted again only where they changed.
        self.tallies = tallies.Tallies()
        #: Queue (kind, key) -> what its status was made of when it last needed no write.
        self._made_of: dict[tuple[str, str], tuple[object, ...]] = {}

    def to_write(self, controller: Controller, now: float
                 ) -> tuple[dict[str, tallies.QueueFigures], list[Write]]:
        """Every ClusterQueue's figures (for the gauges too), and the queue statuses that
        changed."""
        engine = controller.engine
        assert engine is not None
        cache, figures = engine.cache, self.tallies.cluster_queues(engine)
        writes: list[Write] = []
        for body in controller.objects.all("ClusterQueue"):
            name = key_of(body)
            problem = controller.problems.get(f"ClusterQueue/{name}")
            made_of: tuple[object, ...] = (body, problem, figures.get(name),
                                           cache.cluster_queues.get(name),
                                           cache.inactive.get(name))
            if self._made_of.get(("ClusterQueue", name)) != made_of:
                patch = status.cluster_queue_status(engine, name, body, now, problem,
                                                    figures.get(name))
                self._check(names.CLUSTER_QUEUES, name, body, patch, made_of, writes)
        local = self.tallies.local_queues(engine)
        for body in controller.objects.all("LocalQueue"):
            key = key_of(body)
            problem = controller.problems.get(f"LocalQueue/{key}")
            tally = local.get(key, tallies.NO_WORKLOADS)
            lq = cache.local_queues.get(key)
            cq_name = lq.cluster_queue if lq is not None else ""
            made_of = (body, problem, tally, lq, cq_name in cache.cluster_queues,
                       cache.inactive.get(cq_name))
            if self._made_of.get(("LocalQueue", key)) != made_of:
                patch = status.local_queue_status(engine, key, body, now, tally, problem)
                self._check(names.LOCAL_QUEUES, key, body, patch, made_of, writes)
        for kind, key in [k for k in self._made_of if controller.objects.get(*k) is None]:
            del self._made_of[(kind, key)]
        return figures, writes

    def _check(self, res: names.Res, key: str, body: Body, patch: Body,
               made_of: tuple[object, ...], writes: list[Write]) -> None:
        if status.differs(body, patch):
            self._made_of.pop((res.kind, key), None)
            writes.append((res, body, patch))
        else:
            self._made_of[(res.kind, key)] = made_of
