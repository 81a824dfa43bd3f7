"""Chaos (issue 12, scope 2): 300 jobs while the leader, workers and Redis are killed.

A real redis-server runs with ``appendonly yes`` and ``appendfsync everysec``;
two ``kuota scheduler`` processes (a leader and a standby, lease TTL 1 s) and
three ``kuota worker`` processes (``--reconcile 0.5``) serve three
ClusterQueues, two of them borrowing from each other in a cohort. A thread
submits 300 jobs — one to three pods of 1–2 cpu, sleeping 0.05–0.4 s, some
exiting 3 — while the test, five times each in a seeded order (``SEED``;
``KUOTA_CHAOS_SEED`` explores others),

* kills the leader with SIGKILL (the standby takes over; a new standby starts),
* kills a worker with SIGKILL and starts it again under the same ``--node``
  with ``--replace`` (its pods die with it; the new incarnation fences the old),
* crashes Redis losing its last second of writes (:class:`chaos.LossyRedis`:
  the AOF is cut back to its length of a second before the SIGKILL — what a
  machine crash under ``everysec`` loses); as the seed says, that second also
  holds a worker's kill and new registration or a leader's kill and its
  successor's first term (the loss then spans that recovery).

Between two faults it waits for ten more jobs to finish, or three seconds. Then,
from what the pods themselves recorded (``chaos.read_runs``) and what the
store says:

* every acknowledged job finished — Succeeded, or Failed with the exit code it
  chose — or its submission was lost with the crashed Redis, which may only
  happen to a job acknowledged in the lost span before a crash; the product
  names it lost when asked for it (its submitter's journal; docs/redis-mode.md,
  what Redis keeps across its own crash);
* no job ran twice at the same time (two attempts, or one pod twice);
* the pods running at any instant never held more than a node's capacity, nor
  more than a ClusterQueue's nominal quota plus what it may borrow (a workload
  holds its quota until its pods are gone, even while they stop); and the
  store never counted more admitted usage than that (sampled during the run);
* at the end no quota is held (``kuota get cq -o json``) and no node holds a pod.

The 1000-job variant (45 faults) is marked slow.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from chaos import (
    LossyRedis,
    overlapping_runs,
    peak_usage,
    pod_command,
    read_runs,
)
from harness import CQ, REPO, Processes, QuotaChecker, queues, wait_for

from kuota.client import Client
from kuota.service.connection import connect
from queueing.store import AlreadyExists, NotFound, PodRef
from quota.lifecycle import State

pytestmark = pytest.mark.redis

T = TypeVar("T")

#: What gets killed when, and the jobs' shapes (KUOTA_CHAOS_SEED explores others).
SEED = int(os.environ.get("KUOTA_CHAOS_SEED", "20261124"))
PREFIX = "chaos"
NODE_CPU = 3
NODES = ("n1", "n2", "n3")
CQS = (CQ("cq-a", {"cpu": 4}, cohort="co", borrowing_limit={"cpu": 1}),
       CQ("cq-b", {"cpu": 3}, cohort="co", borrowing_limit={"cpu": 1}),
       CQ("cq-c", {"cpu": 2}))
#: Most cpu a ClusterQueue may hold: nominal quota + borrowing limit.
LIMITS = {cq.name: int(cq.nominal["cpu"]) + int((cq.borrowing_limit or {}).get("cpu", 0))
          for cq in CQS}
#: Seconds of writes a crashed Redis loses (appendfsync everysec: about one).
LOST_SECONDS = 1.0
#: Above the longest Redis outage plus the heartbeats it rolls back, so a Redis crash
#: alone never makes the scheduler declare a live worker lost.
NODE_TIMEOUT = 5.0
#: Seconds between submissions: they go on through most of the faults.
SUBMIT_EVERY = 0.1


@dataclass(frozen=True)
class Job:
    name: str
    cq: str
    count: int
    cpu: int
    seconds: float
    exit_code: int


def make_jobs(rng: random.Random, n: int) -> list[Job]:
    jobs = []
    for i in range(n):
        cq = rng.choice(CQS).name
        count = rng.choice((1, 1, 1, 2, 3))
        cpu = rng.choice((1, 1, 2))
        while count * cpu > LIMITS[cq]:  # every job must fit its queue
            count -= 1
        jobs.append(Job(f"job-{i:03d}", cq, count, cpu, round(rng.uniform(0.05, 0.4), 3),
                        3 if rng.random() < 0.08 else 0))
    return jobs


def retrying(call: Callable[[], T], timeout: float = 30.0) -> T:
    """``call()``, again while Redis restarts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Submitter(threading.Thread):
    """Submits every job, retrying across Redis restarts; notes when each was acknowledged."""

    def __init__(self, client: Client, jobs: list[Job], runs: Path, every: float) -> None:
        super().__init__(daemon=True)
        self.client, self.jobs, self.runs, self.every = client, jobs, runs, every
        self.acked: dict[str, float] = {}
        #: Acknowledged only as "already exists" on a retry: the stored try went unnoted.
        self.retried: set[str] = set()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for job in self.jobs:
                self._submit(job)
                time.sleep(self.every)
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _submit(self, job: Job) -> None:
        while True:
            try:
                self.client.submit(pod_command(self.runs, job.seconds, job.exit_code),
                                   queue=f"default/lq-{job.cq}", name=job.name,
                                   count=job.count, requests={"cpu": job.cpu})
            except AlreadyExists:
                # An earlier try was stored, its answer lost with the connection.
                self.retried.add(job.name)
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                time.sleep(0.05)
                continue
            self.acked[job.name] = time.time()
            return


class StoreChecker(QuotaChecker):
    """The harness's observer at 20 Hz, sampling on across Redis restarts."""

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.sample()
            except redis.RedisError:
                continue


class Chaos:
    def __init__(self, server: LossyRedis, procs: Processes, client: Client,
                 rng: random.Random) -> None:
        self.server, self.procs, self.client, self.rng = server, procs, client, rng
        self.schedulers = 0
        self.worker_kills: dict[str, list[float]] = {n: [] for n in NODES}
        self.log: list[str] = []

    def scheduler(self) -> None:
        self.schedulers += 1
        self.procs.scheduler(f"s{self.schedulers}", node_timeout=NODE_TIMEOUT, lease_ttl=1.0)

    def worker(self, node: str, *extra: str) -> None:
        self.procs.worker("pool", node, f"cpu={NODE_CPU}", "--reconcile", "0.5", *extra)

    def leader(self) -> str:
        def holder() -> str | None:
            value = self.client.store.redis.get(self.client.store.keys.lease)
            return value.rpartition("|")[0] if value else None

        return wait_for("a leader", lambda: retrying(holder), timeout=30)

    def kill_leader(self) -> None:
        who = self.leader()
        self.procs.kill(who)
        self.scheduler()  # the next standby
        after = wait_for("another leader", lambda: (w := self.leader()) != who and w, timeout=30)
        self.log.append(f"{time.time():.3f} killed leader {who}; {after} leads")

    def kill_worker(self) -> None:
        node = self.rng.choice(NODES)
        epoch = retrying(lambda: self.client.store.nodes.get(node).epoch)
        self.procs.kill(node)
        self.worker_kills[node].append(time.time())
        self.worker(node, "--replace")
        wait_for(f"{node} to register again", lambda: retrying(
            lambda: (r := self.client.store.nodes.get(node)).ready and r.epoch > epoch),
            timeout=30)
        self.log.append(f"{time.time():.3f} killed worker {node} (epoch {epoch}); restarted")

    def crash_redis(self) -> None:
        self.server.mark()
        marked = time.time()
        # What is lost may hold another fault's writes, as the seed says: a restarted
        # worker's registration, a new leader's lease and first decisions (the loss then
        # spans that fault's recovery, a few seconds) — or only the pool's own work.
        also = self.rng.choice((None, self.kill_worker, self.kill_leader))
        if also is not None:
            also()
        time.sleep(max(0.0, marked + LOST_SECONDS - time.time()))
        dropped = self.server.crash()
        self.log.append(f"{time.time():.3f} crashed redis, {dropped} AOF bytes of writes "
                        f"since {marked:.3f} lost")


def let_work_go_on(client: Client, names: list[str], jobs: int = 10,
                   longest: float = 3.0) -> None:
    """Between two faults: until ``jobs`` more jobs finished, or ``longest`` seconds."""
    def finished() -> int:
        return sum(1 for r in snapshot(client, names).values()
                   if r is not None and r.state is State.FINISHED)

    target = finished() + jobs
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline and finished() < target:
        time.sleep(0.1)


def snapshot(client: Client, names: list[str]) -> dict[str, Any]:
    """Each job's record, or None if the store has no such workload."""
    keys = [f"default/{n}" for n in names]
    records = retrying(lambda: client.store.workloads.get_many(keys))
    return {n: records.get(f"default/{n}") for n in names}


def unsettled(client: Client, names: list[str]) -> list[str]:
    return [n for n, r in snapshot(client, names).items()
            if r is not None and r.state is not State.FINISHED]


@pytest.mark.parametrize(("n_jobs", "rounds"), [
    pytest.param(300, 5, id="300-jobs"),
    pytest.param(1000, 15, id="1000-jobs", marks=pytest.mark.slow),
])
def test_jobs_survive_killed_leaders_workers_and_a_redis_losing_its_last_second(
        tmp_path: Path, n_jobs: int, rounds: int) -> None:
    """``rounds``: how many times each kind of fault comes."""
    rng = random.Random(SEED)
    jobs = make_jobs(rng, n_jobs)
    by_name = {j.name: j for j in jobs}
    runs = tmp_path / "runs"
    runs.mkdir()
    server = LossyRedis()
    server.start()
    # With a journal, as the CLI has: a submission Redis loses is named lost.
    client = Client(connection=connect(server.url, prefix=PREFIX),
                    journal=tmp_path / "submissions.jsonl")
    client.apply(queues(*CQS))
    procs = Processes(server.url, PREFIX, tmp_path)
    chaos = Chaos(server, procs, client, rng)
    actions = [chaos.kill_leader, chaos.kill_worker, chaos.crash_redis] * rounds
    rng.shuffle(actions)
    names = [j.name for j in jobs]
    try:
        chaos.scheduler()
        chaos.scheduler()
        for node in NODES:
            chaos.worker(node)
        chaos.leader()
        with StoreChecker(server.url, PREFIX, {cq: {"cpu": limit * 1000}
                                               for cq, limit in LIMITS.items()}) as checker:
            submitter = Submitter(client, jobs, runs, every=SUBMIT_EVERY)
            submitter.start()
            for action in actions:
                let_work_go_on(client, names)
                action()
            submitter.join(60)
            assert submitter.error is None, repr(submitter.error)
            assert len(submitter.acked) == len(jobs)
            wait_for("every job to finish", lambda: not unsettled(client, names), timeout=120,
                     every=0.2, explain=lambda: explain(client, names, procs))
        final = snapshot(client, names)
        cq_json = subprocess.run(
            [sys.executable, "-m", "kuota.cli", "get", "cq", "-o", "json", "--redis",
             server.url, "--prefix", PREFIX], cwd=REPO, capture_output=True, text=True,
            check=True).stdout
        node_pods = retrying(lambda: client.store.nodes.pod_ids(NODES))
        answers = {name: not_found(client, name) for name, r in final.items() if r is None}
        codes = {name: {p.exit_code for p in client_pods(client, r)}
                 for name, r in final.items() if r is not None}
    finally:
        procs.stop_all()
        server.cleanup()
    ran = read_runs(runs, chaos.worker_kills)
    report = "\n".join(chaos.log)
    print(report)

    # -- every acknowledged job finished with its exit code, or was lost with Redis ----------
    lost = sorted(n for n, r in final.items() if r is None)
    for name in lost:
        acked = submitter.acked[name]
        assert any(marked <= acked <= back for marked, back in server.crashes), (
            f"{name} (acknowledged at {acked:.3f}) is gone, and not in a lost second:\n{report}")
        lost_answer = f"workload default/{name}: lost — submitted from here at"
        if name in submitter.retried:  # its stored try was never noted as acknowledged
            assert answers[name] == f"workload default/{name}: not found" \
                or answers[name].startswith(lost_answer), answers[name]
        else:
            assert answers[name].startswith(lost_answer), answers[name]
    wrong = []
    for name, record in final.items():
        if record is None:
            continue
        want = "Succeeded" if by_name[name].exit_code == 0 else "Failed"
        if record.outcome.value != want or (want == "Failed"
                                            and by_name[name].exit_code not in codes[name]):
            wrong.append(f"{name}: {record.outcome.value} {record.reason} {record.message} "
                         f"exit codes {codes[name]}, wanted {want} ({by_name[name].exit_code})")
    assert not wrong, "\n".join(wrong)
    print(f"{len(jobs) - len(lost)} jobs finished; lost with Redis (acknowledged in the "
          f"second before a crash): {', '.join(lost) or 'none'}")

    # -- none ran twice at once; never more than quota or capacity -------------------------------
    twice = overlapping_runs(ran)
    assert not twice, "\n".join(f"{a}\n  overlaps {b}" for a, b in twice)
    unended = [r for r in ran if r.end == float("inf")]
    assert not unended, "pods that never ended:\n" + "\n".join(map(str, unended))
    cq_of = {j.name: j.cq for j in jobs}
    cpu = {j.name: j.cpu for j in jobs}
    # A workload holds its quota until its pods are gone, so what ran is what was held.
    by_cq = peak_usage(ran, lambda r: cq_of[r.job], cpu)
    over = [f"{cq} (limit {LIMITS[cq]}) {peak}" for cq, peak in by_cq.items()
            if peak.amount > LIMITS[cq]]
    print("most cpu running at once per ClusterQueue:",
          {cq: peak.amount for cq, peak in sorted(by_cq.items())})
    by_node = peak_usage(ran, lambda r: r.node, cpu)
    over += [f"node {node} (cpu={NODE_CPU}) {peak}" for node, peak in by_node.items()
             if peak.amount > NODE_CPU]
    assert not over, "more cpu running at once than allowed:\n" + "\n".join(over) + report
    assert not checker.violations, checker.violations[:10]
    assert checker.samples > 50

    # -- nothing held at the end ------------------------------------------------------------------
    listed = json.loads(cq_json)["items"]
    assert [cq["metadata"]["name"] for cq in listed] == [cq.name for cq in CQS]
    for cq in listed:
        assert cq["status"]["admittedWorkloads"] == 0, cq
        for flavor in cq["status"]["flavorsUsage"]:
            assert {r["total"] for r in flavor["resources"]} == {"0"}, cq
    assert node_pods == {n: set() for n in NODES}


def not_found(client: Client, name: str) -> str:
    """What the product says when asked for a workload by name that it does not have."""
    try:
        client.workload(name)
    except NotFound as exc:
        return str(exc)
    return "found"


def client_pods(client: Client, record: Any) -> list[Any]:
    return [p for p in client.store.pods.get_many(record.pod_refs()) if p is not None]


def explain(client: Client, names: list[str], procs: Processes) -> str:
    lines, pending = [], 0
    for name, record in snapshot(client, names).items():
        if record is None or record.state is State.FINISHED:
            continue
        # Every job past Pending is shown (they hold quota); the first 20 Pending ones.
        if record.state is State.PENDING:
            pending += 1
            if pending > 20:
                continue
        pods = [(p.node, p.state.value) for p in client_pods(client, record)]
        lines.append(f"{name}: {record.state.value} {record.reason} {record.message} "
                     f"attempt {record.attempt} pods {pods}")
    lines.append(f"({pending} Pending in all)")
    # What holds the nodes' capacity (placement counts these pods), and what they are.
    for node, pod_ids in sorted(client.store.nodes.pod_ids(NODES).items()):
        refs = [PodRef.parse(p) for p in sorted(pod_ids)]
        held = [f"{ref.id} ({p.state.value} epoch {p.epoch})" if p is not None
                else f"{ref.id} (no record)"
                for ref, p in zip(refs, client.store.pods.get_many(refs), strict=True)]
        record = client.store.nodes.get(node)
        lines.append(f"node {node} (epoch {record.epoch}, ready {record.ready}) holds: "
                     f"{', '.join(held) or 'nothing'}")
    # The leader's last words (CI keeps no log directory).
    holder = client.store.redis.get(client.store.keys.lease)
    leader = holder.rpartition("|")[0] if holder else None
    if leader is not None and (procs.log_dir / f"{leader}.log").exists():
        tail = procs.log(leader).splitlines()[-30:]
        lines += [f"last lines of {leader}.log:", *tail]
    return "\n".join(lines) + f"\nlogs in {procs.log_dir}"

