"""Remote calls as rq tasks: idempotent, retried with backoff, off the operator's loop.

Every call to a member (observe, create a copy, delete a copy) is an rq job on
that member's own queue (a *lane*: ``kuota-federation-<manager>:<member>``),
run by the lane's own worker thread inside the operator (rq's
``SimpleWorker``: no fork, so it works on the embedded fakeredis too). The
operator's loop only enqueues and later collects results; and since each
member has its own worker, a member that hangs (every call waiting out its
timeout) or refuses connections delays nothing but its own tasks — the other
members' observations, creates and deletes run meanwhile. A member's tasks
run one after another, so one member never gets concurrent calls from us.

* **Idempotent.** Create is create-if-absent (409 counts as done), delete is
  delete-if-present (404 counts as done), observe changes nothing — so a task
  that ran but whose result was lost can simply run again.
* **One at a time per key.** :meth:`TaskRunner.submit` refuses a second task
  with the key of one still in flight (``create:member:ns/name``...), so a
  slow member never piles up duplicate work.
* **Retries with backoff.** Writes are enqueued with ``Retry(max, interval)``;
  rq puts a failed attempt in its scheduled registry, and the worker thread
  moves due ones back to the queue every poll. Observations are not retried:
  the next periodic observation is the retry, and a failure is what the
  member's health is made of.

**No secret in Redis, nothing unpickled.** A member's connection details (its
*spec*: ``{"kind": "Kubernetes", "kubeconfig": {...}}`` with a token) stay in
this process: the runner keeps them and a task names the member only by a
*reference* (runner id and member name) that the worker thread, in the same
process, looks up. Jobs are written with rq's JSON serializer, so a worker
never unpickles what is in Redis, and it runs only the functions in
:data:`TASKS` (:class:`kuota.service.worker.AllowedTasksJob`): someone who
can write to the Redis cannot make the operator run their code or read its
member credentials. Results are plain JSON too (an observation as
:meth:`Observation.to_json`). A job queued by an earlier operator process
fails (its reference is unknown here) and is submitted again by this one.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer

from kuota.federation import pool_member
from kuota.federation.kubernetes_member import KubernetesMember
from kuota.federation.member import Body, MemberAdapter
from kuota.service.worker import AllowedTasksJob, ThreadNodeWorker

log = logging.getLogger(__name__)

QUEUE: Final = "kuota-federation"
#: Pause (whole seconds: rq schedules retries by the second) before each retry of a write.
BACKOFF: Final = (1, 2, 4, 8)
RETRIES: Final = 4
#: Longest a remote call may run before rq gives up on it.
TASK_TIMEOUT: Final = 60


class MemberSpecError(ValueError):
    """A member spec the tasks cannot connect with (the message says why)."""


def connection(url: str | None) -> Any:
    """The Redis the task queue lives in: ``url`` (any URL Redis mode takes, a
    ``redis+sentinel://`` one too; ``REDIS_PASSWORD`` honoured), or an in-process
    fakeredis."""
    if url:
        from kuota.service.connection import connect
        return connect(url).raw
    import fakeredis
    return fakeredis.FakeRedis(server=fakeredis.FakeServer())


#: Connection details of members, by reference (``runner-id/member``); never written out.
_SPECS: dict[str, Body] = {}


def _spec(reference: str) -> Body:
    spec = _SPECS.get(reference)
    if spec is None:
        raise MemberSpecError(f"member {reference.partition('/')[2] or reference!r}: no "
                              "connection details in this process (queued by an earlier "
                              "operator process?)")
    return spec


def adapter(spec: Body) -> MemberAdapter:
    """The adapter for a member spec (built in the worker, from plain values)."""
    kind = spec.get("kind")
    if kind == "Kubernetes":
        return KubernetesMember(spec["kubeconfig"])
    if kind == pool_member.KIND:
        return pool_member.PoolMember(spec)
    raise MemberSpecError(f"no member adapter for kind {kind!r}")


# -- the tasks (module-level, so rq can import them by name) ----------------------------------

def observe(member: str, origin: str) -> Body:
    return adapter(_spec(member)).observe(origin).to_json()


def create(member: str, body: Body) -> str:
    return adapter(_spec(member)).create(body)


def delete(member: str, namespace: str, name: str, kind: str = "Job") -> str:
    return adapter(_spec(member)).delete(namespace, name, kind)


def wake() -> None:
    """A no-op that wakes the worker blocked on the queue (to stop it)."""


def _name(func: Callable[..., Any]) -> str:
    return f"{func.__module__}.{func.__qualname__}"


#: What the operator's task threads run, and nothing else.
TASKS: Final = frozenset(_name(f) for f in (observe, create, delete, wake))


# -- running them -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Outcome:
    """A task that ended: its key, whether it succeeded, and its result or error text."""

    key: str
    ok: bool
    value: Any = None
    error: str = ""


@dataclass
class _Lane:
    """One member's queue and the worker thread that runs it."""

    queue: Queue
    worker: ThreadNodeWorker
    thread: threading.Thread


class TaskRunner:
    """Enqueues tasks, runs them in worker threads (one per lane), hands back their outcomes.

    A *lane* is a queue with its own worker thread, made on the lane's first task: the
    federation gives each member its own, so a member that hangs holds up only its own
    tasks — the others' run at once. Tasks of one lane run one after another.
    """

    def __init__(self, connection: Any, *, queue: str = QUEUE, retries: int = RETRIES,
                 backoff: Sequence[int] = BACKOFF, poll: float = 0.1,
                 tasks: Sequence[Callable[..., Any]] = ()) -> None:
        """``tasks``: functions allowed besides :data:`TASKS` (tests' own)."""
        self.connection = connection
        self.id = uuid.uuid4().hex
        allowed = TASKS | {_name(f) for f in tasks}
        self.job_class = type("MemberTaskJob", (AllowedTasksJob,), {"allowed": allowed})
        self.prefix = queue
        self.retries = retries
        self.backoff = [max(1, int(b)) for b in backoff]
        self.poll = poll
        self._jobs: dict[str, Job] = {}
        self._lanes: dict[str, _Lane] = {}
        self._lock = threading.Lock()
        self._started = False
        self._stop = threading.Event()
        self._scheduler: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._stop.clear()
        self._scheduler = threading.Thread(target=self._schedule, daemon=True,
                                           name="federation-retries")
        self._scheduler.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every lane's worker and the retry mover. A worker stuck in a call to a
        hanging member is not waited for past ``timeout`` (its thread is a daemon)."""
        self._stop.set()
        with self._lock:
            lanes = list(self._lanes.values())
            self._lanes.clear()
        for lane in lanes:
            # rq stops on a signal; a thread gets none. Flag it, then wake it with a no-op.
            lane.worker._stop_requested = True
            lane.queue.enqueue(wake, result_ttl=0)
        deadline = time.monotonic() + timeout
        for thread in [lane.thread for lane in lanes] + [self._scheduler]:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        self._scheduler = None
        self._started = False
        self._jobs.clear()
        for reference in [r for r in _SPECS if r.startswith(f"{self.id}/")]:
            del _SPECS[reference]

    def reference(self, member: str, spec: Body) -> str:
        """The name tasks use for ``member``; its spec stays in this process."""
        reference = f"{self.id}/{member}"
        _SPECS[reference] = spec
        return reference

    def queue_name(self, lane: str) -> str:
        return f"{self.prefix}:{lane}" if lane else self.prefix

    def _lane(self, lane: str) -> _Lane:
        with self._lock:
            found = self._lanes.get(lane)
            if found is not None:
                return found
            queue = Queue(self.queue_name(lane), connection=self.connection,
                          serializer=JSONSerializer, job_class=self.job_class)
            worker = ThreadNodeWorker([queue], connection=self.connection,
                                      name=f"kuota-federation-{uuid.uuid4().hex[:8]}",
                                      worker_ttl=16, serializer=JSONSerializer,
                                      job_class=self.job_class)
            thread = threading.Thread(target=self._work, args=(worker,), daemon=True,
                                      name=f"federation-worker-{lane or 'default'}")
            found = self._lanes[lane] = _Lane(queue, worker, thread)
        thread.start()
        return found

    def _work(self, worker: ThreadNodeWorker) -> None:
        try:
            worker.work(burst=False, logging_level="WARNING")
        except Exception:
            log.exception("a federation task worker stopped")

    def _schedule(self) -> None:
        """Move retries that are due back to their lanes' queues."""
        scheduler = RQScheduler([self.prefix], connection=self.connection,
                                serializer=JSONSerializer)
        known: list[str] = []
        while not self._stop.wait(self.poll):
            with self._lock:
                names = sorted(lane.queue.name for lane in self._lanes.values())
            if names != known:
                scheduler.prepare_registries(names)
                known = names
            try:
                scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]
            except Exception:
                log.exception("could not move due retries back to the queue")

    # -- tasks ----------------------------------------------------------------------------------
    def busy(self, key: str) -> bool:
        return key in self._jobs

    def submit(self, key: str, func: Callable[..., Any], *args: Any, retry: bool = True,
               lane: str = "") -> bool:
        """Enqueue ``func(*args)`` on ``lane`` unless a task with ``key`` is still in flight."""
        if key in self._jobs:
            return False
        options: dict[str, Any] = {"job_timeout": TASK_TIMEOUT, "result_ttl": 300,
                                   "failure_ttl": 300, "description": key}
        if retry and self.retries > 0:
            options["retry"] = Retry(max=self.retries, interval=list(self.backoff))
        self._jobs[key] = self._lane(lane).queue.enqueue(func, *args, **options)
        return True

    def collect(self) -> list[Outcome]:
        """The tasks that ended since the last call (successes, and failures after retries)."""
        ended = []
        for key, job in list(self._jobs.items()):
            try:
                status = job.get_status(refresh=True)
            except Exception as exc:  # the job expired or the store is gone: it ended badly
                ended.append(Outcome(key, False, error=f"task lost: {exc}"))
                del self._jobs[key]
                continue
            if status == JobStatus.FINISHED:
                ended.append(Outcome(key, True, job.return_value()))
            elif status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
                result = job.latest_result()
                error = (result.exc_string or "") if result is not None else ""
                ended.append(Outcome(key, False, error=_last_line(error) or str(status)))
            else:
                continue
            del self._jobs[key]
        return ended


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""
