"""Start and stop a real Kubernetes control plane on 127.0.0.1.

The parts and why each is there:

* **etcd** — the API server's storage (``--unsafe-no-fsync``: tests, not data).
* **kube-apiserver** — RBAC authorization, the default admission plugins,
  service-account token signing (so the operator gets a real bound token
  from TokenRequest and runs as its ServiceAccount, not as admin), and a
  static token file for the few users the control plane itself needs.
* **kube-controller-manager** — the Job controller, the garbage collector,
  the namespace and service-account controllers: everything an emulator
  leaves out.
* **kube-scheduler** — with the *shipped* KubeSchedulerConfiguration, only
  its kubeconfig, leader election and extender URL rewritten for 127.0.0.1.
* **kwok** — plays the kubelet for fake nodes (``kwok-stages.yaml``): pods are
  bound by the real scheduler, then run, end, and take time to terminate.

Every process logs to ``<workdir>/logs/<name>.log``; :meth:`ControlPlane.logs`
returns their tails for a failure report. Ports are picked below the
kernel's ephemeral range (see tests/ports.py), so a port
cannot be handed to someone else's socket while a process restarts.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import yaml

from tests.cluster import pki
from tests.cluster.binaries import ROOT, Binaries
from tests.cluster.orphans import detached_child
from tests.ports import free_port

HERE = pathlib.Path(__file__).resolve().parent
ADMIN_TOKEN = "kuota-test-admin"
SCHEDULER_TOKEN = "kuota-test-scheduler"
ISSUER = "https://kubernetes.default.svc.cluster.local"
FAKE_NODE = {"kwok.x-k8s.io/node": "fake"}


#: kube-controller-manager's controllers for the tests: what an emulator lacks, and no
#: more (fewer controllers start faster).
TEST_CONTROLLERS = (
    "job,garbage-collector-controller,namespace-controller,"
    "serviceaccount-controller,serviceaccount-token-controller,"
    "root-ca-certificate-publisher-controller,pod-garbage-collector-controller,"
    "node-lifecycle-controller,replicaset-controller,deployment-controller,"
    "statefulset-controller,cronjob-controller,"
    "ttl-after-finished-controller,clusterrole-aggregation-controller")


class StartError(RuntimeError):
    """A control-plane process did not come up; the message carries its log's tail."""


class Process:
    """One control-plane program, its log file and how to tell it is up."""

    def __init__(self, name: str, argv: list[str], log: pathlib.Path,
                 env: dict[str, str] | None = None) -> None:
        self.name, self.argv, self.log = name, argv, log
        self.env = env
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"$ {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=self.env,
                                          preexec_fn=detached_child())

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout: float = 10) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return "(no log)"
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def wait_until(self, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise StartError(f"{self.name} exited with {self.popen and self.popen.poll()}:\n"
                                 f"{self.tail()}")
            with contextlib.suppress(OSError, ValueError):
                if ready():
                    return
            time.sleep(0.2)
        raise StartError(f"{self.name} not ready after {timeout:.0f} s:\n{self.tail()}")


def _get(url: str, *, token: str | None = None, context: ssl.SSLContext | None = None,
         timeout: float = 2) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode(errors="replace")


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def kubeconfig(server: str, ca: pathlib.Path, token: str, user: str = "user") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {
                "server": server, "certificate-authority": str(ca)}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}]}


class ControlPlane:
    """A control plane of ``binaries`` rooted at ``workdir``; a context manager.

    ``extender_url``, when given, is where kube-scheduler finds ``kuota
    extender`` (the shipped scheduler configuration's urlPrefix is rewritten
    to it), and ``extender_tls`` the files of its ``tlsConfig`` (the shipped
    ones are paths on a control-plane node); the extender is ignorable, so the
    scheduler works without one. ``controllers`` is kube-controller-manager's
    ``--controllers`` (default: only what the tests need, :data:`TEST_CONTROLLERS`;
    ``"*"``: every controller on by default, as on a real cluster).
    """

    def __init__(self, binaries: Binaries, workdir: pathlib.Path, *,
                 extender_url: str | None = None,
                 extender_tls: dict[str, str] | None = None,
                 controllers: str | None = None) -> None:
        self.binaries = binaries
        self.controllers = controllers or TEST_CONTROLLERS
        self.workdir = workdir
        self.extender_url = extender_url
        self.extender_tls = extender_tls
        self.ca = pki.Authority(workdir / "pki")
        self.processes: dict[str, Process] = {}
        self.api_port = free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"
        self.admin_kubeconfig = workdir / "admin.kubeconfig"
        self._context = ssl.create_default_context(cafile=str(self.ca.cert))

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        self._start_etcd()
        self._start_apiserver()
        self._write_kubeconfigs()
        self._start_controller_manager()
        self._start_scheduler()
        self._start_kwok()
        self.wait_namespace_ready("default")
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        for name in ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver",
                     "etcd"):
            if name in self.processes:
                self.processes[name].stop()

    def logs(self, lines: int = 30) -> str:
        return "\n\n".join(f"--- {name} ({p.log}) ---\n{p.tail(lines)}"
                           for name, p in self.processes.items())

    def restart(self, name: str) -> None:
        """Stop and start one process again (same flags, same ports)."""
        process = self.processes[name]
        process.stop()
        process.start()

    # -- the parts ----------------------------------------------------------------------------

    def _process(self, name: str, argv: list[str]) -> Process:
        process = Process(name, argv, self.workdir / "logs" / f"{name}.log")
        self.processes[name] = process
        process.start()
        return process

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        etcd = self._process("etcd", [
            self.binaries.path("etcd"), "--name=test",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=test=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync", "--log-level=warn"])
        etcd.wait_until(lambda: '"health":"true"' in _get(f"{self.etcd_url}/health")[1], 30)

    def _start_apiserver(self) -> None:
        pki_dir = self.workdir / "pki"
        cert, key = self.ca.serving("apiserver", hosts=("127.0.0.1", "localhost"))
        proxy_cert, proxy_key = self.ca.client("front-proxy-client")
        private, public = pki.signing_key_pair(pki_dir)
        tokens = pki_dir / "tokens.csv"
        tokens.write_text(f'{ADMIN_TOKEN},kuota-test-admin,admin,"system:masters"\n'
                          f"{SCHEDULER_TOKEN},system:kube-scheduler,scheduler\n")
        self._process("kube-apiserver", [
            self.binaries.path("kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.api_port}",
            f"--tls-cert-file={cert}", f"--tls-private-key-file={key}",
            f"--client-ca-file={self.ca.cert}",
            # The aggregation layer (kuota's visibility API): the API server vouches for
            # users to extension servers with this client certificate and these headers.
            f"--requestheader-client-ca-file={self.ca.cert}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-allowed-names=front-proxy-client",
            f"--proxy-client-cert-file={proxy_cert}", f"--proxy-client-key-file={proxy_key}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=Node,RBAC",
            # On top of the defaults, as hardened clusters (and OpenShift) run them: an owner
            # reference with blockOwnerDeletion needs `update` on the owner's finalizers; a
            # namespace's node selector is merged into each new pod's.
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement,PodNodeSelector",
            f"--service-account-issuer={ISSUER}",
            f"--service-account-key-file={public}",
            f"--service-account-signing-key-file={private}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            f"--cert-dir={pki_dir / 'generated'}",
            "--v=1"])
        self.wait_api_ready()

    def wait_api_ready(self, timeout: float = 60) -> None:
        """Wait for the API server's /readyz (after a start or a restart)."""
        self.processes["kube-apiserver"].wait_until(
            lambda: _get(f"{self.url}/readyz", token=ADMIN_TOKEN, context=self._context)[0] == 200,
            timeout)

    def _write_kubeconfigs(self) -> None:
        self.admin_kubeconfig.write_text(yaml.safe_dump(
            kubeconfig(self.url, self.ca.cert, ADMIN_TOKEN, "admin")))
        self.scheduler_kubeconfig = self.workdir / "scheduler.kubeconfig"
        self.scheduler_kubeconfig.write_text(yaml.safe_dump(
            kubeconfig(self.url, self.ca.cert, SCHEDULER_TOKEN, "scheduler")))

    def _start_component(self, name: str, kubeconfig: pathlib.Path, flags: list[str]) -> None:
        """Start a component that serves /healthz over HTTPS, and wait until it is healthy."""
        port = free_port()
        component = self._process(name, [
            self.binaries.path(name),
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", *flags, "--v=1"])
        component.wait_until(lambda: _get(f"https://127.0.0.1:{port}/healthz",
                                          context=_insecure())[0] == 200, 60)

    def _start_controller_manager(self) -> None:
        private, _ = pki.signing_key_pair(self.workdir / "pki")
        self._start_component("kube-controller-manager", self.admin_kubeconfig, [
            f"--kubeconfig={self.admin_kubeconfig}",
            "--leader-elect=false",
            f"--service-account-private-key-file={private}",
            f"--root-ca-file={self.ca.cert}",
            "--use-service-account-credentials=false",
            f"--controllers={self.controllers}"])

    def _scheduler_config(self) -> pathlib.Path:
        """The shipped KubeSchedulerConfiguration, rewritten only where a host path is named."""
        shipped = yaml.safe_load(
            (ROOT / "manifests" / "scheduler" / "kube-scheduler-config.yaml").read_text())
        shipped["clientConnection"]["kubeconfig"] = str(self.scheduler_kubeconfig)
        shipped["leaderElection"] = {"leaderElect": False}
        for extender in shipped.get("extenders") or []:
            self.point_at_extender(extender)
        path = self.workdir / "kube-scheduler.yaml"
        path.write_text(yaml.safe_dump(shipped))
        return path

    def point_at_extender(self, extender: dict[str, Any]) -> None:
        """Rewrite one ``extenders`` entry of a KubeSchedulerConfiguration for this host."""
        # Nobody listens without extender_url; the extender is ignorable.
        extender["urlPrefix"] = self.extender_url or f"http://127.0.0.1:{free_port()}"
        extender["enableHTTPS"] = extender["urlPrefix"].startswith("https:")
        extender.pop("tlsConfig", None)  # its files could not be read: kube-scheduler would exit
        if self.extender_url and self.extender_tls:
            extender["tlsConfig"] = dict(self.extender_tls)

    def _start_scheduler(self) -> None:
        self._start_component("kube-scheduler", self.scheduler_kubeconfig,
                              [f"--config={self._scheduler_config()}"])

    def _start_kwok(self) -> None:
        kwok = self._process("kwok", [
            self.binaries.path("kwok"),
            f"--kubeconfig={self.admin_kubeconfig}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--config={HERE / 'kwok-stages.yaml'}",
            "--node-lease-duration-seconds=40",
            "--cidr=10.244.0.0/16", "--node-ip=10.1.0.1", "--v=WARN"])
        time.sleep(0.5)
        if not kwok.running():
            raise StartError(f"kwok exited:\n{kwok.tail()}")

    # -- using it -----------------------------------------------------------------------------

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                kubeconfig_path: pathlib.Path | None = None, timeout: float = 60
                ) -> subprocess.CompletedProcess[str]:
        """Run the version's kubectl as admin (or as ``kubeconfig_path``)."""
        env = dict(os.environ, HOME=str(self.workdir), KUBECONFIG=str(
            kubeconfig_path or self.admin_kubeconfig))
        done = subprocess.run([self.binaries.path("kubectl"),
                               f"--cache-dir={self.workdir / 'kubectl-cache'}", *args],
                              input=input, capture_output=True, text=True, env=env,
                              timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n"
                                 f"{done.stderr}{done.stdout}")
        return done

    def wait_namespace_ready(self, namespace: str, timeout: float = 60) -> None:
        """Wait for the namespace's default ServiceAccount (pods are refused before it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.kubectl("-n", namespace, "get", "serviceaccount", "default",
                                check=False)
            if done.returncode == 0:
                return
            time.sleep(0.3)
        raise StartError(f"namespace {namespace}: no default ServiceAccount after "
                         f"{timeout:.0f} s\n{self.logs()}")

    def service_account_kubeconfig(self, namespace: str, name: str, path: pathlib.Path,
                                   *, seconds: int = 3600, server: str | None = None
                                   ) -> pathlib.Path:
        """A kubeconfig holding a real bound token of ``namespace/name`` (TokenRequest).

        ``server`` replaces the API server's URL (a proxy in front of it, say).
        """
        token = self.kubectl("-n", namespace, "create", "token", name,
                             f"--duration={seconds}s").stdout.strip()
        path.write_text(yaml.safe_dump(kubeconfig(server or self.url, self.ca.cert, token,
                                                  name)))
        return path

    def add_nodes(self, *nodes: dict[str, Any]) -> None:
        """Create kwok nodes (see :func:`node`) and wait until they are Ready."""
        self.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "List", "items": list(nodes)}))
        names = {n["metadata"]["name"] for n in nodes}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            listed = json.loads(self.kubectl("get", "nodes", "-o", "json").stdout)["items"]
            ready = {n["metadata"]["name"] for n in listed
                     if any(c["type"] == "Ready" and c["status"] == "True"
                            for c in (n.get("status") or {}).get("conditions") or [])}
            if names <= ready:
                return
            time.sleep(0.3)
        raise StartError(f"kwok nodes {names} not Ready:\n{self.logs()}")


def node(name: str, *, cpu: str = "8", memory: str = "32Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         extra: dict[str, str] | None = None) -> dict[str, Any]:
    """A fake node kwok manages: capacity, labels (``kubernetes.io/hostname`` added), taints."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": dict(FAKE_NODE),
                         "labels": {"kubernetes.io/hostname": name, "type": "kwok",
                                    **(labels or {})}},
            "spec": spec,
            "status": {"capacity": capacity, "allocatable": capacity}}
