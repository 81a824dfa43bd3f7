"""The pods of one node: start their processes, collect their logs, stop them, report exits.

One supervisor thread per worker owns every pod process of its node. The rq
job (:mod:`kuota.service.pod`) hands it a start request and waits for the
answer; the thread then

* asks the store whether each pod may start (:meth:`PodStore.start`, an atomic
  check that it was not cancelled, evicted or re-placed meanwhile), takes GPU
  devices, and starts the command as a subprocess — an argument list, no
  shell — in its own session, with its output in a log file;
* polls its children: an exit is reported with the exit code
  (:meth:`PodStore.exit`, which also finishes, retries or fails the gang);
* every ``stop_check`` seconds asks the store which running pods must stop
  (evicted, preempted, cancelled, a failed gang mate, a lost node) and
  terminates them: SIGTERM to the process group, SIGKILL after ``grace``;
* ships new log output to Redis every ``log_every`` seconds and at exit;
* every ``reconcile`` seconds compares what the store says this node runs with
  what it really runs. A pod the store still calls Running that has no process
  here lost its exit report (Redis with ``appendfsync everysec`` can drop the
  last second of writes): the exit is sent again from the supervisor's own
  record of recent exits, or — with no record — reported as a failure, so the
  quota and node capacity it holds are released. (The opposite case, a process
  whose pod the store no longer runs, is the stop check's: it is terminated.)
  A lost *start* is the stop check's too: a process whose pod the store calls
  Placed has its start recorded again (the same check-and-set as a first
  start) instead of being killed, and a start job sent again for a pod that
  already runs here, or already exited, never starts a second process. A
  start whose *answer* was lost (the connection dropped after Redis stored it)
  is asked again once Redis answers; the pod then Running on this node's
  incarnation, with no process here, is launched — not reported lost.

Processes are started by this long-lived thread on purpose: on Linux each
child gets ``PR_SET_PDEATHSIG`` = SIGKILL, which fires when the thread that
forked it dies — so a ``kill -9`` of the worker takes its pods with it
instead of leaving orphans that finish a run the scheduler has requeued.
The signal is set by util-linux's ``setpriv --pdeathsig KILL`` in front of
the command when it is installed (the command is then exec'ed in its
place); otherwise by a ``preexec_fn``, which forces Python to fork the whole
worker process for every pod — about ten times slower to start one. Only the
pod's own process gets the signal: grandchildren it leaves behind outlive a
``kill -9`` of the worker (a stop request, though, signals the whole process
group).
"""

from __future__ import annotations

import collections
import ctypes
import functools
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

import redis

from kuota.service.jobs import PodJob
from kuota.service.podusers import PodUsers
from kuota.service.secrecy import pod_environment
from queueing.store import PodPhase, PodRef, Store
from quota.resources import MILLI

log = logging.getLogger(__name__)

T = TypeVar("T")

GPU: str = "nvidia.com/gpu"
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
_SETPRIV = shutil.which("setpriv") if sys.platform == "linux" else None


def _argv(command: Sequence[str]) -> list[str]:
    if _SETPRIV is not None:
        return [_SETPRIV, "--pdeathsig", "KILL", "--", *command]
    return list(command)


@dataclass
class _Running:
    job: PodJob
    ref: PodRef
    proc: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
    devices: list[str]
    #: The pod's own user id (``--pod-uids``), else None: the worker's user.
    uid: int | None = None
    #: time.monotonic() when it was started.
    launched: float = field(default_factory=time.monotonic)
    shipped: int = 0
    stop_requested: bool = False
    kill_at: float | None = None


@dataclass
class _StartRequest:
    job: PodJob
    answer: Future[str] = field(default_factory=Future)


@dataclass(frozen=True)
class SupervisorTiming:
    poll: float = 0.02
    stop_check: float = 0.25
    log_every: float = 0.5
    #: Seconds between SIGTERM and SIGKILL.
    grace: float = 5.0
    #: Seconds between comparisons of the store's pods of this node with its processes.
    reconcile: float = 10.0

#: The exit code reported for a pod the store runs here with no process and no record of
#: its end (as a shell reports a process killed by SIGKILL).
LOST_EXIT_CODE = 137
#: How many recent exits a supervisor remembers, to report one again that the store lost.
EXITS_REMEMBERED = 4096
#: Longest ``KUOTA_PEERS`` given in the environment: Linux refuses to start a program with
#: an environment string over 128 KiB, which a gang of some 10,000 pods would pass. Beyond
#: this, the pod finds its gang mates' nodes in the file ``KUOTA_PEERS_FILE`` instead.
PEERS_IN_ENV = 65_536


@dataclass(frozen=True, slots=True)
class _Exit:
    """An exit as reported to the store, kept to report it again if the store loses it."""

    pod_count: int
    exit_code: int
    stopped: bool
    message: str
    pid: int


class PodSupervisor:
    def __init__(self, store: Store, node: str, *, epoch: Callable[[], int],
                 devices: Sequence[str], log_dir: Path,
                 timing: SupervisorTiming | None = None,
                 clock: Callable[[], float] = time.time,
                 pod_users: PodUsers | None = None,
                 on_death: Callable[[str], None] | None = None) -> None:
        self.store = store
        #: Told, from the pod thread as it dies, why (the worker takes its node out).
        self.on_death = on_death
        #: Why the pod thread died, once it did ("" while it runs or ended as asked).
        self.died = ""
        self.pod_users = pod_users
        self.node = node
        self._epoch = epoch
        self._devices = tuple(devices)
        self._free_devices = list(devices)
        self.log_dir = log_dir
        self.peers_dir = log_dir.parent / f"{log_dir.name}-peers"
        self.timing = timing or SupervisorTiming()
        self.clock = clock
        self._requests: queue.Queue[_StartRequest] = queue.Queue()
        self._running: dict[str, _Running] = {}
        self._stopping = threading.Event()
        self._kill = threading.Event()
        #: kill_all(): pods started before this time.monotonic() must go.
        self._kill_before = 0.0
        #: Set when there is a start request, so the loop does not sleep through it.
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._guarded_loop, name=f"pods-{node}",
                                        daemon=True)
        self._last_stop_check = 0.0
        self._last_log_ship = 0.0
        self._last_reconcile = 0.0
        #: Recent exits as reported, by pod id, oldest first.
        self._exits: collections.OrderedDict[str, _Exit] = collections.OrderedDict()

    # -- called from other threads -------------------------------------------------
    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.pod_users is not None:
            self.log_dir.chmod(0o700)  # pods run as other users: their output is ours alone
        self.peers_dir.mkdir(mode=0o755, exist_ok=True)
        self._thread.start()

    def submit_many(self, jobs: Sequence[PodJob], timeout: float = 60.0) -> list[str]:
        """Ask for pods to start; returns the store's answer for each (``ok``, ``stopped``, …)."""
        if self._stopping.is_set() or self.died:
            raise RuntimeError(self.died or f"node {self.node}: worker is shutting down")
        requests = [_StartRequest(job) for job in jobs]
        for request in requests:
            self._requests.put(request)
        self._wake.set()
        return [request.answer.result(timeout) for request in requests]

    def shutdown(self, timeout: float = 30.0) -> None:
        """Terminate every pod (reported as stopped) and end the thread."""
        self._stopping.set()
        self._thread.join(timeout)

    @property
    def running(self) -> int:
        return len(self._running)

    def kill_all(self) -> None:
        """Terminate every pod started so far (the node was declared lost, or the store lost
        it: they were requeued). Call before registering again: pods started after the call
        are not touched, however late this thread gets to the request — they are the next
        incarnation's (killing one would leave its workload admitted with a stopped pod, for
        good); one sent to the old incarnation meanwhile is refused by the store. Not by
        epoch: after Redis lost a registration, the next one may get the same number."""
        self._kill_before = time.monotonic()
        self._kill.set()

    @property
    def alive(self) -> bool:
        """Is the pod thread running (False before :meth:`start` and after it ended)?"""
        return self._thread.is_alive()

    # -- the thread ----------------------------------------------------------------
    def _guarded_loop(self) -> None:
        """The pod thread. It must never end unnoticed: its processes die with it (their
        parent-death signal), and a node whose pod thread is gone runs nothing while its
        worker heartbeats on. An error nothing foresaw is logged with its traceback, kept
        in :attr:`died`, and told to :attr:`on_death` before the thread ends."""
        try:
            self._loop()
        except Exception as exc:
            self.died = f"the pod thread of node {self.node} died: {type(exc).__name__}: {exc}"
            log.exception("node %s: %s", self.node, self.died)
            self._refuse_requests()
            if self.on_death is not None:
                self.on_death(self.died)

    def _refuse_requests(self) -> None:
        """Answer the start requests left waiting with the reason the thread died."""
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return
            request.answer.set_exception(RuntimeError(self.died))

    def _loop(self) -> None:
        while True:
            stopping = self._stopping.is_set()
            self._take_requests(block=not self._running and not stopping)
            now = self.clock()
            self._reap(now)
            if self._kill.is_set():
                self._kill.clear()
                for pod in self._running.values():
                    if pod.launched <= self._kill_before:
                        self._terminate(pod, now)
            if stopping:
                for pod in self._running.values():
                    self._terminate(pod, now)
                if not self._running:
                    break
            elif now - self._last_stop_check >= self.timing.stop_check and self._running:
                self._last_stop_check = now
                self._check_stops(now)
            if not stopping and now - self._last_reconcile >= self.timing.reconcile:
                self._last_reconcile = now
                self._reconcile(now)
            if now - self._last_log_ship >= self.timing.log_every:
                self._last_log_ship = now
                for pod in self._running.values():
                    self._ship_log(pod)
            self._escalate(now)
            if self._running:
                self._wake.wait(self.timing.poll)
            self._wake.clear()

    def _take_requests(self, *, block: bool) -> None:
        try:
            request = self._requests.get(timeout=0.2) if block else self._requests.get_nowait()
        except queue.Empty:
            return
        while True:
            try:
                request.answer.set_result(self._launch(request.job))
            except Exception as exc:  # handed to the rq job, which fails with it
                log.exception("starting pod %s failed", request.job.pod_id)
                request.answer.set_exception(exc)
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return

    def _launch(self, job: PodJob) -> str:
        ref = PodRef.parse(job.pod_id)
        if job.epoch != self._epoch():
            # Placed on another incarnation of this node (a worker that replaced this one, or
            # one before it): not ours to run, whatever the store would say.
            log.info("pod %s is for epoch %d of node %s, this worker is epoch %d: not started",
                     job.pod_id, job.epoch, self.node, self._epoch())
            return "wrong-node"
        if job.pod_id in self._running or job.pod_id in self._exits:
            again = self._started_before(job, ref)
            if again is not None:
                return again
        wanted = job.requests.get(GPU, 0) // MILLI
        if wanted > len(self._free_devices):
            message = (f"node {self.node} has {len(self._free_devices)} free GPU device(s), "
                       f"the pod needs {wanted}")
            return self._fail_to_start(job, ref, message)
        devices = self._free_devices[:wanted]
        status = self._record_start(job, ref, devices)
        if status != "ok":
            log.info("pod %s not started: %s", job.pod_id, status)
            return status
        del self._free_devices[:wanted]
        cwd = job.working_dir or None
        if cwd is not None and not os.path.isdir(cwd):
            return self._fail_to_start(job, ref, f"working directory {cwd!r} does not exist on "
                                       f"node {self.node}", started=True, devices=devices)
        program = job.command[0]
        if cwd is not None and os.sep in program and not os.path.isabs(program):
            program = os.path.join(cwd, program)  # found where the pod will run, not here
        if shutil.which(program, path=job.env.get("PATH")) is None:
            return self._fail_to_start(job, ref, f"cannot run {job.command[0]!r}: command not "
                                       "found or not executable", started=True,
                                       devices=devices)
        uid = None
        if self.pod_users is not None:
            uid = self.pod_users.take()
            if uid is None:
                return self._fail_to_start(job, ref, f"node {self.node} has no free pod user "
                                           "id (--pod-uids)", started=True, devices=devices)
        log_path = self.log_dir / (job.pod_id.replace("/", "_").replace(":", "_") + ".log")
        # Owner-only: under --pod-uids another pod's user must not read this output.
        log_file = os.fdopen(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                             "wb")
        as_user = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                _argv(job.command), stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, env=self._env(job, ref, devices), cwd=cwd,
                start_new_session=True, close_fds=True,
                preexec_fn=_die_with_parent if _LIBC is not None and _SETPRIV is None else None,
                **as_user)  # type: ignore[call-overload]
        except OSError as exc:
            log_file.close()
            if uid is not None:
                self.pod_users.give(uid)  # type: ignore[union-attr]
            return self._fail_to_start(job, ref, f"cannot run {job.command[0]!r}: {exc.strerror}",
                                       started=True, devices=devices)
        self._running[job.pod_id] = _Running(job, ref, proc, log_path, log_file, devices, uid)
        return "ok"

    def _record_start(self, job: PodJob, ref: PodRef, devices: Sequence[str]) -> str:
        """Record the start (Placed → Running; the store's answer). If the connection drops
        before the answer, Redis may have stored the start: it is asked again once Redis
        answers, and a pod it then calls Running on this node's incarnation, with no process
        here (the caller checked), is this start's — launched, not left for the next
        comparison with the store to report its exit as lost (the workload would fail)."""
        start = functools.partial(self.store.pods.start, ref, node=self.node, epoch=job.epoch,
                                  devices=",".join(devices), now=self.clock())
        try:
            return start()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("node %s: the answer to the start of pod %s was lost (%s); asking "
                        "again", self.node, job.pod_id, exc)
        status = self._persist(start)
        if status == f"state:{PodPhase.RUNNING}":
            record = self._persist(functools.partial(self.store.pods.get, ref))
            if record is not None and record.node == self.node and record.epoch == job.epoch:
                return "ok"
        return status

    def _started_before(self, job: PodJob, ref: PodRef) -> str | None:
        """A start job for a pod this worker already started: the store lost that start
        (Redis rolled back its last second), so the scheduler sent the pod again. It never
        gets a second process: the start is recorded again for the one running (or, if
        that one already exited on its own, its exit is reported again). None: start it
        (its earlier process was stopped before it finished)."""
        running = self._running.get(job.pod_id)
        if running is not None and running.stop_requested:
            # Still terminating: starting it now would run it twice at once. The scheduler
            # sends still-Placed pods again; by then the old process is gone.
            log.info("pod %s is sent again while its earlier process stops: not started yet",
                     job.pod_id)
            return "stopping"
        exited = self._exits.get(job.pod_id) if running is None else None
        if exited is not None and exited.stopped:
            return None
        devices = running.devices if running is not None else []
        status = self.store.pods.start(ref, node=self.node, epoch=job.epoch,
                                       devices=",".join(devices), now=self.clock(),
                                       running=running is not None)
        log.warning("node %s: pod %s was sent again (the store lost its start): %s", self.node,
                    job.pod_id, "recorded its start again" if status == "ok" else status)
        if status == "ok" and exited is not None:
            self._send_exit(ref, exited, self.clock())
        if status == "stop" and running is not None:  # its exit gives the node back
            self._terminate(running, self.clock())
        return status

    def _fail_to_start(self, job: PodJob, ref: PodRef, message: str, *,
                       started: bool = False, devices: Sequence[str] = ()) -> str:
        """Report a pod that could not start as failed (exit 127), with the message as its log."""
        self._free_devices += devices
        if not started:
            status = self.store.pods.start(ref, node=self.node, epoch=job.epoch, devices="",
                                           now=self.clock())
            if status != "ok":
                return status
        self.store.pods.append_log(ref, f"kuota: {message}\n")
        self.store.pods.exit(ref, node=self.node, pod_count=job.pod_count, exit_code=127,
                             stopped=False, message=f"pod {ref.index}: {message}", pid=0,
                             now=self.clock())
        return "failed"

    def _env(self, job: PodJob, ref: PodRef, devices: list[str]) -> dict[str, str]:
        # The worker's environment is not the pod's: it holds the way into the store, with
        # which a job could read and rewrite every workload, log and secret in the pool.
        env = pod_environment(job.env, os.environ)
        peers = ",".join(node for i, node in enumerate(job.peers) if i != ref.index)
        if len(peers) > PEERS_IN_ENV:
            env["KUOTA_PEERS_FILE"] = str(self._peers_file(ref, peers))
            peers = ""
        env.update({
            "KUOTA_WORKLOAD": ref.workload, "KUOTA_POD_INDEX": str(ref.index),
            "KUOTA_POD_COUNT": str(job.pod_count), "KUOTA_PEERS": peers,
            "KUOTA_NODE": self.node, "KUOTA_POD_SET": job.pod_set,
            "KUOTA_ATTEMPT": str(ref.attempt),
        })
        if self._devices:
            # Pods that ask for no GPU see none, as on Kubernetes.
            env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
        return env

    def _peers_file(self, ref: PodRef, peers: str) -> Path:
        """The gang mates' nodes of a pod, one per line, readable by the pod's user (node names
        are no secret); removed when the pod ends."""
        path = self.peers_dir / (ref.id.replace("/", "_").replace(":", "_") + ".peers")
        path.write_text(peers.replace(",", "\n") + "\n")
        path.chmod(0o644)
        return path

    def _reap(self, now: float) -> None:
        for pod_id, pod in list(self._running.items()):
            code = pod.proc.poll()
            if code is None:
                continue
            del self._running[pod_id]
            pod.log_file.close()
            if pod.uid is not None and self.pod_users is not None:
                self.pod_users.give(pod.uid)
            while self._ship_log(pod, wait=True):  # the rest of the output, however long
                pass
            pod.log_path.unlink(missing_ok=True)
            (self.peers_dir / (pod.log_path.stem + ".peers")).unlink(missing_ok=True)
            self._free_devices += pod.devices  # before the report frees the node's capacity
            message = (f"pod {pod.ref.index} on {self.node} exited with {code}"
                       if code >= 0 else
                       f"pod {pod.ref.index} on {self.node} killed by signal {-code}")
            report = _Exit(pod.job.pod_count, code, pod.stop_requested, message, pod.proc.pid)
            self._exits[pod_id] = report
            while len(self._exits) > EXITS_REMEMBERED:
                self._exits.popitem(last=False)
            # An exit must be recorded even across a Redis outage: the gang's fate hangs on it.
            status = self._persist(functools.partial(self._send_exit, pod.ref, report, now))
            log.info("pod %s exited %s (%s)", pod_id, code, status)

    def _send_exit(self, ref: PodRef, report: _Exit, now: float) -> str:
        return self.store.pods.exit(ref, node=self.node, pod_count=report.pod_count,
                                    exit_code=report.exit_code, stopped=report.stopped,
                                    message=report.message, pid=report.pid, now=now)

    def _reconcile(self, now: float) -> None:
        """Report again the exits of pods the store still believes run here."""
        try:
            refs = [r for r in self.store.pods.on_node(self.node) if r.id not in self._running]
            records = self.store.pods.get_many(refs)
            epoch = self._epoch()
            for ref, record in zip(refs, records, strict=True):
                if (record is None or record.state is not PodPhase.RUNNING
                        or record.node != self.node or record.epoch != epoch):
                    continue  # placed and not started yet, or not this incarnation's
                report = self._exits.get(ref.id) or self._lost_exit(ref)
                log.warning("node %s: the store lost the exit of pod %s; reporting it again",
                            self.node, ref.id)
                self._send_exit(ref, report, now)
        except redis.RedisError as exc:  # compared again at the next round
            log.warning("node %s: cannot compare pods with the store: %s", self.node, exc)

    def _lost_exit(self, ref: PodRef) -> _Exit:
        """The exit reported for a pod the store runs here with no process and no record of
        its end. Its gang's size comes from the workload's record; a record gone or
        unreadable (written around kuota) counts the gang up to this pod."""
        workload = self.store.workloads.find(ref.workload)
        pods = len(workload.pod_refs()) if workload is not None and not workload.corrupt \
            else 0
        return _Exit(max(pods, ref.index + 1), LOST_EXIT_CODE, False,
                     f"pod {ref.index}: node {self.node} runs no process for it (its exit "
                     "report was lost)", 0)

    def _persist(self, write: Callable[[], T]) -> T:
        delay = 0.1
        while True:
            try:
                return write()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("node %s: redis unavailable (%s); retrying in %.1fs",
                            self.node, exc, delay)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _check_stops(self, now: float) -> None:
        pods = [p for p in self._running.values() if not p.stop_requested]
        if not pods:
            return
        try:
            answers = self.store.pods.should_stop([p.ref for p in pods])
        except redis.RedisError as exc:  # asked again at the next check
            log.warning("node %s: cannot check for stop requests: %s", self.node, exc)
            return
        for pod, stop in zip(pods, answers, strict=True):
            if stop and not self._restarted(pod, now):
                log.info("stopping pod %s on request", pod.job.pod_id)
                self._terminate(pod, now)

    def _restarted(self, pod: _Running, now: float) -> bool:
        """Before stopping a pod the store asks to stop or does not call Running: if it calls
        it Placed, the start was lost (Redis rolled back its last second) and is recorded
        again — the same check-and-set as a first start, so only if the pod may still run.
        True: it runs on. Otherwise (asked to stop, evicted, another incarnation, no such
        pod) the caller stops it. Killing a pod whose start was lost would leave its
        workload admitted for good, waiting for a pod that had been stopped. (A Placed pod
        that was also asked to stop stays Placed, holding its node and its workload's
        quota, until the exit of its process is reported.)"""
        try:
            status = self.store.pods.start(pod.ref, node=self.node, epoch=pod.job.epoch,
                                           devices=",".join(pod.devices), now=now,
                                           running=True)
        except redis.RedisError as exc:  # asked again at the next check
            log.warning("node %s: cannot check pod %s: %s", self.node, pod.job.pod_id, exc)
            return True
        if status == "ok":
            log.warning("node %s: the store lost the start of pod %s; recorded it again",
                        self.node, pod.job.pod_id)
        return status == "ok"

    def _terminate(self, pod: _Running, now: float) -> None:
        if pod.stop_requested:
            return
        pod.stop_requested = True
        pod.kill_at = now + self.timing.grace
        self._signal(pod, signal.SIGTERM)

    def _escalate(self, now: float) -> None:
        for pod in self._running.values():
            if pod.kill_at is not None and now >= pod.kill_at:
                pod.kill_at = None
                self._signal(pod, signal.SIGKILL)

    @staticmethod
    def _signal(pod: _Running, sig: signal.Signals) -> None:
        try:
            os.killpg(pod.proc.pid, sig)
        except ProcessLookupError:  # already gone; the next poll reaps it
            log.debug("pod %s exited before %s", pod.job.pod_id, sig.name)

    def _ship_log(self, pod: _Running, *, wait: bool = False) -> bool:
        """Send up to 1 MiB of new output; True if some was sent. ``wait``: across outages."""
        try:
            with open(pod.log_path, "rb") as f:
                f.seek(pod.shipped)
                data = f.read(1 << 20)
        except FileNotFoundError:
            return False
        if not data:
            return False
        text = data.decode("utf-8", errors="replace")
        if wait:
            self._persist(functools.partial(self.store.pods.append_log, pod.ref, text))
        else:
            try:
                self.store.pods.append_log(pod.ref, text)
            except redis.RedisError as exc:  # still in the file; sent with the next chunk
                log.warning("node %s: cannot send logs of %s: %s", self.node, pod.job.pod_id,
                            exc)
                return False
        pod.shipped += len(data)
        return True
