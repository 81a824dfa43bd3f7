#!/usr/bin/env python3
"""``make sandbox``: kuota on a real Kubernetes control plane on this machine, in one command.

Why it exists: Kueue's quick start uses kind, but kind needs a container
runtime, and trying kuota's Kubernetes half used to mean wiring the real test
tier's pieces by hand. This script is those pieces, put together the way a user
would install kuota:

1. **Binaries.** The pinned Kubernetes version's etcd, kube-apiserver,
   kube-controller-manager, kube-scheduler and kubectl, and kwok, built from
   Go modules into ``~/.cache/kuota`` (``hack/cluster/build-bins.sh``), and
   helm (``hack/helm/build-helm.sh``). Reused when built; built here otherwise
   (needs Go, 10-20 minutes once).
2. **A control plane** (``tests/cluster/controlplane.py``) on 127.0.0.1 with
   every controller kube-controller-manager runs by default (Jobs, CronJobs,
   Deployments, ... as on a real cluster), and kwok nodes: two CPU nodes and
   two GPU nodes, labelled for the flavors of ``examples/sandbox/queues.yaml``.
3. **The chart** (``charts/kuota``) with ``outOfCluster.host=127.0.0.1``: the
   CRDs, the RBAC, the webhook configuration and the visibility APIService,
   pointed at this machine, and the serving certificate in its Secret.
4. **The operator**, ``kuota operator`` run here as the chart's ServiceAccount
   (a real bound token, so the chart's RBAC is what it runs with), logging in
   with ``--kubeconfig``, its certificate read from the chart's Secret
   (``--webhook-secret``), the webhook and the pending positions
   (``--visibility-listen``) served.

Then it prints ``export KUBECONFIG=...`` and what to try, and waits. Ctrl-C
(SIGINT) or SIGTERM stops everything in order — the operator, then kwok,
kube-scheduler, kube-controller-manager, kube-apiserver, etcd — and removes
the work directory (kept with ``--workdir`` or ``--keep``); exit status 0.
A start that fails, or a part that exits while the sandbox runs, stops what it
started and exits 1 with the failing part's log.

For scripts and tests: the line ``sandbox ready`` is printed once everything
answers, and ``--ready-file PATH`` gets a JSON object then (``kubeconfig``,
``path``: a directory with kubectl, kubectl-kuota and kuota, ``seconds``,
``workdir``, and ``ports``: what the API server, the webhook, the visibility API
and the operator's probes listen on).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the test tier's modules are reused
    sys.path.insert(0, str(ROOT))

from tests.cluster import binaries as bins  # noqa: E402
from tests.cluster.controlplane import ControlPlane, Process, StartError, node  # noqa: E402
from tests.ports import free_port  # noqa: E402

NAMESPACE = "kuota-system"
HOST = "127.0.0.1"
#: The token the operator logs in with lasts as long as the sandbox's CA (2 days).
TOKEN_SECONDS = 2 * 86400
#: Kept for GPU pods, as clouds taint GPU nodes: only pods that tolerate it go there.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
#: The flavors of examples/sandbox/queues.yaml select these by ``node-pool``.
NODES = (
    node("sandbox-cpu-1", cpu="8", memory="32Gi", labels={"node-pool": "cpu"}),
    node("sandbox-cpu-2", cpu="8", memory="32Gi", labels={"node-pool": "cpu"}),
    node("sandbox-gpu-1", cpu="16", memory="64Gi", labels={"node-pool": "gpu-a100"},
         taints=[GPU_TAINT], extra={"nvidia.com/gpu": "4"}),
    node("sandbox-gpu-2", cpu="16", memory="64Gi", labels={"node-pool": "gpu-a100"},
         taints=[GPU_TAINT], extra={"nvidia.com/gpu": "4"}),
)


class Stopped(Exception):
    """SIGINT or SIGTERM arrived: stop everything and exit 0."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signal.Signals(signum).name)


def _say(text: str) -> None:
    print(text, flush=True)


# -- binaries ----------------------------------------------------------------------------------


def _newest(versions: list[str]) -> str:
    return max(versions, key=lambda v: [int(p) for p in v.lstrip("v").split(".")])


def ensure_binaries(version: str, *, build: bool) -> tuple[bins.Binaries, str]:
    """The control plane's binaries and helm, built first when missing (and allowed)."""
    found, helm = bins.find_binaries(version), bins.helm_path()
    if found is None:
        _build(build, "the Kubernetes binaries", ["bash", "hack/cluster/build-bins.sh", version])
        found = bins.find_binaries(version)
    if helm is None:
        _build(build, "helm", ["bash", "hack/helm/build-helm.sh"])
        helm = bins.helm_path()
    if found is None or helm is None:
        raise StartError(f"the binaries of {version} or helm are still missing after building")
    return found, helm


def _build(allowed: bool, what: str, argv: list[str]) -> None:
    if not allowed:
        raise StartError(f"{what}: not built, and --no-build was given: run "
                         f"`{' '.join(argv)}` (needs Go >= 1.26)")
    _say(f"building {what} ({' '.join(argv)}; needs Go >= 1.26, cold 10-20 min, once)")
    subprocess.run(argv, cwd=ROOT, check=True)


# -- the parts ---------------------------------------------------------------------------------


def install_chart(plane: ControlPlane, helm: str, webhook_port: int,
                  visibility_port: int) -> None:
    """``helm install`` of the chart for an operator on this machine (outOfCluster.host)."""
    home = plane.workdir / "helm"
    env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig),
               HELM_CACHE_HOME=str(home / "cache"), HELM_CONFIG_HOME=str(home / "config"),
               HELM_DATA_HOME=str(home / "data"))
    argv = [helm, "install", "kuota", str(ROOT / "charts" / "kuota"), "--namespace", NAMESPACE,
            "--create-namespace", "--set", f"outOfCluster.host={HOST}",
            "--set", f"webhook.port={webhook_port}", "--set", f"visibility.port={visibility_port}"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=180)
    (plane.workdir / "logs" / "helm-install.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise StartError(f"helm install failed:\n{done.stderr}{done.stdout}")


def wait_crds_served(plane: ControlPlane, timeout: float = 60) -> None:
    """Every kuota CRD is listed from the API server's watch cache. Right after a CRD is
    made, lists from the cache answer 429 "storage is (re)initializing" for a moment; an
    operator started then has its first watches refused, so it starts once they answer."""
    plurals = [doc["spec"]["names"]["plural"] for doc in _chart_crds()]
    deadline = time.monotonic() + timeout
    waiting = list(plurals)
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if plane.kubectl(
            "get", "--raw", f"/apis/kuota.dev/v1alpha1/{p}?resourceVersion=0&limit=1",
            check=False).returncode != 0]
        if waiting:
            time.sleep(0.3)
    if waiting:
        raise StartError(f"kuota.dev {', '.join(waiting)} not served after {timeout:.0f} s")


def _chart_crds() -> list[dict[str, Any]]:
    docs = []
    for path in sorted((ROOT / "charts" / "kuota" / "crds").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _kuota(command: str) -> str:
    """A console script of this environment (the virtualenv ``make setup`` made)."""
    script = pathlib.Path(sys.executable).parent / command
    if not script.exists():
        raise StartError(f"{script} is missing: run `make setup`")
    return str(script)


def start_operator(plane: ControlPlane, webhook_port: int, visibility_port: int,
                   probes: int) -> Process:
    """``kuota operator`` out of cluster as the chart's ServiceAccount; waits for /readyz."""
    plane.wait_namespace_ready(NAMESPACE)
    kubeconfig = plane.service_account_kubeconfig(
        NAMESPACE, "kuota-operator", plane.workdir / "operator.kubeconfig",
        seconds=TOKEN_SECONDS)
    argv = [_kuota("kuota"), "operator", "--kubeconfig", str(kubeconfig), "--lease", "none",
            "--webhook-listen", f"{HOST}:{webhook_port}",
            "--webhook-secret", f"{NAMESPACE}/kuota-webhook-tls",
            "--visibility-listen", f"{HOST}:{visibility_port}",
            "--probes", f"{HOST}:{probes}"]
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "REDIS_URL")}
    # Its copy of the serving certificate (--webhook-secret) goes with the work directory,
    # even if the operator is killed before it can remove it.
    env["TMPDIR"] = str(plane.workdir / "tmp")
    (plane.workdir / "tmp").mkdir(mode=0o700, exist_ok=True)
    operator = Process("kuota-operator", argv, plane.workdir / "logs" / "kuota-operator.log",
                       env=env)
    plane.processes["kuota-operator"] = operator
    operator.start()
    operator.wait_until(lambda: _ok(f"http://{HOST}:{probes}/readyz"), 90)
    return operator


def _ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as answer:
        return bool(answer.status == 200)


def wait_visibility(plane: ControlPlane) -> None:
    """The APIService of pending positions answers (the API server reached the operator)."""
    plane.kubectl("wait", "--for=condition=Available", "--timeout=60s",
                  "apiservice/v1beta2.visibility.kuota.dev", timeout=90)


def user_bin(plane: ControlPlane) -> pathlib.Path:
    """A directory for PATH: this version's kubectl, the kubectl plugin and kuota."""
    where = plane.workdir / "bin"
    where.mkdir(exist_ok=True)
    for name, target in (("kubectl", plane.binaries.path("kubectl")),
                         ("kubectl-kuota", _kuota("kubectl-kuota")), ("kuota", _kuota("kuota"))):
        (where / name).symlink_to(target)
    return where


# -- the whole -----------------------------------------------------------------------------


def bring_up(plane: ControlPlane, helm: str) -> dict[str, int]:
    """Start every part; the ports they listen on (for --ready-file)."""
    ports = {"apiserver": plane.api_port, "webhook": free_port(), "visibility": free_port(),
             "operator-probes": free_port()}
    plane.start()
    _say(f"control plane up ({plane.startup_seconds:.1f} s); adding kwok nodes, installing "
         "the chart")
    plane.add_nodes(*NODES)
    install_chart(plane, helm, ports["webhook"], ports["visibility"])
    wait_crds_served(plane)
    start_operator(plane, ports["webhook"], ports["visibility"], ports["operator-probes"])
    wait_visibility(plane)
    plane.kubectl("get", "clusterqueues")  # what a user tries first must work
    return ports


def ready_text(plane: ControlPlane, path: pathlib.Path, seconds: float) -> str:
    return f"""
kuota sandbox is up in {seconds:.0f} s: Kubernetes {plane.binaries.version} on {plane.url}, \
2 CPU and 2 GPU kwok nodes, the kuota chart and `kuota operator` (webhook and pending positions).
Work directory {plane.workdir} (logs in logs/). Ctrl-C stops it.

  export KUBECONFIG={plane.admin_kubeconfig}
  export PATH={path}:$PATH     # kubectl {plane.binaries.version}, kubectl-kuota, kuota

  kubectl apply -f examples/sandbox/queues.yaml    # two flavors, a ClusterQueue, a LocalQueue
  kubectl create -f examples/sandbox/job.yaml      # a Kueue-style sample Job (again: it waits)
  kubectl create -f examples/sandbox/gpu-job.yaml  # admitted on the gpu-a100 flavor
  kubectl get cq,lq,kwl -A
  kubectl kuota pending clusterqueue cluster-queue
  kubectl kuota why <workload> -n default

sandbox ready"""


@contextmanager
def signals_stop() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Stopped` inside; ignored while stopping, so a second
    Ctrl-C cannot leave half the processes running."""
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s in previous:
            signal.signal(s, signal.SIG_IGN)


def watch(plane: ControlPlane, interval: float = 1.0) -> None:
    """Wait for a signal; a part that exits meanwhile ends the sandbox (exit status 1)
    rather than leaving a cluster that half works."""
    while True:
        dead = [name for name, process in plane.processes.items() if not process.running()]
        if dead:
            raise StartError(f"{', '.join(dead)} exited; stopping the rest. Its log:\n"
                             + "\n".join(plane.processes[name].tail() for name in dead))
        time.sleep(interval)


def stop(plane: ControlPlane) -> None:
    operator = plane.processes.get("kuota-operator")
    if operator is not None:
        operator.stop(timeout=20)
    plane.stop()


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    workdir = args.workdir or pathlib.Path(tempfile.mkdtemp(prefix="kuota-sandbox-"))
    keep = args.keep or args.workdir is not None
    status = 0
    plane: ControlPlane | None = None
    with signals_stop():
        try:
            binaries, helm = ensure_binaries(args.version, build=not args.no_build)
            plane = ControlPlane(binaries, workdir, controllers="*")
            ports = bring_up(plane, helm)
            path = user_bin(plane)
            seconds = time.monotonic() - started
            if args.ready_file:
                args.ready_file.write_text(json.dumps({
                    "kubeconfig": str(plane.admin_kubeconfig), "path": str(path),
                    "seconds": round(seconds, 1), "workdir": str(workdir), "ports": ports}))
            _say(ready_text(plane, path, seconds))
            watch(plane)
        except Stopped as exc:
            _say(f"\n{exc}: stopping the sandbox")
        except (StartError, AssertionError, subprocess.SubprocessError, OSError) as exc:
            print(f"sandbox: {exc}", file=sys.stderr)
            status = 1
        finally:
            if plane is not None:
                stop(plane)
            if not keep:
                shutil.rmtree(workdir, ignore_errors=True)
    _say("sandbox stopped" + (f"; work directory kept: {workdir}" if keep else ""))
    return status


def build_parser() -> argparse.ArgumentParser:
    versions = bins.pinned_versions()
    parser = argparse.ArgumentParser(
        prog="make sandbox", description="Start a local Kubernetes control plane with kwok "
        "nodes, install kuota's chart and run its operator; Ctrl-C stops it all.")
    parser.add_argument("--version", choices=versions, default=_newest(versions),
                        help="Kubernetes version (default %(default)s)")
    parser.add_argument("--workdir", type=pathlib.Path, metavar="DIR",
                        help="keep everything here (default: a new temporary directory, "
                             "removed when the sandbox stops)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary work directory (logs) after stopping")
    parser.add_argument("--ready-file", type=pathlib.Path, metavar="PATH",
                        help="write a JSON object (kubeconfig, path, seconds, workdir, ports) "
                             "here once the sandbox is ready")
    parser.add_argument("--no-build", action="store_true",
                        help="fail instead of building missing binaries")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workdir is not None and args.workdir.exists() and any(args.workdir.iterdir()):
        parser.error(f"--workdir {args.workdir}: not empty (a sandbox starts afresh)")
    return run(args)


if __name__ == "__main__":
    with suppress(BrokenPipeError):
        sys.exit(main())
