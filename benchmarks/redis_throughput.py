"""Redis mode against a real redis-server: kuota's throughput next to plain rq's, and
Kueue's baseline shape in real time.

1. **Throughput.** N one-pod no-op workloads (default 2,000, the command ``true``)
   through kuota — submit → admit → place → run → finish, with ``kuota scheduler``
   and W ``kuota worker`` processes — versus the same N jobs through plain rq on the
   same Redis with W ``rq worker`` processes of the same class (rq's
   ``SimpleWorker``, as kuota's workers are), each job running the same command as a
   subprocess. Quota and node capacity are large enough never to be the limit, so
   this measures what admission, placement and the pod lifecycle add per job.
   Prints both throughputs and their ratio (target: kuota >= 0.7x plain rq), and
   plain rq with a pure-Python no-op job for reference.
2. **Kueue's baseline shape in real time** (``--baseline``): the shape of
   benchmarks/simulate_kueue_baseline.py submitted at its arrival times to a running
   ``kuota scheduler``; admitted pods are placed on one large node whose "worker"
   starts each pod through the store and reports it finished after the workload's
   runtime, without processes. Prints wall time, mean time to admission per class
   and the minimum ClusterQueue usage next to the virtual-time run of the same
   shape (target: wall within 15 %).

Usage::

    python benchmarks/redis_throughput.py [--workloads 2000] [--workers 4]
    python benchmarks/redis_throughput.py --baseline [--baseline-scale 1.0] [--skip-throughput]

Starts its own redis-server on a free port of 127.0.0.1 unless ``--redis URL`` is given.
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from rq import Queue, Worker
from rq.exceptions import DequeueTimeout
from rq.registry import FinishedJobRegistry
from rq.serializers import JSONSerializer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.procstat import MachineCPU, cpu_seconds, machine_line, peak_rss  # noqa: E402
from kuota.client import Client  # noqa: E402
from kuota.service import submission  # noqa: E402
from kuota.service.connection import connect  # noqa: E402
from kuota.service.jobs import decode, node_queue  # noqa: E402
from queueing.store import PodRef, Store  # noqa: E402
from queueing.store.pods import PodExit, PodStart  # noqa: E402
from queueing.store.workloads import PreparedSubmission, SubmitRequest  # noqa: E402

BIN = Path(sys.executable).parent
#: Submissions sent in one pipeline by the real-time runs' submitter, at most.
SEND_MOST = 500


# -- jobs for plain rq (imported by the rq workers by name) ----------------------------------

def run_true() -> int:
    return subprocess.run(["true"], check=True).returncode


def noop() -> None:
    return None


# -- processes ----------------------------------------------------------------------------

@contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed; give --redis URL")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="kuota-bench-")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


class Children:
    def __init__(self, url: str, prefix: str) -> None:
        self.env = {**os.environ, "REDIS_URL": url, "KUOTA_PREFIX": prefix,
                    "PYTHONPATH": str(REPO)}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logdir = Path(tempfile.mkdtemp(prefix="kuota-bench-logs-"))

    def start(self, name: str, argv: list[str]) -> None:
        out = open(self.logdir / f"{name}.log", "wb")  # noqa: SIM115 — owned by the child
        self.procs.append(subprocess.Popen(argv, cwd=REPO, env=self.env, stdout=out,
                                           stderr=subprocess.STDOUT))

    def kuota(self, name: str, *args: str) -> None:
        self.start(name, [sys.executable, "-m", "kuota.cli", *args])

    def lines(self, name: str, containing: str) -> list[str]:
        """The lines of child ``name``'s log that contain ``containing`` (read before
        :meth:`stop`, which deletes the logs)."""
        text = (self.logdir / f"{name}.log").read_text(errors="replace")
        return [line for line in text.splitlines() if containing in line]

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.logdir, ignore_errors=True)


def wait_until(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {what}")
        time.sleep(0.02)


def queue_yaml(cpu: int, namespaces: list[str] | None = None) -> str:
    return f"""
apiVersion: kuota.dev/v1alpha1
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kuota.dev/v1alpha1
kind: ClusterQueue
metadata: {{name: bench}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: {cpu}}}]
---
apiVersion: kuota.dev/v1alpha1
kind: LocalQueue
metadata: {{name: lq, namespace: default}}
spec: {{clusterQueue: bench}}
"""


class Finished:
    """Whether every workload of a run has finished, asked cheaply so that the benchmark's
    own reads do not slow down what it measures: a run has a key prefix of its own, so its
    workloads are all there is in the store's index of unfinished workloads, and a poll is
    one ``ZCARD`` of it (re-reading a window of states was a pipeline of 1,000 commands
    every 0.2 s, a sixth of the benchmark process's CPU while the scheduler drained).
    Figures come from the stored records, so polling late changes none of them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def all(self) -> bool:
        left = int(self.store.redis.zcard(self.store.keys.unfinished))
        if left:
            time.sleep(0.2)
        return not left


# -- 1. throughput ------------------------------------------------------------------------

def kuota_throughput(url: str, n: int, workers: int, node_cpu: int, batch: float) -> float:
    prefix = f"bench{uuid.uuid4().hex[:6]}"
    client = Client(connection=connect(url, prefix=prefix))
    client.apply(queue_yaml(cpu=10 * n))
    children = Children(url, prefix)
    try:
        children.kuota("scheduler", "scheduler", "--log-level", "WARNING", "--batch", str(batch))
        for i in range(workers):
            children.kuota(f"w{i}", "worker", "--pool", "bench", "--node", f"w{i}",
                           "--resources", f"cpu={node_cpu}", "--log-level", "WARNING")
        wait_until("workers", lambda: len(client.store.nodes.names()) == workers, 60)
        wait_until("a leader", lambda: client.store.redis.get(client.store.keys.lease), 60)
        manifests = [submission.from_args(["true"], queue="default/lq", name=f"noop-{i}",
                                          requests={"cpu": "1"}) for i in range(n)]
        checked = [submission.check(m, {}) for m in manifests]  # validation is not timed
        start = time.perf_counter()
        for c in checked:
            client.store.workloads.submit(c.key, spec=c.manifest, queue=c.queue,
                                          priority=c.priority, backoff_limit=0,
                                          submission=uuid.uuid4().hex, now=time.time())
        keys = [c.key for c in checked]
        wait_until("every workload to finish", Finished(client.store).all, 600)
        elapsed = time.perf_counter() - start
        failed = [r.key for r in client.store.workloads.get_many(keys).values()
                  if r.outcome != "Succeeded"]
        if failed:
            sys.exit(f"{len(failed)} workloads did not succeed, e.g. {failed[:3]}")
        return n / elapsed
    finally:
        children.stop()
        client.store.reset()


def rq_throughput(url: str, n: int, workers: int, job: str) -> float:
    name = f"bench-rq-{uuid.uuid4().hex[:6]}"
    raw = redis.Redis.from_url(url)
    children = Children(url, "unused")
    queue = Queue(name, connection=raw)
    try:
        for i in range(workers):
            children.start(f"rq{i}", [str(BIN / "rq"), "worker", "--url", url, "--worker-class",
                                      "rq.SimpleWorker", "--logging_level", "WARNING", name])
        wait_until("rq workers", lambda: Worker.count(queue=queue) == workers, 60)
        start = time.perf_counter()
        for _ in range(n):
            queue.enqueue(job, result_ttl=600)
        registry = FinishedJobRegistry(queue=queue)
        wait_until("every job to finish", lambda: registry.count == n, 600)
        return n / (time.perf_counter() - start)
    finally:
        children.stop()
        queue.empty()
        for key in raw.scan_iter(match=f"rq:*{name}*"):
            raw.delete(key)


# -- 2. Kueue's baseline shape in real time ------------------------------------------------

class TimedRunner:
    """A node whose pods run for their workload's runtime without processes."""

    def __init__(self, url: str, store: Store, node: str, runtimes: dict[str, float]) -> None:
        self.store, self.node, self.runtimes = store, node, runtimes
        self.raw = redis.Redis.from_url(url)
        self.epoch = store.nodes.register(node, pool="bench", capacity={"cpu": 10**12},
                                          labels={}, devices=[], now=time.time())
        self.queue = node_queue(self.raw, store.keys, node)
        self.stop = threading.Event()
        self._due: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self.job_ids: list[str] = []
        self.failure: BaseException | None = None
        self.threads = [threading.Thread(target=self._guard, args=(f,), daemon=True)
                        for f in (self._take, self._finish, self._beat)]
        for thread in self.threads:
            thread.start()

    def _guard(self, loop: Any) -> None:
        try:
            loop()
        except BaseException as exc:  # ends the run: the benchmark cannot go on without it
            traceback.print_exc()
            self.failure = exc
            self.stop.set()

    def _take(self) -> None:
        while not self.stop.is_set():
            try:
                got = Queue.dequeue_any([self.queue], timeout=1, connection=self.raw,
                                        serializer=JSONSerializer)
            except DequeueTimeout:
                continue
            if got is None:
                continue
            job, _ = got
            self.job_ids.append(job.id)
            # One start job carries the pods of a round: started in one round trip, as a
            # runner hosting many pods would.
            starts = [PodStart(PodRef.parse(pod.pod_id), self.node, pod.epoch)
                      for pod in decode(*job.args)]
            now = time.time()
            statuses = self.store.pods.start_many(starts, now)
            with self._lock:
                for start, status in zip(starts, statuses, strict=True):
                    if status == "ok":
                        heapq.heappush(self._due, (now + self.runtimes[start.ref.workload],
                                                   start.ref.id))

    def _finish(self) -> None:
        while not self.stop.is_set():
            now = time.time()
            ready = []
            with self._lock:
                while self._due and self._due[0][0] <= now:
                    ready.append(heapq.heappop(self._due)[1])
            if ready:
                self.store.pods.exit_many([PodExit(PodRef.parse(pod_id), self.node, 1, 0)
                                           for pod_id in ready], now)
            time.sleep(0.002)

    def _beat(self) -> None:
        while not self.stop.wait(2.0):
            self.store.nodes.heartbeat(self.node, self.epoch)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)
        for start in range(0, len(self.job_ids), 500):
            self.raw.delete(*(f"rq:job:{j}" for j in self.job_ids[start:start + 500]))


def realtime_baseline(url: str, scale: float, batch: float, *, shape: Any = None,
                      preemption: bool = False, scheduler_args: tuple[str, ...] = (),
                      ready: Callable[[], object] | None = None) -> dict[str, Any]:
    """One of Kueue's shapes (default its baseline) submitted at its arrival times to a
    running ``kuota scheduler``; figures as :func:`_baseline_figures` gives them, the
    scheduler's CPU seconds and peak RSS, and what the whole machine spent meanwhile
    (:class:`MachineCPU`). ``ready`` is called, when given, just before the clock starts
    (runs side by side wait there for each other)."""
    from benchmarks.simulate_kueue_baseline import BASELINE, baseline

    shape = shape or BASELINE
    generated = baseline(count_scale=scale, shape=shape, preemption=preemption)
    prefix = f"kueue{uuid.uuid4().hex[:6]}"
    client = Client(connection=connect(url, prefix=prefix))
    client.apply(generated["objects"])
    requests: list[tuple[float, SubmitRequest]] = []
    runtimes: dict[str, float] = {}
    for wl in generated["workloads"]:
        cpu = wl["podSets"][0]["requests"]["cpu"]
        manifest = submission.from_args(["true"], queue=f"{wl['namespace']}/{wl['queueName']}",
                                        name=wl["name"], requests={"cpu": cpu},
                                        priority=wl["priority"])
        c = submission.check(manifest, {})
        requests.append((wl["arrival"], SubmitRequest(c.key, c.manifest, c.queue, c.priority,
                                                      0, c.key)))
        runtimes[c.key] = wl["duration"]
    requests.sort(key=lambda a: (a[0], a[1].key))
    # Made ready before the clock starts, as Kueue's generator has its objects: the
    # submitter stands in for many clients on other machines, and what it would spend
    # encoding and hashing specs here is taken from the scheduler's cores.
    arrivals = list(zip((at for at, _ in requests),
                        client.store.workloads.prepare([r for _, r in requests]), strict=True))
    # The submitter is a process of its own, forked before the runner's threads start: in
    # this one it would share the interpreter's lock with them, and fall behind the pace
    # whenever a wave of pods ends.
    fork = multiprocessing.get_context("fork")
    start, started = fork.Pipe(duplex=False)
    sender = fork.Process(target=_send_paced, args=(url, prefix, arrivals, start), daemon=True)
    sender.start()
    runner = TimedRunner(url, client.store, "bench-node", runtimes)
    children = Children(url, prefix)
    metrics_port = free_port()
    try:
        children.kuota("scheduler", "scheduler", "--log-level", "WARNING", "--batch", str(batch),
                       "--metrics-listen", f"127.0.0.1:{metrics_port}", *scheduler_args)
        wait_until("a leader", lambda: client.store.redis.get(client.store.keys.lease), 60)
        scheduler = children.procs[-1].pid
        terms = Terms(client.store)
        machine = MachineCPU(client.store.redis, scheduler)
        # (the stages' seconds before the clock starts: the leader's idle steps since its
        # start are not the run's)
        wait_until("the scheduler's metrics", lambda: _stages(metrics_port) is not None, 30)
        stages_before = _stages(metrics_port) or {}
        if ready is not None:
            ready()
        t0 = time.time()
        started.send(t0)
        while sender.is_alive():
            terms.look()
            machine.sample()
            sender.join(0.05)
        if sender.exitcode != 0:
            sys.exit(f"the submitter failed (exit code {sender.exitcode})")
        machine.submitter_done()
        keys = [p.key for _, p in arrivals]
        done = Finished(client.store)

        def ended() -> bool:
            terms.look()
            machine.sample()
            return runner.failure is not None or done.all()

        wait_until("every workload to finish", ended, 3600)
        spent = machine.spent()  # (before the figures are read)
        steps = step_figures(metrics_port)
        steps["stages"] = {stage: seconds - stages_before.get(stage, 0.0)
                           for stage, seconds in steps["stages"].items()}
        if runner.failure is not None:
            sys.exit(f"the timed runner failed: {runner.failure!r}")
        due = {p.key: at for at, p in arrivals}
        figures = _baseline_figures(client.store, keys, t0, shape.classes, due)
        figures.update(cpu=cpu_seconds(scheduler), rss=peak_rss(scheduler),
                       terms=len(terms.seen), machine=spent, cores=machine.timeline(),
                       slow_steps=children.lines("scheduler", "slow step"), **steps)
        return figures
    finally:
        sender.kill()
        runner.close()
        children.stop()
        client.store.reset()


def _send_paced(url: str, prefix: str, arrivals: list[tuple[float, PreparedSubmission]],
                start: Any) -> None:
    """Submit each workload at its arrival time after the t0 ``start`` gives, in pipelines
    of :data:`SEND_MOST`, each stamped with the time it is sent.

    Every submission's call to the store's submit script is encoded for the wire before
    the clock starts, its time left as a mark that the send fills in: 2 µs of this
    process's CPU each, not 24 (redis-py encoding some 40 arguments). Kueue's shape
    sends 24,000 a second at the start; at 24 µs each the submitter alone took half a
    core from the scheduler and Redis during the burst, for clients that would run
    elsewhere. Redis runs the same script with the same arguments either way."""
    from queueing.store import lua

    redis_ = connect(url, prefix=prefix).store.redis
    sha = redis_.script_load(lua.source("submit"))
    conn = redis_.connection_pool.get_connection()
    mark = "@" * len(f"{time.time():.6f}")  # as wide as the times it stands for
    wire = []
    for _, prepared in arrivals:
        keys, args = prepared.call(mark)  # type: ignore[arg-type]
        packed = b"".join(conn.pack_command("EVALSHA", sha, len(keys), *keys, *args))
        before, found, after = packed.partition(mark.encode())
        assert found, "the time's mark is not in the encoded call"
        wire.append((before, after))
    t0 = start.recv()
    submitted = 0
    while submitted < len(arrivals):
        now = time.time()
        due: list[tuple[bytes, bytes]] = []
        while submitted < len(arrivals) and arrivals[submitted][0] <= now - t0 \
                and len(due) < SEND_MOST:
            due.append(wire[submitted])
            submitted += 1
        if due:
            stamp = f"{now:.6f}".encode()
            conn.send_packed_command([b"".join(before + stamp + after for before, after in due)])
            for _ in due:
                answer = conn.read_response()
                if answer not in (b"ok", "ok"):
                    raise RuntimeError(f"the submit script answered {answer!r}")
        else:
            time.sleep(min(0.005, max(0.0, t0 + arrivals[submitted][0] - now)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: The scheduler's metric of seconds per stage of its steps, one sample per stage.
STAGE_SAMPLE = re.compile(r'kuota_scheduler_step_stage_seconds_total\{stage="([^"]+)"\}')


def step_figures(port: int) -> dict[str, Any]:
    """The scheduler's leader steps, from its /metrics: how many, the longest, and the
    seconds spent in each stage of them (``stages``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        samples = dict(line.rsplit(" ", 1) for line in answer.read().decode().splitlines()
                       if line and not line.startswith("#"))
    stages = {m.group(1): float(value) for name, value in samples.items()
              if (m := STAGE_SAMPLE.fullmatch(name))}
    return {"steps": float(samples["kuota_scheduler_step_duration_seconds_count"]),
            "longest_step": float(samples["kuota_scheduler_step_longest_seconds"]),
            "stages": stages}


def _stages(port: int) -> dict[str, float] | None:
    """The stages' seconds so far (:func:`step_figures`), or None while the scheduler's
    metrics cannot be read or count no stage yet."""
    try:
        stages: dict[str, float] = step_figures(port)["stages"]
    except (OSError, KeyError):  # (not listening yet; no step observed yet)
        return None
    return stages or None


def stages_line(stages: dict[str, float]) -> str:
    """Each stage's share of the leader's steps, largest first (:func:`step_figures`)."""
    total = sum(stages.values()) or 1.0
    return ", ".join(f"{stage} {100 * seconds / total:.0f} %"
                     for stage, seconds in sorted(stages.items(), key=lambda kv: -kv[1])
                     if seconds / total >= 0.005)


class Terms:
    """The lease holders seen during a run (one per term: more than one means the leader
    lost its lease)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seen: set[str] = set()
        self._at = 0.0

    def look(self) -> None:
        if time.monotonic() - self._at >= 0.2:
            self._at = time.monotonic()
            holder = self.store.redis.get(self.store.keys.lease)
            if holder:
                self.seen.add(holder)


def _baseline_figures(store: Store, keys: list[str], t0: float, classes: Any,
                      due: dict[str, float] | None = None) -> dict[str, Any]:
    """Wall, mean time to admission per class and min ClusterQueue usage, as Kueue's
    checker computes them; and per class, what its time to admission is made of
    (``timeline``): how late the submitter sent it (mean), when its admissions reached 10 /
    50 / 90 % (seconds from the start), and how much longer than its run time a workload
    held its quota (median; admission to its pod's recorded end, first admissions only)."""
    from benchmarks.simulate_kueue_baseline import deciles

    records = store.workloads.get_many(keys)
    pipe = store.redis.pipeline(transaction=False)
    for key in keys:
        pipe.lrange(store.keys.history(key), 0, -1)
    waits: dict[str, list[float]] = defaultdict(list)
    admitted_at: dict[str, list[float]] = defaultdict(list)
    late: dict[str, list[float]] = defaultdict(list)
    evicted: dict[str, int] = defaultdict(int)
    held_over: dict[str, list[float]] = defaultdict(list)
    used: dict[str, float] = defaultdict(float)
    end = max(r.finished_at or 0.0 for r in records.values())
    wall = end - t0
    for key, history in zip(keys, pipe.execute(), strict=True):
        record = records[key]
        cls = key.split("/")[1].split("-")[0]
        spec = next(c for c in classes if c[0] == cls)
        events = [json.loads(e) for e in history]
        admissions = [e["at"] for e in events if e["event"] == "Admitted"]
        evicted[cls] += sum(e["event"] == "Evicted" for e in events)
        waits[cls].append(admissions[0] - record.created)
        admitted_at[cls].append(admissions[0] - t0)
        if due is not None:
            late[cls].append(record.created - t0 - due[key])
        if len(admissions) == 1 and record.finished_at:
            held_over[cls].append(record.finished_at - admissions[0] - spec[4])
        used[key.split("/")[0]] += spec[3] * spec[4]

    timeline = {cls: {"late": statistics.fmean(late[cls]) if late[cls] else float("nan"),
                      "admitted": deciles(admitted_at[cls]),
                      "held_over": statistics.median(held_over[cls] or [float("nan")]),
                      "evicted": evicted[cls]}
                for cls in waits}
    return {"wall": wall, "waits": {k: sum(v) / len(v) for k, v in waits.items()},
            "min_usage": min(v / (20 * wall) for v in used.values()), "admitted": len(keys),
            "timeline": timeline}


# -- main ---------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--redis", default=None, help="use this Redis instead of starting one")
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--node-cpu", type=int, default=8,
                        help="CPUs of each kuota worker's node; pods ask for 1 (default 8)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="alternating runs of each; the medians are compared (default 3)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--batch", type=float, default=0.01,
                        help="the scheduler's --batch (shortest time between rounds)")
    parser.add_argument("--baseline", action="store_true",
                        help="also run Kueue's baseline shape in real time (about a minute "
                             "per 1.0 of --baseline-scale)")
    parser.add_argument("--baseline-scale", type=float, default=1.0,
                        help="fraction of the shape's workloads (arrival times unchanged)")
    args = parser.parse_args()
    with redis_server(args.redis) as url:
        if not args.skip_throughput:
            n, w = args.workloads, args.workers
            print(f"== throughput: {n} one-pod no-op workloads, {w} workers, real Redis "
                  f"(kuota nodes of cpu={args.node_cpu}, pods of cpu=1); median of "
                  f"{args.repeat} alternating runs")
            kuota_runs, plain_runs = [], []
            for _ in range(args.repeat):  # alternate, so a busy machine hurts both alike
                kuota_runs.append(kuota_throughput(url, n, w, args.node_cpu, args.batch))
                plain_runs.append(rq_throughput(url, n, w, "benchmarks.redis_throughput.run_true"))
            kuota, plain = statistics.median(kuota_runs), statistics.median(plain_runs)
            runs = lambda xs: ", ".join(f"{x:.0f}" for x in xs)  # noqa: E731
            print(f"  kuota (submit → admit → place → run `true` → finish)   {kuota:8.1f} /s"
                  f"   runs: {runs(kuota_runs)}")
            print(f"  plain rq, SimpleWorker, job runs `true`               {plain:8.1f} /s"
                  f"   runs: {runs(plain_runs)}")
            print(f"  ratio kuota / plain rq                                 {kuota / plain:8.2f}"
                  "  (target >= 0.7)")
            python_noop = rq_throughput(url, n, w, "benchmarks.redis_throughput.noop")
            print(f"  (reference: plain rq, pure-Python no-op job           {python_noop:8.1f} /s)")
        if args.baseline:
            from benchmarks.simulate_kueue_baseline import run as virtual_run

            virtual = virtual_run(count_scale=args.baseline_scale, preemption=False)
            real = realtime_baseline(url, args.baseline_scale, args.batch)
            print(f"== Kueue's baseline shape in real time (scale {args.baseline_scale:g}, "
                  f"{real['admitted']} workloads)")
            print(f"  {'':24}{'real time':>12}{'virtual':>12}")
            print(f"  {'wall time':24}{real['wall']:11.1f}s{virtual['wall']:11.1f}s"
                  f"   ({100 * (real['wall'] / virtual['wall'] - 1):+.1f} %, target within 15 %)")
            for cls in ("large", "medium", "small"):
                print(f"  {'time to admission ' + cls:24}{real['waits'].get(cls, 0):11.2f}s"
                      f"{virtual['waits'].get(cls, 0):11.2f}s")
            print(f"  {'min ClusterQueue usage':24}{100 * real['min_usage']:11.1f}%"
                  f"{100 * virtual['min_usage']:11.1f}%")
            print(f"  machine CPU: {machine_line(real['machine'])}")


if __name__ == "__main__":
    main()
