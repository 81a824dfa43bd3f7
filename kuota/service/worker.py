"""``kuota worker``: one node of a pool, consuming its node's rq queue.

A worker

1. registers its node (pool, capacity, labels, GPU device ids) and gets the
   node's new *epoch* — pods placed on an earlier incarnation of the node
   are marked Lost at that moment;
2. starts its :class:`~kuota.service.supervisor.PodSupervisor` and a
   heartbeat thread (every ``heartbeat`` seconds; Redis stamps the time);
3. runs an rq ``SimpleWorker`` on the node's queue; each job starts one pod.

If a heartbeat finds the node declared Lost (the worker was too slow, or cut
off from Redis for longer than the node timeout), its pods were already
requeued elsewhere: the worker terminates them and registers again as a new
incarnation. A worker refuses to start under the name of a node whose
worker is alive (recent heartbeat) unless ``replace`` is set; the one
replaced learns it at its next heartbeat (its epoch is stale), stops taking
jobs at once and terminates its pods — and never starts a pod sent to the
newer incarnation (the supervisor checks each job's epoch against its own). A
clean stop terminates the pods and takes the node out, so the scheduler
requeues its workloads at once instead of waiting for the timeout.

No thread of a worker ends unnoticed. A node whose pod thread died runs nothing
(its pods die with that thread) while its heartbeat says Ready: its workloads
would hold their quota for good. A worker thread that dies of an error nothing
foresaw — the pod thread, the heartbeat — is logged with its traceback and
stops the worker, which takes its node out with the error as the node's reason
(``kuota get nodes`` shows it; the scheduler requeues what ran there at once)
and exits with status 1, for its service manager to start it again. A
malformed record is no such error: it is set aside and named
(:mod:`queueing.store.quarantine`), and the node goes on.

Inside one process (the embedded mode, tests) several workers run as
threads; rq then gets a timer-based job timeout, since signals only reach
the main thread.
"""

from __future__ import annotations

import logging
import os
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import redis
from rq import SimpleWorker
from rq.job import Job
from rq.timeouts import TimerDeathPenalty

from kuota.service import pod
from kuota.service.connection import Connection
from kuota.service.jobs import JobSerializer, node_queue
from kuota.service.podusers import PodUsers
from kuota.service.supervisor import GPU, PodSupervisor, SupervisorTiming
from queueing.store.keys import check_node_name
from quota.resources import MILLI, ResourceVector

log = logging.getLogger(__name__)


class AllowedTasksJob(Job):
    """An rq job that may only call the functions named in :attr:`allowed`.

    rq imports and calls whatever function a job names; a worker runs the commands of
    every pod of its node (and the operator's task threads hold member credentials), so
    a job naming ``os.system`` would be a way around kuota for anyone who can write to
    Redis. Such a job fails, and nothing is imported. (The job's data is read with the
    JSON serializer, so nothing is unpickled either.)
    """

    allowed: ClassVar[frozenset[str]] = frozenset()

    @property
    def func(self) -> Any:
        if self.func_name not in self.allowed or self.instance is not None:
            raise PermissionError(f"rq job {self.id} names {self.func_name!r}: this worker "
                                  f"runs only {', '.join(sorted(self.allowed))}")
        return super().func


class TaskJob(AllowedTasksJob):
    """A node worker's job: kuota's own pod tasks (:data:`pod.TASKS`) only."""

    allowed = pod.TASKS


class NodeWorker(SimpleWorker):
    """rq's in-process worker, usable from a thread too."""

    #: Set by SIGTERM/SIGINT (rq's own handler then stops the loop).
    signalled = False

    def request_stop(self, signum: int, frame: Any) -> None:
        self.signalled = True
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is threading.main_thread():
            super()._install_signal_handlers()  # type: ignore[no-untyped-call]


class ThreadNodeWorker(NodeWorker):
    """For a worker in a thread: job timeouts by timer, since SIGALRM only reaches main."""

    death_penalty_class = TimerDeathPenalty


@dataclass
class WorkerOptions:
    pool: str
    node: str
    capacity: ResourceVector
    labels: Mapping[str, str] = field(default_factory=dict)
    #: GPU device ids; default 0..n-1 for ``nvidia.com/gpu=n``.
    devices: Sequence[str] | None = None
    heartbeat: float = 5.0
    log_dir: Path | None = None
    supervisor: SupervisorTiming = field(default_factory=SupervisorTiming)
    #: rq's worker TTL; its blocking dequeue waits TTL-15 s, which bounds how fast
    #: a stop request is noticed.
    rq_worker_ttl: int = 20
    clock: Callable[[], float] = time.time
    #: Take the node name over from a live worker (fencing it) instead of refusing to start.
    replace: bool = False
    #: Run each pod as its own user id from this range (the worker must be root).
    pod_users: PodUsers | None = None

    def __post_init__(self) -> None:
        check_node_name(self.node)
        if not self.pool:
            raise ValueError("--pool must not be empty")
        if self.heartbeat <= 0:
            raise ValueError(f"heartbeat must be positive, got {self.heartbeat}")

    def gpu_devices(self) -> list[str]:
        if self.devices is not None:
            return list(self.devices)
        return [str(i) for i in range(self.capacity.get(GPU, 0) // MILLI)]


class PoolWorker:
    def __init__(self, conn: Connection, options: WorkerOptions) -> None:
        self.conn = conn
        self.options = options
        self.epoch = 0
        self.stopped = threading.Event()
        #: Set when another worker registered the same node name.
        self.replaced = False
        self._log_dir = options.log_dir or Path(tempfile.mkdtemp(prefix=f"kuota-{options.node}-"))
        #: Why a thread of this worker died, stopping it ("" if none did).
        self.fault = ""
        self._stop = threading.Event()
        self.supervisor = PodSupervisor(conn.store, options.node, epoch=lambda: self.epoch,
                                        devices=options.gpu_devices(), log_dir=self._log_dir,
                                        timing=options.supervisor, clock=options.clock,
                                        pod_users=options.pod_users,
                                        on_death=self._thread_died)
        self._rq: NodeWorker | None = None
        #: rq runs in the main thread (``kuota worker``): only a signal stops it promptly.
        self._in_main_thread = False

    @property
    def node(self) -> str:
        return self.options.node

    def register(self, *, replace: bool | None = None) -> int:
        """Register the node; a live worker of that name makes it raise
        :class:`~queueing.store.NodeInUse` unless ``replace`` (default: the option)."""
        opts = self.options
        self.epoch = self.conn.store.nodes.register(
            opts.node, pool=opts.pool, capacity=opts.capacity, labels=opts.labels,
            devices=opts.gpu_devices(), now=opts.clock(),
            replace=opts.replace if replace is None else replace,
            heartbeat_every=opts.heartbeat,
            stops_within=opts.supervisor.stop_check + opts.supervisor.grace)
        log.info("node %s (pool %s) registered, epoch %d", opts.node, opts.pool, self.epoch)
        return self.epoch

    def run(self, stop: threading.Event | None = None) -> None:
        """Serve until ``stop`` is set (or rq is asked to stop by a signal)."""
        stop = self._stop = stop or threading.Event()
        if self.epoch == 0:
            self._retry(self.register, stop)
        prefix = self.conn.prefix
        self.supervisor.start()
        pod.register(prefix, self.node, self.supervisor)
        # Heartbeats go on until the node is out, so a slow shutdown is not taken for a death.
        beating = threading.Event()
        beat = threading.Thread(target=self._guarded, args=(self._heartbeats, beating, stop),
                                daemon=True, name=f"heartbeat-{self.node}")
        beat.start()
        try:
            while not stop.is_set() and not self.replaced:
                try:
                    self._rq = self._new_rq_worker()
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    # rq's worker names itself in Redis as it is made: Redis may still be
                    # away (a failover slower than the wait below). Try again.
                    log.warning("node %s: cannot start rq, redis unavailable (%s)", self.node,
                                exc)
                    stop.wait(1.0)
                    continue
                self._in_main_thread = threading.current_thread() is threading.main_thread()
                if threading.current_thread() is not threading.main_thread():
                    threading.Thread(target=self._stop_rq_on, args=(stop, self._rq),
                                     daemon=True).start()
                try:
                    self._rq.work(logging_level="WARNING")
                except (redis.ConnectionError, redis.TimeoutError) as exc:
                    # rq gives up on a job whose result it cannot write, then fails to
                    # say goodbye; the pods live on in the supervisor: start rq over.
                    log.warning("node %s: rq stopped, redis unavailable (%s)", self.node, exc)
                if self._rq.signalled or self._rq._stop_requested:  # asked to stop, not failed
                    break
                stop.wait(1.0)
        finally:
            stop.set()
            pod.unregister(prefix, self.node)
            self.supervisor.shutdown()
            self._leave()
            beating.set()
            beat.join(5)
            self.stopped.set()

    def _new_rq_worker(self) -> NodeWorker:
        queue = node_queue(self.conn.raw, self.conn.store.keys, self.node)
        in_thread = threading.current_thread() is not threading.main_thread()
        cls = ThreadNodeWorker if in_thread else NodeWorker
        return cls([queue], connection=self.conn.raw, job_class=TaskJob,
                   serializer=JobSerializer,
                   name=f"kuota-{self.node}-{uuid.uuid4().hex[:8]}",
                   worker_ttl=self.options.rq_worker_ttl)

    def _stop_rq_on(self, stop: threading.Event, worker: NodeWorker) -> None:
        # rq stops on a signal; a worker in a thread gets none, and rq's blocking
        # dequeue does not look at the stop flag. Flag it, then wake it with a no-op job.
        stop.wait()
        worker._stop_requested = True
        self._wake_rq()

    def _heartbeats(self, done: threading.Event, stop: threading.Event) -> None:
        nodes = self.conn.store.nodes
        while not done.wait(self.options.heartbeat):
            try:
                status = nodes.heartbeat(self.node, self.epoch)
                if status == "replaced":
                    log.error("node %s was registered by another worker; stopping", self.node)
                    self.replaced = True
                    stop.set()
                    self._stop_rq()
                    return  # fenced: this worker has nothing left to say about the node
                elif status != "ok":
                    if stop.is_set():
                        # Shutting down: the node was just taken out by this very worker
                        # (its clean leave). Registering it again would leave a Ready node
                        # that no worker serves.
                        return
                    # Declared Lost, or the store lost the node or this registration (Redis
                    # rolled back): either way the store runs nothing here any more.
                    log.warning("node %s: heartbeat answered %s; its pods were requeued, "
                                "registering again", self.node, status)
                    self.supervisor.kill_all()
                    # Declared Lost: the name is free again (this is still its only worker).
                    self.register(replace=True)
            except redis.RedisError as exc:
                log.warning("node %s: heartbeat failed: %s", self.node, exc)

    def _guarded(self, loop: Callable[..., None], *args: Any) -> None:
        """Run a worker thread's loop; if it dies of an error, the worker stops."""
        try:
            loop(*args)
        except Exception as exc:
            log.exception("node %s: thread %s died", self.node, threading.current_thread().name)
            self._thread_died(f"the {threading.current_thread().name} thread died: "
                              f"{type(exc).__name__}: {exc}")

    def _thread_died(self, why: str) -> None:
        """A thread of this worker died: stop the worker, which takes the node out with
        ``why`` as the reason (see the module's docstring)."""
        if self.fault or self._stop.is_set():
            return  # stopping already: the node is taken out with the first reason
        self.fault = why
        self._stop.set()
        self._stop_rq()

    def _stop_rq(self) -> None:
        """Stop taking jobs. In a process, rq's own SIGTERM handling asks for a warm stop
        (the same as ``kill``), and a no-op job wakes it from its blocking wait (at worst
        rq's dequeue timeout ends that wait); in a thread, the stop watcher does both."""
        if self._in_main_thread:
            os.kill(os.getpid(), signal.SIGTERM)
            self._wake_rq()

    def _wake_rq(self) -> None:
        """A no-op job on the node's queue: ends rq's blocking wait for the next job."""
        try:
            node_queue(self.conn.raw, self.conn.store.keys, self.node).enqueue(
                pod.WAKE, result_ttl=0, description="wake the worker to stop")
        except redis.RedisError as exc:
            log.warning("node %s: could not wake the worker: %s", self.node, exc)

    def _leave(self) -> None:
        if self.replaced:
            return
        reason = f"WorkerFault: {self.fault}" if self.fault else "WorkerStopped"
        try:
            self.conn.store.nodes.leave(self.node, self.epoch, reason=reason,
                                        now=self.options.clock())
        except redis.RedisError as exc:
            log.warning("node %s: could not deregister: %s", self.node, exc)

    @staticmethod
    def _retry(action: Callable[[], Any], stop: threading.Event) -> None:
        delay = 0.1
        while True:
            try:
                action()
                return
            except redis.ConnectionError as exc:
                if stop.is_set():
                    raise
                log.warning("redis unavailable (%s); retrying in %.1fs", exc, delay)
                stop.wait(delay)
                delay = min(delay * 2, 2.0)
