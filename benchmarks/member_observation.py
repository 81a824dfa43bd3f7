"""Observing a large member: API requests and bytes per observation interval, before and after.

Two processes on this machine:

* a member cluster: the Kubernetes API emulator (tests/emulator) holding N
  nodes and M pods (a share of them finished, as in a batch cluster), C copies
  this manager sent there (Jobs labelled ``kuota.dev/origin``) with their pods,
  behind a byte-counting TCP proxy; between two observations it changes
  ``--churn`` pods (half new bound pods, a quarter finishing, a quarter of the
  finished ones deleted);
* this process, observing the member as the operator does, every interval:

  - ``list`` (before): what the operator did until the member mirror — the
    three lists ``GET /api/v1/nodes``, ``GET /api/v1/pods`` and
    ``GET /apis/batch/v1/jobs?labelSelector=kuota.dev/origin=...``, unpaged,
    read into the client's models and back to dicts, then reduced with the
    same code (:mod:`kuota.federation.observation`);
  - ``watch`` (after): :meth:`KubernetesMember.observe` — the member's nodes
    and pods listed once in pages and then watched
    (:mod:`kuota.federation.member_watch`), the copies listed each time.

For each interval it prints the requests the member served, the bytes it sent
(responses and watch events) and received, this process's CPU time over the
interval (decoding and reducing, by the observation and by the watch threads:
the operator's own cost) and how long the observation call took. The first ``watch``
interval is the initial sync (a paged list of everything); the following ones
are the steady state.

    .venv/bin/python benchmarks/member_observation.py [--nodes 2000] [--pods 20000] \\
        [--finished 0.3] [--copies 50] [--churn 200] [--intervals 5] [--mode both]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ORIGIN = "manager-1"
Body = dict[str, Any]


# -- the member: emulator + counting proxy, in its own process ----------------------------------

class CountingProxy:
    """A TCP relay that counts the bytes each way (one thread per direction and connection)."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.up = self.down = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            client, _ = self._server.accept()
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for source, sink, up in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, up), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, up: bool) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    if up:
                        self.up += len(data)
                    else:
                        self.down += len(data)
                sink.sendall(data)
        except OSError:
            pass  # the other side closed: the connection is over, nothing to count
        finally:
            for end in (source, sink):
                end.close()


def node(i: int) -> Body:
    name = f"node-{i:05d}"
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti",
                "nvidia.com/gpu": "8" if i % 3 == 0 else "0"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "p4d.24xlarge",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
                "topology.kubernetes.io/region": "eu-west-1",
                "gpu.example.com/model": "a100" if i % 3 == 0 else "none"}},
            "spec": {"podCIDR": f"10.{i // 250}.{i % 250}.0/24",
                     "providerID": f"aws:///eu-west-1a/i-{i:017x}"},
            "status": {"capacity": capacity, "allocatable": capacity,
                       "conditions": [{"type": kind, "status": status, "reason": reason,
                                       "lastHeartbeatTime": "2025-01-01T00:00:00Z",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}
                                      for kind, status, reason in (
                                          ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                          ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                          ("PIDPressure", "False", "KubeletHasSufficientPID"),
                                          ("Ready", "True", "KubeletReady"))],
                       "addresses": [{"type": "InternalIP",
                                      "address": f"10.0.{i // 250}.{i % 250}"},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": "v1.34.4", "osImage": "Ubuntu 24.04",
                                    "containerRuntimeVersion": "containerd://2.0.0",
                                    "kernelVersion": "6.8.0", "architecture": "amd64",
                                    "operatingSystem": "linux", "kubeProxyVersion": "",
                                    "bootID": f"boot-{i}", "machineID": f"machine-{i}",
                                    "systemUUID": f"uuid-{i}"}}}


def pod(name: str, node_name: str, phase: str, *, job: str, ours: bool = False) -> Body:
    labels = {"batch.kubernetes.io/job-name": job, "job-name": job, "app": "trainer",
              "batch.kubernetes.io/controller-uid": f"uid-{job}"}
    if ours:
        labels["kuota.dev/origin"] = ORIGIN
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels,
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                              "name": job, "uid": f"uid-{job}",
                                              "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": {"nodeName": node_name, "restartPolicy": "Never",
                     "schedulerName": "default-scheduler", "serviceAccountName": "default",
                     "containers": [{"name": "main", "image": "registry.example.com/train:1.4",
                                     "command": ["python", "-m", "train"],
                                     "args": ["--epochs", "10", "--data", "/data"],
                                     "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                                                   "limits": {"memory": "16Gi"}},
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data", "emptyDir": {}}],
                     "tolerations": [{"key": "node.kubernetes.io/not-ready",
                                      "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 300}]},
            "status": {"phase": phase, "hostIP": "10.0.0.1", "podIP": "10.1.0.1",
                       "startTime": "2025-01-01T00:00:00Z", "qosClass": "Burstable",
                       "conditions": [{"type": kind, "status": "True",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}
                                      for kind in ("PodScheduled", "Initialized",
                                                   "ContainersReady", "Ready")]}}


def copy_job(name: str) -> Body:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"kuota.dev/origin": ORIGIN},
                         "annotations": {"kuota.dev/origin-workload": f"default/job-{name}",
                                         "kuota.dev/member": "eu"}},
            "spec": {"parallelism": 4, "completions": 4, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.example.com/train:1.4"}]}}},
            "status": {"active": 4, "ready": 4, "startTime": "2025-01-01T00:00:00Z"}}


def serve_member(conn: Any, options: dict[str, Any]) -> None:
    from tests.emulator import Emulator

    rng = random.Random(options["seed"])
    with Emulator(keep_requests=0) as api:
        nodes = [node(i)["metadata"]["name"] for i in range(options["nodes"])]
        for i in range(options["nodes"]):
            api.create(node(i))
        for c in range(options["copies"]):
            api.create(copy_job(f"copy-{c}"))
            for k in range(4):
                api.create(pod(f"copy-{c}-{k}", rng.choice(nodes), "Running",
                               job=f"copy-{c}", ours=True))
        running: list[str] = []
        finished: list[str] = []
        for i in range(options["pods"] - 4 * options["copies"]):
            done = rng.random() < options["finished"]
            name = f"pod-{i:06d}"
            api.create(pod(name, rng.choice(nodes), "Succeeded" if done else "Running",
                           job=f"job-{i // 8}"))
            (finished if done else running).append(name)
        proxy = CountingProxy(api.port)
        sizes = {"node": len(json.dumps(node(0))),
                 "pod": len(json.dumps(pod("pod-000000", nodes[0], "Running", job="job-0")))}
        conn.send((f"http://127.0.0.1:{proxy.port}", sizes))
        serial = options["pods"]
        visible = api.store.resource_version
        while True:
            command, *args = conn.recv()
            if command == "stop":
                return
            if command == "churn":
                for _ in range(args[0] // 2):
                    name = f"pod-{serial:06d}"
                    serial += 1
                    api.create(pod(name, rng.choice(nodes), "Running", job=f"job-{serial // 8}"))
                    running.append(name)
                for _ in range(args[0] // 4):
                    if running:
                        name = running.pop(rng.randrange(len(running)))
                        api.patch("v1", "Pod", name, {"status": {"phase": "Succeeded"}},
                                  namespace="default", subresource="status")
                        finished.append(name)
                # the last change a watch of bound, unfinished pods sees
                visible = api.store.resource_version
                for _ in range(args[0] // 4):
                    if finished:
                        api.delete("v1", "Pod", finished.pop(rng.randrange(len(finished))),
                                   "default")
            conn.send((api.handler.requests_served, proxy.down, proxy.up, visible))


# -- the observer ---------------------------------------------------------------------------------

def observe_by_listing(url: str) -> Any:
    """The operator's observation before the member mirror: three full lists, every time."""
    import kubernetes.client as k8s

    from kuota.federation import observation
    from kuota.federation.kubernetes_member import api_client
    from placement.objects import ObjectError
    from tests.emulator import kubeconfig

    client = api_client(kubeconfig(url))
    core, batch = k8s.CoreV1Api(client), k8s.BatchV1Api(client)
    plain = client.sanitize_for_serialization
    nodes, pods, problems = {}, [], []
    for raw in plain(core.list_node()).get("items") or []:
        try:
            found = observation.node_of(raw)
        except ObjectError as exc:
            problems.append(str(exc))
            continue
        nodes[found.name] = found
    for raw in plain(core.list_pod_for_all_namespaces()).get("items") or []:
        try:
            use = observation.pod_use(raw, ORIGIN)
        except ObjectError as exc:
            problems.append(str(exc))
            continue
        if use is not None:
            pods.append(use)
    copies = plain(batch.list_job_for_all_namespaces(
        label_selector=f"kuota.dev/origin={ORIGIN}")).get("items") or []
    return observation.observation(nodes, pods, copies, problems)


def run(mode: str, conn: Any, url: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    from kuota.federation import member_watch
    from kuota.federation.kubernetes_member import KubernetesMember, digest_of
    from tests.emulator import kubeconfig

    conn.send(("churn", 0))
    before = conn.recv()
    rows = []
    member = KubernetesMember(kubeconfig(url))
    cpu = time.process_time()
    for interval in range(options["intervals"] + 1):
        churn = 0 if interval == 0 else options["churn"]
        conn.send(("churn", churn))
        _, _, _, version = conn.recv()
        if mode == "watch" and interval > 0:
            # let the changes reach the mirror first (in the operator, the interval does)
            mirror = member_watch.mirror(digest_of(kubeconfig(url)), None, ORIGIN)
            deadline = time.monotonic() + 30
            while int(mirror.pods.version or 0) < version:
                if time.monotonic() > deadline:
                    raise SystemExit("the pods watch did not deliver the interval's changes")
                time.sleep(0.01)
        wall = time.perf_counter()
        seen = observe_by_listing(url) if mode == "list" else member.observe(ORIGIN)
        wall = time.perf_counter() - wall
        conn.send(("churn", 0))
        after = conn.recv()
        # CPU of this process over the whole interval: the observation, and in watch mode
        # the watch threads decoding the interval's events
        used, cpu = time.process_time() - cpu, time.process_time()
        rows.append({"mode": mode, "interval": interval, "requests": after[0] - before[0],
                     "down": after[1] - before[1], "up": after[2] - before[2], "cpu": used,
                     "wall": wall, "nodes": len(seen.nodes), "copies": len(seen.copies)})
        before = after
    if mode == "watch":
        member_watch.close_all()
    return rows


def megabytes(n: float) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--finished", type=float, default=0.3,
                        help="share of the pods that finished (Succeeded)")
    parser.add_argument("--copies", type=int, default=50,
                        help="Jobs this manager sent there (4 running pods each)")
    parser.add_argument("--churn", type=int, default=200, help="pod changes per interval")
    parser.add_argument("--intervals", type=int, default=5)
    parser.add_argument("--mode", choices=("list", "watch", "both"), default="both")
    parser.add_argument("--seed", type=int, default=1)
    options = vars(parser.parse_args())
    ours, theirs = multiprocessing.Pipe()
    member = multiprocessing.Process(target=serve_member, args=(theirs, options), daemon=True)
    started = time.perf_counter()
    member.start()
    url, sizes = ours.recv()
    print(f"member: {options['nodes']} nodes, {options['pods']} pods "
          f"({options['finished']:.0%} finished), {options['copies']} copies; "
          f"{options['churn']} pod changes per interval; seeded in "
          f"{time.perf_counter() - started:.1f} s; one node is {sizes['node']} B of JSON, "
          f"one pod {sizes['pod']} B")
    modes = ("list", "watch") if options["mode"] == "both" else (options["mode"],)
    print(f"{'mode':<6} {'interval':>8} {'requests':>9} {'received':>11} {'sent':>9} "
          f"{'CPU':>8} {'wall':>8}")
    summary = {}
    for mode in modes:
        rows = run(mode, ours, url, options)
        for row in rows:
            label = "sync" if mode == "watch" and row["interval"] == 0 else str(row["interval"])
            print(f"{mode:<6} {label:>8} {row['requests']:>9} {megabytes(row['down']):>11} "
                  f"{megabytes(row['up']):>9} {row['cpu']:>7.2f}s {row['wall']:>7.2f}s")
        steady = rows[1:]
        summary[mode] = {key: statistics.mean(r[key] for r in steady)
                         for key in ("requests", "down", "up", "cpu", "wall")}
    ours.send(("stop",))
    member.join(10)
    print("\nper interval in steady state (mean of intervals 1..N):")
    for mode, row in summary.items():
        print(f"  {mode:<6} {row['requests']:.1f} requests, {megabytes(row['down'])} received "
              f"by the operator, {megabytes(row['up'])} sent, {row['cpu']:.3f} s CPU")


if __name__ == "__main__":
    main()
