"""Operator latency: 500 Jobs created at once into free quota, create → unsuspend.

Three processes on this machine, talking over real HTTP on 127.0.0.1:

* the Kubernetes API emulator (tests/emulator) with kuota's CRDs;
* the operator exactly as ``kuota operator`` runs it (kopf watches, the
  HTTPS webhook that suspends Jobs — the emulator calls it on every create —,
  the cycle loop, the writer), with a self-signed certificate from openssl;
* this client: it creates N queue-labelled Jobs concurrently and watches
  Jobs and Workloads, timestamping when each Job's create was sent, when its
  Workload appeared, when the Workload's admission was stored and when the
  Job was unsuspended.

It prints create → unsuspend latency (p50, p99, max), Jobs admitted per
second (N / time from the first create to the last unsuspend) and the
median of each stage. Targets: p99 ≤ 2 s, ≥ 100 Jobs/s.

    .venv/bin/python benchmarks/operator_latency.py [--jobs 500] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

API = "kuota.dev/v1alpha1"


def serve_emulator(conn: Any, stop: Any) -> None:
    from tests.emulator import Emulator
    from tests.integration.operator import harness

    with Emulator(keep_requests=0) as api:
        harness.install_crds(api)
        for name in ("default", "kuota-system"):
            harness.namespace(api, name)
        quotas = {"default": {"cpu": 100_000, "memory": "100Ti"}}
        api.apply(harness.flavor("default", labels={"pool": "batch"}),
                  harness.cluster_queue("team", quotas=quotas),
                  harness.local_queue("main", "team"))
        conn.send(api.url)
        stop.wait()


def run_operator(url: str, certs: str, probe_port: int, webhook_port: int,
                 webhook: bool, events: bool) -> None:
    import logging

    import kopf

    from kuota.operator.handlers import WebhookOptions, build_registry
    from kuota.operator.loop import Operator
    from kuota.operator.settings import Options
    from tests.integration.operator import harness

    logging.basicConfig(level=logging.WARNING)
    cert, key = harness.certificate(Path(certs))
    operator = Operator(Options(lease_name=None, status_interval=1.0, events=events))
    hook = WebhookOptions(addr="127.0.0.1", port=webhook_port, certfile=str(cert),
                          pkeyfile=str(key), host="127.0.0.1", managed="kuota.dev")
    registry = build_registry(operator, kopf.ConnectionInfo(server=url),
                              webhook=hook if webhook else None,
                              probe_addr=("127.0.0.1", probe_port))
    profile = os.environ.get("KUOTA_BENCH_PROFILE")
    if not profile:
        asyncio.run(kopf.operator(registry=registry, standalone=True, clusterwide=True))
        return
    import cProfile

    with cProfile.Profile() as profiler:
        asyncio.run(kopf.operator(registry=registry, standalone=True, clusterwide=True))
    profiler.dump_stats(profile)


def job(index: int, suspend: bool) -> dict[str, Any]:
    pod = {"restartPolicy": "Never",
           "containers": [{"name": "main", "image": "busybox",
                           "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"bench-{index:04d}", "namespace": "default",
                         "labels": {"kuota.dev/queue-name": "main"}},
            "spec": {"parallelism": 1, "completions": 1, "suspend": suspend,
                     "template": {"spec": pod}}}


async def watch(session: aiohttp.ClientSession, url: str, path: str,
                on_event: Any, ready: asyncio.Event) -> None:
    async with session.get(f"{url}{path}?watch=true&allowWatchBookmarks=true",
                           timeout=aiohttp.ClientTimeout(total=None)) as stream:
        ready.set()
        async for line in stream.content:
            if line.strip():
                on_event(json.loads(line))


async def client(url: str, count: int, concurrency: int, webhook: bool) -> dict[str, Any]:
    sent: dict[str, float] = {}
    created: dict[str, float] = {}
    workload_seen: dict[str, float] = {}
    admitted: dict[str, float] = {}
    started: dict[str, float] = {}
    owner: dict[str, str] = {}

    def on_job(event: dict[str, Any]) -> None:
        obj = event["object"]
        name = obj["metadata"]["name"]
        if obj.get("spec", {}).get("suspend") is False and name in sent:
            started.setdefault(name, time.perf_counter())

    def on_workload(event: dict[str, Any]) -> None:
        obj = event["object"]
        refs = obj["metadata"].get("ownerReferences") or [{}]
        job_name = refs[0].get("name", "")
        owner[obj["metadata"]["name"]] = job_name
        workload_seen.setdefault(job_name, time.perf_counter())
        if (obj.get("status") or {}).get("admission"):
            admitted.setdefault(job_name, time.perf_counter())

    connector = aiohttp.TCPConnector(limit=concurrency + 4)
    async with aiohttp.ClientSession(connector=connector) as session:
        ready_jobs, ready_wls = asyncio.Event(), asyncio.Event()
        watchers = [asyncio.create_task(watch(session, url, "/apis/batch/v1/jobs", on_job,
                                              ready_jobs)),
                    asyncio.create_task(watch(session, url, f"/apis/{API}/workloads",
                                              on_workload, ready_wls))]
        await ready_jobs.wait()
        await ready_wls.wait()
        gate = asyncio.Semaphore(concurrency)

        async def create(index: int) -> None:
            body = job(index, suspend=not webhook)
            name = body["metadata"]["name"]
            async with gate:
                sent[name] = time.perf_counter()
                async with session.post(f"{url}/apis/batch/v1/namespaces/default/jobs",
                                        json=body) as reply:
                    answer = await reply.json()
                    if reply.status != 201 or answer["spec"].get("suspend") is not True:
                        raise RuntimeError(f"{name}: {reply.status} {answer}")
                created[name] = time.perf_counter()

        begin = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(count)))
        deadline = time.perf_counter() + 120
        while len(started) < count and time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
        for task in watchers:
            task.cancel()
    latencies = sorted(started[n] - sent[n] for n in started)
    stages = {
        "create request (incl. webhook)": [created[n] - sent[n] for n in created],
        "created -> Workload seen": [workload_seen[n] - created[n] for n in started
                                     if n in workload_seen],
        "Workload seen -> admission stored": [admitted[n] - workload_seen[n] for n in started
                                              if n in admitted and n in workload_seen],
        "admission stored -> Job unsuspended": [started[n] - admitted[n] for n in started
                                                if n in admitted],
    }
    return {"count": len(latencies), "latencies": latencies, "begin": begin,
            "creates_done": max(created.values()) - begin,
            "last": max(started.values()) - begin if started else float("nan"),
            "stages": stages}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32,
                        help="create requests in flight at once")
    parser.add_argument("--no-webhook", dest="webhook", action="store_false",
                        help="create the Jobs suspended instead of having the webhook do it")
    parser.add_argument("--no-events", dest="events", action="store_false",
                        help="the operator posts no Kubernetes Events")
    args = parser.parse_args()
    from tests.integration.operator.harness import free_port

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    stop = ctx.Event()
    emulator = ctx.Process(target=serve_emulator, args=(child, stop), daemon=True)
    emulator.start()
    url = parent.recv()
    probe_port, webhook_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as certs:
        operator = ctx.Process(target=run_operator, args=(url, certs, probe_port, webhook_port,
                                                           args.webhook, args.events),
                               daemon=True)
        operator.start()
        try:
            asyncio.run(_wait_ready(url, probe_port, args.webhook))
            result = asyncio.run(client(url, args.jobs, args.concurrency, args.webhook))
            metrics = asyncio.run(_metrics(probe_port))
        finally:
            operator.terminate()
            operator.join(30)
            stop.set()
            emulator.join(10)
    lat = result["latencies"]
    rate = result["count"] / result["last"] if result["count"] else 0.0
    print(f"jobs: {args.jobs} created at once ({args.concurrency} in flight), "
          f"{result['count']} unsuspended; webhook {'on' if args.webhook else 'off'}, "
          f"events {'on' if args.events else 'off'}")
    print(f"create -> unsuspend latency: p50 {percentile(lat, 0.5):.3f} s, "
          f"p99 {percentile(lat, 0.99):.3f} s, max {max(lat, default=float('nan')):.3f} s")
    print(f"all creates answered after {result['creates_done']:.2f} s; last Job unsuspended "
          f"after {result['last']:.2f} s; {rate:.0f} jobs admitted/s")
    print("median per stage:")
    for stage, values in result["stages"].items():
        print(f"  {stage:38s} p50 {statistics.median(values) if values else float('nan'):.3f} s"
              f"  p99 {percentile(values, 0.99):.3f} s")
    print(f"operator: {metrics}")
    ok = result["count"] == args.jobs and percentile(lat, 0.99) <= 2.0 and rate >= 100
    print("targets (p99 <= 2 s, >= 100 jobs/s):", "met" if ok else "NOT met")
    return 0


async def _wait_ready(url: str, probe_port: int, webhook: bool) -> None:
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(f"http://127.0.0.1:{probe_port}/readyz") as r, \
                        session.get(f"{url}/apis/admissionregistration.k8s.io/v1/"
                                    "mutatingwebhookconfigurations/kuota.dev") as w:
                    hook = await w.json() if w.status == 200 else {}
                    leading = r.status == 200 and (await r.text()) == "leading"
                    if leading and (hook.get("webhooks") or not webhook):
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise TimeoutError("the operator did not get ready")


async def _metrics(probe_port: int) -> str:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{probe_port}/metrics") as reply:
        text = await reply.text()
    wanted = ("kuota_operator_cycles_total", "kuota_operator_write_conflicts_total",
              "kuota_operator_admissions_forgotten_total")
    found = [line for line in text.splitlines() if line.split(" ")[0] in wanted]
    return ", ".join(found)


if __name__ == "__main__":
    sys.exit(main())
