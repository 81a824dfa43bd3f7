"""A whole Redis-mode deployment inside one process: scheduler(s) and workers as threads.

By default it runs on the process's embedded fakeredis, so nothing needs to
be installed; give it a :class:`~kuota.service.connection.Connection` to a
real Redis to run the same threads against that. Used by the Python API
(``LocalCluster().client()``), the demo and tests::

    with LocalCluster(nodes=[node("pool-a", "a-1", "cpu=4")]) as cluster:
        client = cluster.client()
        client.apply("queues.yaml")
        client.submit(["echo", "hi"], queue="default/lq").wait(10)

Workers in threads use rq's ``SimpleWorker`` — the right choice on
fakeredis anyway, where a forking worker's writes would be lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import replace

from kuota.client import Client
from kuota.service.connection import EMBEDDED, Connection, connect
from kuota.service.leader import Timing
from kuota.service.scheduler import SchedulerOptions, SchedulerService
from kuota.service.supervisor import SupervisorTiming
from kuota.service.worker import PoolWorker, WorkerOptions
from quota.resources import parse_vector

log = logging.getLogger(__name__)

#: Quick timings for one process: a lost node is noticed in ~2 s.
#: (``restart_pause``: the nodes' default 2 s grace, their stop check and a margin)
FAST = Timing(lease_ttl=2.0, node_timeout=2.0, poll=0.1, restart_pause=2.5)


def node(pool: str, name: str, resources: str, labels: Mapping[str, str] | None = None, *,
         heartbeat: float = 0.5, grace: float = 2.0) -> WorkerOptions:
    """Options for one worker node, resources spelled as on the command line."""
    return WorkerOptions(pool=pool, node=name, capacity=parse_vector(resources),
                         labels=dict(labels or {}), heartbeat=heartbeat,
                         supervisor=SupervisorTiming(grace=grace), rq_worker_ttl=16)


class LocalCluster:
    def __init__(self, nodes: Iterable[WorkerOptions] = (), *,
                 connection: Connection | None = None, timing: Timing = FAST,
                 schedulers: int = 1, prefix: str = "kuota") -> None:
        self.connection = connection or connect(EMBEDDED, prefix=prefix)
        self.timing = timing
        self._stop = threading.Event()
        # Each scheduler on a connection of its own: it guards it against a restarted Redis
        # (kuota.service.connection), and no other user may accept the new server for it.
        self.schedulers = [SchedulerService(self._own_connection(), SchedulerOptions(
            identity=f"embedded-{i}", timing=timing)) for i in range(schedulers)]
        self._scheduler_stops = [threading.Event() for _ in self.schedulers]
        self._threads: list[threading.Thread] = []
        self.workers: dict[str, tuple[PoolWorker, threading.Event, threading.Thread]] = {}
        self._initial = list(nodes)

    def _own_connection(self) -> Connection:
        if self.connection.embedded:  # (an in-process server cannot restart)
            return self.connection
        return connect(self.connection.url, prefix=self.connection.prefix)

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for options in self._initial:
            self.add_node(options)
        for i, (service, stop) in enumerate(zip(self.schedulers, self._scheduler_stops,
                                                strict=True)):
            thread = threading.Thread(target=service.run, args=(stop,), daemon=True,
                                      name=f"scheduler-{i}")
            thread.start()
            self._threads.append(thread)

    def add_node(self, options: WorkerOptions) -> PoolWorker:
        if options.node in self.workers:
            raise ValueError(f"node {options.node} is already running")
        worker = PoolWorker(self.connection, replace(options))
        worker.register()  # so the first scheduler round already sees it
        stop = threading.Event()
        thread = threading.Thread(target=worker.run, args=(stop,), daemon=True,
                                  name=f"worker-{options.node}")
        thread.start()
        self.workers[options.node] = (worker, stop, thread)
        return worker

    def stop_node(self, name: str, timeout: float = 30.0) -> None:
        """Stop a worker cleanly: its pods are terminated and its workloads requeued."""
        _, stop, thread = self.workers.pop(name)
        stop.set()
        thread.join(timeout)

    def stop_scheduler(self, index: int, timeout: float = 10.0) -> None:
        self._scheduler_stops[index].set()
        self._threads[index].join(timeout)

    def client(self) -> Client:
        return Client(connection=self.connection)

    def stop(self) -> None:
        for name in list(self.workers):
            self.stop_node(name)
        for stop in self._scheduler_stops:
            stop.set()
        for thread in self._threads:
            thread.join(10)
