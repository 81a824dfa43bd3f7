"""kuota and Kueue side by side: Kueue's scheduler-performance "baseline" on a real
control plane, same machine, same run.

The shape is Kueue's own (test/performance/scheduler/default_generator_config.yaml):
5 cohorts × 6 ClusterQueues (nominalQuota 20 cpu, borrowingLimit 100, reclaimWithinCohort
Any, withinClusterQueue LowerPriority), each with its namespace and LocalQueue, and per
ClusterQueue 350 small (1 cpu, runs 200 ms, one every 100 ms, priority 50), 100 medium
(5 cpu, 500 ms, every 500 ms, priority 100) and 50 large (20 cpu, 1 s, every 1.2 s,
priority 200) Workloads — 15,000 in all (``--scale`` shrinks the counts).

Each system gets a fresh control plane of the same binaries (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok: tests/cluster/controlplane.py) and runs
as Kueue's performance test runs it: Workload objects created directly (no Jobs or pods),
a test runner that marks each admitted Workload Finished once its run time has passed
since it saw the admission, time to admission measured from the runner first seeing the
Workload to it last seeing it become Admitted (an evicted Workload counts from its last
admission, as Kueue's recorder does) and evictions counted as it counts them. Wall is
the runner's whole run (queues, generation, until every Workload finished).

* **Kueue** v0.15.0: its ``minimalkueue`` manager (the scheduler and core controllers,
  no webhooks; test/performance/scheduler/minimalkueue) and its own ``runner`` in
  host-cluster mode, both built from Kueue's Go module by hack/kueue/build.sh;
* **kuota**: ``kuota operator --lease none`` and this file's runner, a port of Kueue's
  (same objects in kuota.dev/v1alpha1, whose fields are Kueue v1beta2's).

Usage::

    bash hack/kueue/build.sh        # once: ~/.cache/kuota/kueue/v0.15.0/bin
    .venv/bin/python benchmarks/side_by_side.py [--scale 1.0] [--systems kuota,kueue] [--trace DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import yaml  # noqa: E402

from benchmarks.procstat import cpu_seconds  # noqa: E402
from benchmarks.simulate_kueue_baseline import BASELINE, Shape  # noqa: E402
from tests.cluster.binaries import find_binaries  # noqa: E402
from tests.cluster.controlplane import ControlPlane  # noqa: E402
from tests.ports import free_port  # noqa: E402

KUEUE_VERSION = "v0.15.0"
KUEUE_BIN = pathlib.Path(os.environ.get("KUOTA_CACHE", pathlib.Path.home() / ".cache/kuota")) \
    / "kueue" / KUEUE_VERSION / "bin"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
RUNTIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
#: Tries of the runner's update marking a Workload Finished before it gives up on it.
FINISH_TRIES = 5
#: Kueue's published figures for this shape (its CI, rangespec averages), for reference.
KUEUE_CI = {"wall": 351.1, "small": 215.5, "medium": 76.8, "large": 6.7}


def generator_config(shape: Shape, scale: float) -> list[dict[str, Any]]:
    """The shape in the format of Kueue's generator config (its runner reads this)."""
    return [{"className": "cohort", "count": shape.cohorts, "queuesSets": [{
        "className": "cq", "count": shape.queues, "nominalQuota": 20, "borrowingLimit": 100,
        "reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
        "workloadsSets": [{
            "count": max(1, round(count * scale)), "creationIntervalMs": int(interval * 1000),
            "workloads": [{"className": name, "runtimeMs": int(runtime * 1000),
                           "priority": priority, "request": str(cpu)}]}
            for name, count, interval, cpu, runtime, priority in shape.classes]}]}]


@dataclass
class Result:
    system: str
    wall: float
    admission: dict[str, float]
    counts: dict[str, int]
    evictions: int = 0
    note: str = ""


# -- kuota: a port of Kueue's runner ------------------------------------------------------

def cluster_queues(config: list[dict[str, Any]]
                   ) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(cohort, queue set, name) of every ClusterQueue, named as Kueue's generator names
    them (each also names its namespace and LocalQueue)."""
    for cset in config:
        for ci in range(cset["count"]):
            cohort = f"{cset['className']}-{ci}"
            for qi, qset in enumerate(cset["queuesSets"]):
                for i in range(qset["count"]):
                    yield cohort, qset, f"{qset['className']}-{qi}-{i}-{cohort}"


def total(config: list[dict[str, Any]]) -> int:
    return sum(c["count"] * qs["count"] * ws["count"] * len(ws["workloads"])
               for c in config for qs in c["queuesSets"] for ws in qs["workloadsSets"])


@dataclass
class _Seen:
    cls: str
    runtime: float
    first: float
    #: When it was last seen becoming admitted (Kueue's recorder keeps the last such
    #: moment as the time to admission), and whether it is admitted / evicted now.
    admitted: float | None = None
    running: bool = False
    evicted: bool = False
    finished: float | None = None
    #: Admissions seen so far: a finish timer belongs to the admission it was set for, and
    #: does nothing once the Workload was evicted and admitted again (its clock restarts
    #: at each admission, as in Kueue's runner).
    admissions: int = 0


@dataclass
class KuotaRunner:
    url: str
    token: str
    ca: pathlib.Path
    config: list[dict[str, Any]]
    api: str = "kuota.dev/v1alpha1"
    seen: dict[str, _Seen] = field(default_factory=dict)
    total: int = 0
    evictions: int = 0

    async def run(self) -> Result:
        started = time.monotonic()
        context = ssl.create_default_context(cafile=str(self.ca))
        headers = {"Authorization": f"Bearer {self.token}"}
        connector = aiohttp.TCPConnector(ssl=context, limit=64)
        async with aiohttp.ClientSession(self.url, headers=headers,
                                         connector=connector) as http:
            self.http = http
            await self._queues()
            self.total = total(self.config)
            done = asyncio.Event()
            watcher = asyncio.create_task(self._watch(done))
            await asyncio.sleep(0.5)  # the watch is open before the first create
            await self._generate()
            await done.wait()
            watcher.cancel()
        wall = time.monotonic() - started
        by_class: dict[str, list[float]] = {}
        for s in self.seen.values():
            if s.admitted is not None:
                by_class.setdefault(s.cls, []).append(s.admitted - s.first)
        return Result("kuota", wall, {c: statistics.fmean(v) for c, v in by_class.items()},
                      {c: len(v) for c, v in by_class.items()}, self.evictions)

    async def _post(self, path: str, body: dict[str, Any]) -> None:
        async with self.http.post(path, json=body) as answer:
            if answer.status >= 300 and answer.status != 409:
                raise RuntimeError(f"POST {path}: {answer.status} {await answer.text()}")

    async def _queues(self) -> None:
        group = f"/apis/{self.api}"
        await self._post(f"{group}/resourceflavors", {
            "apiVersion": self.api, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
        for cohort, qset, name in cluster_queues(self.config):
            await self._post(f"{group}/clusterqueues", {
                "apiVersion": self.api, "kind": "ClusterQueue",
                "metadata": {"name": name, "labels": {CLASS_LABEL: qset["className"]}},
                "spec": {"cohortName": cohort, "namespaceSelector": {},
                         "preemption": {"reclaimWithinCohort": qset["reclaimWithinCohort"],
                                        "withinClusterQueue": qset["withinClusterQueue"]},
                         "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                             {"name": "default", "resources": [{
                                 "name": "cpu", "nominalQuota": str(qset["nominalQuota"]),
                                 "borrowingLimit": str(qset["borrowingLimit"])}]}]}]}})
            await self._post("/api/v1/namespaces", {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            await self._post(f"{group}/namespaces/{name}/localqueues", {
                "apiVersion": self.api, "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": name}, "spec": {"clusterQueue": name}})

    async def _generate(self) -> None:
        await asyncio.gather(*(self._stream(ns, wi, wset)
                               for _, qset, ns in cluster_queues(self.config)
                               for wi, wset in enumerate(qset["workloadsSets"])))

    async def _stream(self, ns: str, index: int, wset: dict[str, Any]) -> None:
        delay = wset["creationIntervalMs"] / 1000
        path = f"/apis/{self.api}/namespaces/{ns}/workloads"
        for si in range(wset["count"]):
            for i, w in enumerate(wset["workloads"]):
                await asyncio.sleep(delay)
                await self._post(path, {
                    "apiVersion": self.api, "kind": "Workload",
                    "metadata": {"name": f"{w['className']}-{index}-{si}-{i}", "namespace": ns,
                                 "labels": {CLASS_LABEL: w["className"],
                                            RUNTIME_LABEL: str(w["runtimeMs"])}},
                    "spec": {"queueName": ns, "priority": w["priority"], "podSets": [{
                        "name": "main", "count": 1, "template": {"spec": {
                            "restartPolicy": "Never", "containers": [{
                                "name": "c", "image": "pause",
                                "resources": {"requests": {"cpu": w["request"]}}}]}}}]}})

    async def _watch(self, done: asyncio.Event) -> None:
        path = f"/apis/{self.api}/workloads"
        version = ""
        while True:
            params = {"watch": "1", "allowWatchBookmarks": "true"}
            if version:
                params["resourceVersion"] = version
            async with self.http.get(path, params=params,
                                     timeout=aiohttp.ClientTimeout(total=None)) as stream:
                async for line in stream.content:
                    event = json.loads(line)
                    obj = event["object"]
                    version = obj["metadata"].get("resourceVersion", version)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._observe(obj)
                    if self.total and sum(1 for s in self.seen.values()
                                          if s.finished is not None) >= self.total:
                        done.set()
                        return

    def _observe(self, wl: dict[str, Any]) -> None:
        now = time.monotonic()
        meta = wl["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        seen = self.seen.get(key)
        if seen is None:
            labels = meta.get("labels") or {}
            seen = self.seen[key] = _Seen(labels.get(CLASS_LABEL, "?"),
                                          int(labels.get(RUNTIME_LABEL, "0")) / 1000, now)
        conditions = {c["type"]: c["status"] for c in
                      (wl.get("status") or {}).get("conditions") or []}
        admitted = conditions.get("Admitted") == "True"
        evicted = conditions.get("Evicted") == "True"
        if evicted and not seen.evicted:  # counted as Kueue's recorder counts them
            self.evictions += 1
        seen.evicted = evicted
        newly = admitted and not seen.running
        if newly:
            seen.admitted = now
            seen.admissions += 1
        seen.running = admitted
        if conditions.get("Finished") == "True":
            seen.finished = seen.finished or now
        elif newly:  # runs for its run time from this admission
            admission = seen.admissions
            asyncio.get_running_loop().call_later(
                seen.runtime, lambda: asyncio.ensure_future(self._finish(key, admission)))

    async def _finish(self, key: str, admission: int) -> None:
        """Mark the Workload Finished, once its run time has passed since ``admission``
        (the how-many-th admission it was seen to get) — if it still runs under that one."""
        seen = self.seen[key]
        ns, name = key.split("/")
        path = f"/apis/{self.api}/namespaces/{ns}/workloads/{name}/status"
        # Retried a few times, as Kueue's runner retries its update: a Workload that is not
        # marked Finished keeps its quota, and the run would wait for it forever.
        for attempt in range(FINISH_TRIES):
            if not seen.running or seen.admissions != admission or seen.finished is not None:
                return  # evicted meanwhile (it runs again from its next admission), or ended
            patch = [{"op": "add", "path": "/status/conditions/-", "value": {
                "type": "Finished", "status": "True", "reason": "ByTest",
                "message": "By test runner", "lastTransitionTime":
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}]
            try:
                async with self.http.patch(path, data=json.dumps(patch), headers={
                        "Content-Type": "application/json-patch+json"}) as answer:
                    if answer.status < 300:
                        return
                    if answer.status == 404:  # deleted: nothing left to finish
                        return
                    failure = f"{answer.status} {await answer.text()}"
            except aiohttp.ClientError as exc:
                failure = repr(exc)
            print(f"finish {key} (try {attempt + 1} of {FINISH_TRIES}): {failure}",
                  file=sys.stderr)
            await asyncio.sleep(0.5 * (attempt + 1))


# -- diagnostics ------------------------------------------------------------------------------

class Trace:
    """With ``--trace DIR``: every Workload change both systems make, one JSON line each
    (seconds since the trace began, the event type and the Workload's name, uid, priority
    and status), for comparing their decisions offline. A watch of its own, so neither
    runner nor manager is changed by it."""

    def __init__(self, plane: ControlPlane, group: str, path: pathlib.Path) -> None:
        self.url = f"{plane.url}/apis/{group}/workloads?watch=1"
        self.context = ssl.create_default_context(cafile=str(plane.ca.cert))
        self.token = _token(plane)
        self.path = path
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.run(self._watch())

    async def _watch(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        connector = aiohttp.TCPConnector(ssl=self.context)
        with self.path.open("w") as out:
            async with aiohttp.ClientSession(headers=headers, connector=connector) as http:
                await self._stream(http, out)

    async def _stream(self, http: aiohttp.ClientSession, out: Any) -> None:
        version = ""
        while True:  # reconnects from the last version seen when the server ends a watch
            url = self.url + (f"&resourceVersion={version}" if version else "")
            async with http.get(url, timeout=aiohttp.ClientTimeout(total=None)) as stream:
                if stream.status == 429:  # a new CRD's watch cache is initializing
                    await asyncio.sleep(0.1)
                    continue
                async for line in stream.content:
                    event = json.loads(line)
                    obj = event["object"]
                    meta = obj.get("metadata") or {}
                    version = meta.get("resourceVersion", version)
                    out.write(json.dumps({
                        "t": round(time.monotonic() - self.started, 4),
                        "type": event["type"],
                        "name": f"{meta.get('namespace')}/{meta.get('name')}",
                        "uid": meta.get("uid"),
                        "priority": (obj.get("spec") or {}).get("priority"),
                        "status": obj.get("status") or {}}) + "\n")
                    out.flush()  # a daemon thread: nothing is left in a buffer at exit


# -- the runs -------------------------------------------------------------------------------

def _token(plane: ControlPlane) -> str:
    config = yaml.safe_load(plane.admin_kubeconfig.read_text())
    return str(config["users"][0]["user"]["token"])


def run_kuota(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
              trace: pathlib.Path | None, extra: list[str]) -> Result:
    plane.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "crds"))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    if trace is not None:
        Trace(plane, "kuota.dev/v1alpha1", trace / "kuota-trace.jsonl")
    probes = free_port()
    kuota = pathlib.Path(sys.executable).parent / "kuota"
    log = (work / "kuota-operator.log").open("wb")
    operator = subprocess.Popen(
        [str(kuota), "operator", "--lease", "none", "--probes", f"127.0.0.1:{probes}", *extra],
        env=dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig)), stdout=log,
        stderr=subprocess.STDOUT)
    try:
        _wait_ready(f"http://127.0.0.1:{probes}/readyz", operator)
        runner = KuotaRunner(plane.url, _token(plane), plane.ca.cert, config)
        result = asyncio.run(runner.run())
        result.note = f"operator CPU {cpu_seconds(operator.pid):.1f} s"
        return result
    finally:
        operator.terminate()
        operator.wait(30)


def run_kuota_kueue(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
                    trace: pathlib.Path | None, extra: list[str]) -> Result:
    """kuota serving Kueue's API group (``--api kueue``), driven by Kueue's own runner: the
    same binary, objects and finishing (and eviction round trip) as Kueue's half."""
    for crd in sorted((ROOT / "manifests" / "kueue").glob("*.kueue.x-k8s.io.yaml")):
        plane.kubectl("apply", "--server-side", "-f", str(crd))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    if trace is not None:
        Trace(plane, "kueue.x-k8s.io/v1beta2", trace / "kuota-kueue-trace.jsonl")
    probes = free_port()
    kuota = pathlib.Path(sys.executable).parent / "kuota"
    log = (work / "kuota-operator.log").open("wb")
    operator = subprocess.Popen(
        [str(kuota), "operator", "--api", "kueue", "--lease", "none",
         "--probes", f"127.0.0.1:{probes}", *extra],
        env=dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig)), stdout=log,
        stderr=subprocess.STDOUT)
    try:
        _wait_ready(f"http://127.0.0.1:{probes}/readyz", operator)
        result = _kueue_runner(plane, config, work, "kuota-kueue")
        result.note = f"operator CPU {cpu_seconds(operator.pid):.1f} s, Kueue's runner"
        return result
    finally:
        operator.terminate()
        operator.wait(30)


def run_kueue(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
              trace: pathlib.Path | None, extra: list[str]) -> Result:
    crds = _kueue_source() / "config" / "components" / "crd" / "bases"
    plane.kubectl("apply", "--server-side", "-f", str(crds))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    if trace is not None:
        Trace(plane, "kueue.x-k8s.io/v1beta2", trace / "kueue-trace.jsonl")
    env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig))
    log = (work / "minimalkueue.log").open("wb")
    manager = subprocess.Popen([str(KUEUE_BIN / "minimalkueue"), "--kubeconfig",
                                str(plane.admin_kubeconfig)], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        time.sleep(3)  # its informers: the runner's first objects must not race them
        result = _kueue_runner(plane, config, work, "kueue")
        result.note = f"minimalkueue CPU {cpu_seconds(manager.pid):.1f} s"
        return result
    finally:
        manager.terminate()
        manager.wait(30)


def _kueue_runner(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
                  system: str) -> Result:
    """Kueue's runner in host-cluster mode against whatever serves Kueue's group."""
    env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig))
    (work / "generator.yaml").write_text(yaml.safe_dump(config))
    out = work / f"{system}-out"
    out.mkdir()
    started = time.monotonic()
    done = subprocess.run([str(KUEUE_BIN / "runner"), "-generatorConfig",
                           str(work / "generator.yaml"), "-o", str(out), "-timeout", "30m"],
                          env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"Kueue's runner failed ({done.returncode}):\n"
                           f"{done.stderr[-3000:]}")
    classes = yaml.safe_load((out / "summary.yaml").read_text())["workloadClasses"]
    return Result(system, wall,
                  {c: v["averageTimeToAdmissionMs"] / 1000 for c, v in classes.items()},
                  {c: v["count"] for c, v in classes.items()},
                  sum(v.get("totalEvictions", 0) for v in classes.values()))


def _kueue_source() -> pathlib.Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                           check=True).stdout.strip()
    return pathlib.Path(cache) / "sigs.k8s.io" / f"kueue@{KUEUE_VERSION}"


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{url} not ready after {timeout} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0,
                        help="workload counts x SCALE (default 1: Kueue's 15,000)")
    parser.add_argument("--systems", default="kuota,kueue",
                        help="comma-separated, in order: kuota (the operator and this file's "
                             "port of Kueue's runner), kuota-kueue (the operator serving "
                             "Kueue's API, driven by Kueue's runner binary), kueue")
    parser.add_argument("--version", default="v1.34.4", help="Kubernetes binaries")
    parser.add_argument("--operator-args", default="", metavar="ARGS",
                        help="diagnostics: more arguments for `kuota operator` (one string, "
                             "split on spaces), e.g. '--status-interval 30'")
    parser.add_argument("--trace", type=pathlib.Path, metavar="DIR",
                        help="write every Workload change of each system to "
                             "DIR/<system>-trace.jsonl, and keep the managers' logs there")
    args = parser.parse_args()
    binaries = find_binaries(args.version)
    if binaries is None:
        sys.exit(f"Kubernetes {args.version} binaries are not built: make cluster-bins")
    config = generator_config(BASELINE, args.scale)
    if args.trace is not None:
        args.trace.mkdir(parents=True, exist_ok=True)
    runs = {"kuota": run_kuota, "kuota-kueue": run_kuota_kueue, "kueue": run_kueue}
    if "kueue" in args.systems and not (KUEUE_BIN / "runner").exists():
        sys.exit(f"Kueue is not built in {KUEUE_BIN}: bash hack/kueue/build.sh")
    results = []
    for system in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"side-{system}-") as tmp:
            work = pathlib.Path(tmp)
            with ControlPlane(binaries, work / "plane") as plane:
                results.append(runs[system](plane, config, work, args.trace,
                                            args.operator_args.split()))
                if args.trace is not None:
                    for log in ("kuota-operator.log", "minimalkueue.log"):
                        if (work / log).exists():
                            (args.trace / log).write_bytes((work / log).read_bytes())
    print(f"Kueue baseline shape x{args.scale:g}: {total(config)} workloads, Kubernetes "
          f"{args.version}, fresh control plane per system, this machine")
    print(f"{'system':8} {'wall s':>8} {'small s':>9} {'medium s':>9} {'large s':>9} "
          f"{'evicted':>8}  notes")
    for r in results:
        print(f"{r.system:8} {r.wall:8.1f} " + " ".join(
            f"{r.admission.get(c, float('nan')):9.1f}" for c in ("small", "medium", "large"))
            + f" {r.evictions:8d}  {r.note}; admitted {sum(r.counts.values())}")
    if len(results) == 2:
        a, b = results
        print(f"ratio {a.system}/{b.system}: wall {a.wall / b.wall:.2f}, " + ", ".join(
            f"{c} {a.admission.get(c, 0) / max(b.admission.get(c, 0), 1e-9):.2f}"
            for c in ("small", "medium", "large")))
    print(f"(Kueue's CI for this shape at x1: wall {KUEUE_CI['wall']} s, time to admission "
          f"small {KUEUE_CI['small']} / medium {KUEUE_CI['medium']} / large "
          f"{KUEUE_CI['large']} s)")


if __name__ == "__main__":
    main()
