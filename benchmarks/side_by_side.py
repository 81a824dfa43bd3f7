"""kuota and Kueue side by side: Kueue's scheduler-performance "baseline" on a real
control plane, same machine, same run.

The shape is Kueue's own (test/performance/scheduler/default_generator_config.yaml):
5 cohorts × 6 ClusterQueues (nominalQuota 20 cpu, borrowingLimit 100, reclaimWithinCohort
Any, withinClusterQueue LowerPriority), each with its namespace and LocalQueue, and per
ClusterQueue 350 small (1 cpu, runs 200 ms, one every 100 ms, priority 50), 100 medium
(5 cpu, 500 ms, every 500 ms, priority 100) and 50 large (20 cpu, 1 s, every 1.2 s,
priority 200) Workloads — 15,000 in all (``--scale`` shrinks the counts).

Each system gets a fresh control plane of the same binaries (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok: tests/cluster/controlplane.py) and is
driven by the same program, Kueue's own scheduler-performance ``runner`` (v0.15.0, built
from Kueue's Go module by hack/kueue/build.sh) in host-cluster mode. It creates the queues
and Workload objects directly (no Jobs or pods) and marks each admitted Workload Finished
once its run time has passed since it saw the admission. An evicted Workload's
reservation is cleared by the runner, as a job integration would. Time to admission runs
from the runner first seeing the Workload to it last seeing it become Admitted, and
evictions are counted as its recorder counts them. Wall is the runner's whole run
(queues, generation, until every Workload finished), measured the same way for both.

* **Kueue** v0.15.0: its ``minimalkueue`` manager (the scheduler and core controllers,
  no webhooks; test/performance/scheduler/minimalkueue) with Kueue's CRDs;
* **kuota**: ``kuota operator --api kueue --lease none`` with the CRDs of
  manifests/kueue (kuota serving Kueue's API group, docs/kueue.md).

Beside the runner's figures, a watch of each system's Workloads (:class:`Trace`) gives
the run time thrown away by evictions, per class: from each eviction's admission to
the eviction. ``--trace DIR`` keeps it and the manager's log.

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
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
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
    #: Per workload class: mean time to admission (s), Workloads, evictions (Kueue's
    #: recorder counts them), run time lost to evictions (s, from the trace).
    admission: dict[str, float]
    counts: dict[str, int]
    evictions: dict[str, int]
    lost: dict[str, float] = field(default_factory=dict)
    note: str = ""


def total(config: list[dict[str, Any]]) -> int:
    return sum(c["count"] * qs["count"] * ws["count"] * len(ws["workloads"])
               for c in config for qs in c["queuesSets"] for ws in qs["workloadsSets"])


def lost_run_time(trace: pathlib.Path) -> dict[str, float]:
    """Seconds of run time thrown away by evictions, per workload class, from a trace
    (:class:`Trace`): for each eviction, the time from the admission it ended to the
    eviction, as each Workload's conditions record them (their lastTransitionTime)."""
    admitted: dict[str, str] = {}
    counted: set[tuple[str, str]] = set()
    lost: dict[str, float] = {}
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        name = event["name"]
        conditions = {c["type"]: c for c in event["status"].get("conditions") or []}
        admission = conditions.get("Admitted")
        if admission is not None and admission.get("status") == "True":
            admitted[name] = admission["lastTransitionTime"]
        evicted = conditions.get("Evicted")
        if evicted is None or evicted.get("status") != "True" or name not in admitted:
            continue
        when = evicted["lastTransitionTime"]
        if (name, when) in counted or when < admitted[name]:
            continue
        counted.add((name, when))
        cls = name.split("/", 1)[1].split("-", 1)[0]
        lost[cls] = lost.get(cls, 0.0) + (_epoch(when) - _epoch(admitted[name]))
    return lost


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()



# -- diagnostics ------------------------------------------------------------------------------

class Trace:
    """Every Workload change a system makes, one JSON line each
    (seconds since the trace began, the event type and the Workload's name, uid, priority
    and status), for comparing their decisions offline. A watch of its own, so neither
    runner nor manager is changed by it."""

    def __init__(self, plane: ControlPlane, group: str, path: pathlib.Path) -> None:
        self.url = f"{plane.url}/apis/{group}/workloads?watch=1"
        self.context = ssl.create_default_context(cafile=str(plane.ca.cert))
        self.token = _token(plane)
        self.path = path
        self.started = time.monotonic()
        self.ended = ""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            asyncio.run(self._watch())
        except aiohttp.ClientError as exc:
            # The control plane stopped at the end of its system's run: the trace ends there.
            self.ended = f"watch ended: {exc}"

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
              extra: list[str]) -> Result:
    """kuota serving Kueue's API group (``--api kueue``) with the CRDs it ships."""
    for crd in sorted((ROOT / "manifests" / "kueue").glob("*.kueue.x-k8s.io.yaml")):
        plane.kubectl("apply", "--server-side", "-f", str(crd))
    kuota = pathlib.Path(sys.executable).parent / "kuota"
    probes = free_port()
    return _with_manager(plane, config, work, "kuota", [
        str(kuota), "operator", "--api", "kueue", "--lease", "none",
        "--probes", f"127.0.0.1:{probes}", *extra],
        ready=f"http://127.0.0.1:{probes}/readyz")


def run_kueue(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
              extra: list[str]) -> Result:
    """Kueue's minimalkueue (its scheduler and core controllers) with Kueue's CRDs."""
    crds = _kueue_source() / "config" / "components" / "crd" / "bases"
    plane.kubectl("apply", "--server-side", "-f", str(crds))
    return _with_manager(plane, config, work, "kueue", [
        str(KUEUE_BIN / "minimalkueue"), "--kubeconfig", str(plane.admin_kubeconfig)])


def _with_manager(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
                  system: str, argv: list[str], ready: str | None = None) -> Result:
    """Start a manager, trace its Workloads, run Kueue's runner against it, stop it."""
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    trace = Trace(plane, "kueue.x-k8s.io/v1beta2", work / f"{system}-trace.jsonl")
    env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig))
    with (work / f"{system}-manager.log").open("wb") as log:
        manager = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        if ready is not None:
            _wait_ready(ready, manager)
        else:
            time.sleep(3)  # its informers: the runner's first objects must not race them
        result = _kueue_runner(plane, config, work, system)
        result.note = f"manager CPU {cpu_seconds(manager.pid):.1f} s"
    finally:
        manager.terminate()
        manager.wait(30)
    time.sleep(1)  # the trace's last events
    result.lost = lost_run_time(trace.path)
    return result


def _kueue_runner(plane: ControlPlane, config: list[dict[str, Any]], work: pathlib.Path,
                  system: str) -> Result:
    """Kueue's runner in host-cluster mode against whatever serves Kueue's group: it makes
    the queues and Workloads, finishes each admitted one after its run time, clears an
    evicted one's reservation (as a job integration would) and records."""
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
                  {c: v.get("totalEvictions", 0) for c, v in classes.items()})


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
                        help="comma-separated, in order: kuota (the operator serving Kueue's "
                             "API), kueue (Kueue's minimalkueue)")
    parser.add_argument("--version", default="v1.34.4", help="Kubernetes binaries")
    parser.add_argument("--operator-args", default="", metavar="ARGS",
                        help="diagnostics: more arguments for `kuota operator` (one string, "
                             "split on spaces), e.g. '--status-interval 30'")
    parser.add_argument("--trace", type=pathlib.Path, metavar="DIR",
                        help="keep every Workload change of each system "
                             "(DIR/<system>-trace.jsonl) and the managers' logs")
    args = parser.parse_args()
    binaries = find_binaries(args.version)
    if binaries is None:
        sys.exit(f"Kubernetes {args.version} binaries are not built: make cluster-bins")
    if not (KUEUE_BIN / "runner").exists():
        sys.exit(f"Kueue's runner is not built in {KUEUE_BIN}: bash hack/kueue/build.sh")
    config = generator_config(BASELINE, args.scale)
    runs = {"kuota": run_kuota, "kueue": run_kueue}
    results = []
    for system in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"side-{system}-") as tmp:
            work = pathlib.Path(tmp)
            with ControlPlane(binaries, work / "plane") as plane:
                results.append(runs[system](plane, config, work, args.operator_args.split()))
            if args.trace is not None:
                args.trace.mkdir(parents=True, exist_ok=True)
                for kept in (f"{system}-trace.jsonl", f"{system}-manager.log"):
                    (args.trace / kept).write_bytes((work / kept).read_bytes())
    report(results, config, args.scale, args.version)


def report(results: list[Result], config: list[dict[str, Any]], scale: float,
           version: str) -> None:
    classes = ("small", "medium", "large")
    print(f"Kueue baseline shape x{scale:g}: {total(config)} workloads, Kubernetes {version}, "
          "fresh control plane per system, Kueue's runner for both, this machine")
    print(f"{'system':8} {'wall s':>7}  {'time to admission s':^24}  {'evictions':^20}  "
          f"{'run time lost s':^22}  notes")
    print(f"{'':8} {'':>7}  " + " ".join(f"{c:>7}" for c in classes) + "  "
          + " ".join(f"{c:>6}" for c in classes) + "  "
          + " ".join(f"{c:>7}" for c in classes))
    for r in results:
        print(f"{r.system:8} {r.wall:7.1f}  "
              + " ".join(f"{r.admission.get(c, float('nan')):7.1f}" for c in classes) + "  "
              + " ".join(f"{r.evictions.get(c, 0):6d}" for c in classes) + "  "
              + " ".join(f"{r.lost.get(c, 0.0):7.1f}" for c in classes)
              + f"  {r.note}; admitted {sum(r.counts.values())}")
    if len(results) == 2:
        a, b = results
        ratio = {c: a.admission.get(c, 0) / max(b.admission.get(c, 0), 1e-9) for c in classes}
        evicted = sum(a.evictions.values()), sum(b.evictions.values())
        print(f"ratio {a.system}/{b.system}: wall {a.wall / b.wall:.2f}, time to admission "
              + ", ".join(f"{c} {v:.2f}" for c, v in ratio.items())
              + f", evictions {evicted[0]}/{evicted[1]} = {evicted[0] / max(evicted[1], 1):.1f}"
              + f", run time lost {sum(a.lost.values()):.1f}/{sum(b.lost.values()):.1f} s")
    print(f"(Kueue's CI for this shape at x1: wall {KUEUE_CI['wall']} s, time to admission "
          f"small {KUEUE_CI['small']} / medium {KUEUE_CI['medium']} / large "
          f"{KUEUE_CI['large']} s)")


if __name__ == "__main__":
    main()
