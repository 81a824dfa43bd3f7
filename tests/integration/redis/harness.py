"""Building blocks for Redis-mode integration tests.

* :func:`queues` — queue objects as YAML: flavors, ClusterQueues (optionally in a
  cohort, with borrowing and preemption), a LocalQueue per ClusterQueue;
* :func:`local_cluster` — scheduler and workers as threads of the test process,
  on the test's key prefix of a real Redis;
* :class:`QuotaChecker` — an independent observer: it reads workload and node
  state straight from Redis while jobs run and records any instant where a
  ClusterQueue's admitted usage passed its limit or a node ran more than it holds;
* :class:`Processes` — ``kuota scheduler`` / ``kuota worker`` as real processes
  (for ``kill -9``);
* :func:`wait_for` — poll a condition with a deadline;
* :class:`Kuota` — runs ``kuota ...`` commands in the test process on the test's store.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from kuota.cli import main
from kuota.client import Client
from kuota.service.connection import connect
from kuota.service.embedded import LocalCluster
from kuota.service.leader import Timing
from kuota.service.worker import WorkerOptions
from queueing.store import Keys
from quota.resources import parse_vector

REPO = Path(__file__).resolve().parents[3]
#: Short timings so failures are noticed within a couple of seconds.
TIMING = Timing(lease_ttl=1.0, node_timeout=2.0, poll=0.05, reasons_every=0.1)


@dataclass(frozen=True)
class CQ:
    name: str
    nominal: Mapping[str, int | str]
    cohort: str | None = None
    borrowing_limit: Mapping[str, int | str] | None = None
    flavor: str = "default"
    preemption: Mapping[str, Any] | None = None


def queues(*cqs: CQ, flavors: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """YAML for the flavors, ClusterQueues and one LocalQueue ``lq-<cq>`` in ``default``."""
    docs: list[dict[str, Any]] = []
    for name, labels in (flavors or {"default": {}}).items():
        docs.append({"apiVersion": "kuota.dev/v1alpha1", "kind": "ResourceFlavor",
                     "metadata": {"name": name}, "spec": {"nodeLabels": dict(labels)}})
    for cq in cqs:
        resources = []
        for resource, amount in cq.nominal.items():
            entry: dict[str, Any] = {"name": resource, "nominalQuota": amount}
            if cq.borrowing_limit and resource in cq.borrowing_limit:
                entry["borrowingLimit"] = cq.borrowing_limit[resource]
            resources.append(entry)
        spec: dict[str, Any] = {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": list(cq.nominal),
            "flavors": [{"name": cq.flavor, "resources": resources}]}]}
        if cq.cohort:
            spec["cohortName"] = cq.cohort
        if cq.preemption:
            spec["preemption"] = dict(cq.preemption)
        docs.append({"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue",
                     "metadata": {"name": cq.name}, "spec": spec})
        docs.append({"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
                     "metadata": {"name": f"lq-{cq.name}", "namespace": "default"},
                     "spec": {"clusterQueue": cq.name}})
    return yaml.safe_dump_all(docs)


def node(pool: str, name: str, resources: str, labels: Mapping[str, str] | None = None,
         ) -> WorkerOptions:
    from kuota.service.supervisor import SupervisorTiming

    return WorkerOptions(pool=pool, node=name, capacity=parse_vector(resources),
                         labels=dict(labels or {}), heartbeat=0.2, rq_worker_ttl=16,
                         supervisor=SupervisorTiming(grace=1.0, stop_check=0.1))


@contextmanager
def local_cluster(url: str, prefix: str, nodes: Sequence[WorkerOptions] = (), *,
                  schedulers: int = 1, timing: Timing = TIMING) -> Iterator[LocalCluster]:
    cluster = LocalCluster(nodes, connection=connect(url, prefix=prefix), timing=timing,
                           schedulers=schedulers)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 20.0,
             every: float = 0.05, explain: Callable[[], str] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f"\n{explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}")
        time.sleep(every)


def alive(pid: int) -> bool:
    """Is process ``pid`` running (a zombie, or one reaped meanwhile, is not)?"""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # gone, or reaped between the looks
        return False


def events(client: Client, key: str) -> list[str]:
    return [h["event"] for h in client.store.workloads.history(key)]


@dataclass
class QuotaChecker:
    """Reads Redis every few ms and records quota or node-capacity violations."""

    url: str
    prefix: str
    #: ClusterQueue -> resource -> most it may hold (nominal + what it may borrow).
    limits: Mapping[str, Mapping[str, int]]
    violations: list[str] = field(default_factory=list)
    #: Highest usage seen per ClusterQueue and resource (milli-units).
    peak: dict[str, dict[str, int]] = field(default_factory=dict)
    samples: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._r = redis.Redis.from_url(self.url, decode_responses=True)
        self._keys = Keys(self.prefix)

    def __enter__(self) -> QuotaChecker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.sample()

    def sample(self) -> None:
        keys = self._r.zrange(self._keys.workloads, 0, -1)
        pipe = self._r.pipeline(transaction=True)  # one consistent instant
        for key in keys:
            pipe.hmget(self._keys.workload(key), "state", "admission")
        node_names = sorted(self._r.smembers(self._keys.nodes))
        for name in node_names:
            pipe.hget(self._keys.node(name), "capacity")
            pipe.smembers(self._keys.node_pods(name))
        answers = pipe.execute()
        usage: dict[str, dict[str, int]] = {}
        for state, admission in answers[:len(keys)]:
            if state in ("QuotaReserved", "Admitted") and admission:
                doc = json.loads(admission)
                cq = usage.setdefault(doc["clusterQueue"], {})
                for ps in doc["podSets"]:
                    for resource, amount in ps["usage"].items():
                        cq[resource] = cq.get(resource, 0) + amount
        for cq, vector in usage.items():
            peak = self.peak.setdefault(cq, {})
            for resource, amount in vector.items():
                peak[resource] = max(peak.get(resource, 0), amount)
                limit = self.limits.get(cq, {}).get(resource)
                if limit is not None and amount > limit:
                    self.violations.append(f"{cq} holds {resource}={amount} > {limit}")
        rest = answers[len(keys):]
        for name, capacity, pods in zip(node_names, rest[::2], rest[1::2], strict=True):
            self._check_node(name, json.loads(capacity or "{}"), pods)
        self.samples += 1

    def _check_node(self, name: str, capacity: Mapping[str, int], pods: set[str]) -> None:
        if not pods:
            return
        pipe = self._r.pipeline(transaction=False)
        for pod in pods:
            pipe.hmget(f"{self.prefix}:pod:{pod}", "requests", "state", "epoch")
        used: dict[str, int] = {}
        held = []
        for pod, (requests, state, epoch) in zip(pods, pipe.execute(), strict=True):
            held.append(f"{pod} ({state} epoch {epoch})")
            for resource, amount in json.loads(requests or "{}").items():
                used[resource] = used.get(resource, 0) + amount
        for resource, amount in used.items():
            if amount > capacity.get(resource, 0):
                self.violations.append(f"{time.time():.3f} node {name} holds {resource}={amount}"
                                       f" > {capacity.get(resource, 0)}: {', '.join(held)}")


class Processes:
    """``kuota scheduler`` and ``kuota worker`` as child processes of the test."""

    def __init__(self, url: str, prefix: str, log_dir: Path) -> None:
        self.url, self.prefix, self.log_dir = url, prefix, log_dir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        env = {**os.environ, "REDIS_URL": self.url, "KUOTA_PREFIX": self.prefix,
               "PYTHONPATH": str(REPO)}
        out = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 — the child owns it
        proc = subprocess.Popen([sys.executable, "-m", "kuota.cli", *args], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def scheduler(self, name: str, *extra: str, node_timeout: float = 2.0,
                  lease_ttl: float = 1.0) -> subprocess.Popen[bytes]:
        # (--restart-pause: the workers' one-second grace, their stop check and a margin)
        return self._start(name, ["scheduler", "--identity", name, "--node-timeout",
                                  str(node_timeout), "--lease-ttl", str(lease_ttl),
                                  "--poll", "0.05", "--restart-pause", "1.5", *extra])

    def worker(self, pool: str, node_name: str, resources: str, *extra: str,
               name: str | None = None) -> subprocess.Popen[bytes]:
        """A worker process (``name``: its key in :attr:`procs`, default the node name)."""
        return self._start(name or node_name, ["worker", "--pool", pool, "--node", node_name,
                                               "--resources", resources, "--heartbeat", "0.2",
                                               "--grace", "1", *extra])

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.terminate()
        for name, proc in self.procs.items():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
                raise AssertionError(f"{name} did not stop on SIGTERM") from None
        self.procs.clear()

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")


class Kuota:
    """Runs ``kuota ...`` on the test's store and returns (status, stdout, stderr)."""

    def __init__(self, url: str, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
        self.args = ["--redis", url, "--prefix", prefix]
        self.capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        command, rest = argv[0], list(argv[1:])
        if "--" in rest:
            cut = rest.index("--")
            rest = [*rest[:cut], *self.args, *rest[cut:]]
        else:
            rest += self.args
        status = main([command, *rest])
        out = self.capsys.readouterr()
        return status, out.out, out.err

    def json(self, *argv: str) -> Any:
        """The printed document; a ``List``'s items."""
        status, out, err = self(*argv, "-o", "json")
        assert status == 0, err
        doc = json.loads(out)
        return doc["items"] if isinstance(doc, dict) and doc.get("kind") == "List" else doc
