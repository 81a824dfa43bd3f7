"""Peer controllers (JobSet, ...) running beside a real control plane.

kuota queues the workloads of other frameworks as Kueue does; what those
frameworks' own controllers do with a workload (the child Jobs a JobSet makes,
the defaults its webhook fills in, the status it reports) is only known by
running them. ``hack/controllers/build-controllers.sh`` builds each pinned
release (``hack/controllers/versions.sh``) from its Go module into
``$KUOTA_CACHE/controllers/<name>/<version>/``, with the CRDs, webhook and RBAC
manifests of that same release; :class:`PeerController` installs and runs it
against a :class:`~tests.cluster.controlplane.ControlPlane`, the way a cluster
runs its Deployment:

* its CRDs are applied server-side, as released, and waited for (Established);
* it runs as its own ServiceAccount (``jobset-system/jobset-controller-manager``)
  with the release's RBAC, rendered by ``kubectl kustomize`` with the namespace
  and name prefix of the release's ``config/default`` — so RBAC and the API
  server's OwnerReferencesPermissionEnforcement apply to it as on a cluster;
* it serves its admission webhooks, and the release's own webhook configurations
  (rules, object selectors, failure policies unchanged) are registered with
  ``clientConfig.url: https://127.0.0.1:<port>/<path>`` and the control plane's
  CA, exactly as tests/real/operator.py registers kuota's.

How each release is run — where it differs, its webhooks and certificates — is
:mod:`tests.cluster.peer_releases`.

Everything listens on 127.0.0.1 only, on ports from tests/ports.py: webhook,
metrics (HTTPS, behind the API server's authentication, as released) and
health probes. Leader election is off (one replica, nothing to elect). The log
goes to ``<workdir>/logs/<name>.log``, and the process is entered in the
control plane's ``processes`` while it runs, so the failure reports built from
``ControlPlane.logs()`` show its tail too.

Not built, a test needing it is skipped (``make controllers``), unless
``KUOTA_REQUIRE_CLUSTER=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import os
import pathlib
import re
import shutil
import socket
import tempfile
import time
import urllib.request
from collections.abc import Callable
from typing import IO, Any

import pytest
import yaml

from tests.cluster.binaries import ROOT, cache_dir
from tests.cluster.controlplane import ControlPlane, Process, StartError
from tests.ports import free_port

VERSIONS_FILE = ROOT / "hack" / "controllers" / "versions.sh"
#: How long a ServiceAccount token of a peer controller lasts: longer than a test session.
TOKEN_SECONDS = 12 * 3600
RBAC_KINDS = {"ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
WEBHOOK_KINDS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
#: How long a manager with ``fixed_ports`` waits for another test process's to stop.
FIXED_PORT_WAIT = 300


def _entries() -> dict[str, list[str]]:
    """The fields of each ``KUOTA_CONTROLLERS`` entry of versions.sh, by controller name."""
    text = VERSIONS_FILE.read_text()
    block = re.search(r"^KUOTA_CONTROLLERS=\((.*?)^\)", text, re.S | re.M)
    assert block, f"{VERSIONS_FILE} names no KUOTA_CONTROLLERS"
    entries = {}
    for line in re.findall(r'^\s*"([^"]+)"', block.group(1), re.M):
        fields = line.split()
        assert len(fields) >= 5, f"{VERSIONS_FILE}: malformed entry {line!r}"
        entries[fields[0]] = fields
    return entries


def controller_version(name: str) -> str:
    """The pinned release of controller ``name`` (``hack/controllers/versions.sh``)."""
    entries = _entries()
    if name not in entries:
        raise KeyError(f"no controller {name!r} in {VERSIONS_FILE} (there are: "
                       f"{', '.join(sorted(entries))})")
    return entries[name][2]


@dataclasses.dataclass(frozen=True)
class ControllerBuild:
    """What build-controllers.sh left for one controller release."""

    name: str
    version: str
    root: pathlib.Path

    @property
    def manager(self) -> pathlib.Path:
        return self.root / "bin" / "manager"

    @property
    def crds(self) -> list[pathlib.Path]:
        return sorted((self.root / "crds").glob("*.yaml"))

    def kustomization(self, part: str) -> pathlib.Path | None:
        """The kept kustomize directory ``part`` (``webhook``, ``rbac``), if the entry has one."""
        directory = self.root / part
        return directory if (directory / "kustomization.yaml").exists() else None


def find_controller(name: str) -> ControllerBuild | None:
    """The built release of controller ``name``, or None when it is not (completely) built."""
    version = controller_version(name)
    root = cache_dir() / "controllers" / name / version
    if not (root / ".complete").exists():
        return None
    return ControllerBuild(name, version, root)


def require_controller(name: str) -> ControllerBuild:
    """The built release of ``name``, or skip the test saying how to build it — a failure
    instead when ``KUOTA_REQUIRE_CLUSTER=1`` (CI), where every binary must have been built."""
    build = find_controller(name)
    if build is None:
        message = (f"{name} {controller_version(name)} is not built: run `make controllers` "
                   f"(hack/controllers/build-controllers.sh)")
        if os.environ.get("KUOTA_REQUIRE_CLUSTER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return build


# -- what differs between controllers ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Ports:
    """The 127.0.0.1 ports one run of a manager listens on."""

    webhook: int
    metrics: int
    health: int


@dataclasses.dataclass(frozen=True)
class Launch:
    """How one controller's release is installed and started.

    ``namespace`` and ``name_prefix`` are those of the release's default
    kustomization (where its Deployment would run), ``service_account`` the name
    before the prefix; ``argv`` returns the manager's command line (after writing
    any configuration file into the directory it is given); ``ready_path`` is its
    readiness probe on the health port; ``webhooks_not_answering`` says why the
    API server does not call the registered webhooks yet (None once it does).

    What only some releases need (the defaults are JobSet's way):

    * ``cert_dir``: where, under the work directory, its serving certificate is
      written (``tls.crt``, ``tls.key``); ``certificate`` writes them there and
      returns the CA file its webhook configurations are to trust (by default a
      certificate for 127.0.0.1 from the control plane's CA);
    * ``environment``: what its Deployment sets in the manager's environment;
    * ``before_start``: what its install makes besides CRDs and RBAC before the
      manager starts (run after ``certificate``);
    * ``ready``: when there is no readiness endpoint to ask, how else to tell it
      is up (instead of ``ready_path``);
    * ``fixed_ports``: ports the release binds on every interface whatever it is
      told; only one run of it per machine can hold them, so each is taken under a
      lock file shared by every test process of the machine while the manager runs.
    """

    namespace: str
    name_prefix: str
    service_account: str
    argv: Callable[[ControllerBuild, pathlib.Path, pathlib.Path, Ports, pathlib.Path],
                   list[str]]
    ready_path: str | None = "/readyz"
    webhooks_not_answering: Callable[[ControlPlane], str | None] | None = None
    cert_dir: str = "certs"
    certificate: Callable[[PeerController, pathlib.Path], pathlib.Path] | None = None
    environment: Callable[[PeerController], dict[str, str]] | None = None
    before_start: Callable[[PeerController], None] | None = None
    ready: Callable[[PeerController], bool] | None = None
    fixed_ports: tuple[int, ...] = ()


# -- running one ------------------------------------------------------------------------------


class PeerController:
    """One peer controller installed on ``plane`` and running; a context manager."""

    def __init__(self, build: ControllerBuild, plane: ControlPlane, launch: Launch) -> None:
        self.build, self.plane, self.launch = build, plane, launch
        self.workdir = plane.workdir / "controllers" / build.name
        self.log = plane.workdir / "logs" / f"{build.name}.log"
        self.process: Process | None = None
        self.ports: Ports | None = None
        self.webhook_configurations: list[dict[str, Any]] = []
        #: The CA file the API server trusts its webhooks' certificate by.
        self.ca_bundle: pathlib.Path = plane.ca.cert
        self._port_locks: list[IO[str]] = []

    def __enter__(self) -> PeerController:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def name(self) -> str:
        return self.build.name

    @property
    def service_account(self) -> str:
        return self.launch.name_prefix + self.launch.service_account

    def start(self) -> None:
        running = self.plane.processes.get(self.name)
        if running is not None and running.running():
            # Two managers would fight over the same objects and webhook configurations.
            raise StartError(f"{self.name} already runs on this control plane ({running.log}): "
                             f"is its fixture defined twice?")
        started = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.install_crds()
        rbac, self.webhook_configurations = self._render_release()
        self.plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": self.launch.namespace}}))
        self.plane.wait_namespace_ready(self.launch.namespace)
        if rbac:
            self.plane.kubectl("apply", "-f", "-",
                               input=yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                     "items": rbac}))
        self._start_manager()
        self._register_webhooks()
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        """Take the webhook configurations away first (failurePolicy Fail: with nobody
        listening, every JobSet and every JobSet pod would be refused), then stop."""
        for config in self.webhook_configurations:
            if self.plane.processes.get("kube-apiserver") and \
                    self.plane.processes["kube-apiserver"].running():
                self.plane.kubectl("delete", config["kind"].lower(),
                                   config["metadata"]["name"], "--ignore-not-found")
        if self.process is not None:
            self.process.stop()
            if self.plane.processes.get(self.name) is self.process:
                del self.plane.processes[self.name]
        while self._port_locks:
            held = self._port_locks.pop()
            fcntl.flock(held, fcntl.LOCK_UN)
            held.close()

    def tail(self, lines: int = 60) -> str:
        return self.process.tail(lines) if self.process else "(not started)"

    # -- the steps ----------------------------------------------------------------------------

    def install_crds(self) -> None:
        """The release's CRDs, applied server-side (they are too large for the
        last-applied annotation), then waited for until the API serves them."""
        crds = self.build.crds
        if not crds:
            raise StartError(f"{self.name}: no CRD YAML in {self.build.root / 'crds'}")
        names = [yaml.safe_load(p.read_text())["metadata"]["name"] for p in crds]
        for path in crds:
            self.plane.kubectl("apply", "--server-side", "-f", str(path))
        # Polled here, not with `kubectl wait --for=condition=Established`: that fails at
        # once ("accessor error: <nil>") on a CRD whose status has no conditions yet.
        deadline = time.monotonic() + 60
        waiting = set(names)
        while waiting:
            listed = json.loads(self.plane.kubectl(
                "get", "-o", "json", *[f"crd/{n}" for n in sorted(waiting)]).stdout)
            items = listed["items"] if listed.get("kind") == "List" else [listed]
            waiting -= {c["metadata"]["name"] for c in items
                        if any(k.get("type") == "Established" and k.get("status") == "True"
                               for k in (c.get("status") or {}).get("conditions") or [])}
            if waiting and time.monotonic() > deadline:
                raise StartError(f"{self.name}: CRDs not Established after 60 s: "
                                 f"{sorted(waiting)}")
            if waiting:
                time.sleep(0.2)

    def _render_release(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The release's RBAC and webhook configurations, rendered with kubectl's
        kustomize under the namespace and name prefix of its default kustomization
        (copies of the kept directories: kustomize reads only below its root)."""
        parts = [p for p in ("rbac", "webhook") if self.build.kustomization(p)]
        if not parts:
            return [], []
        overlay = self.workdir / "kustomize"
        shutil.rmtree(overlay, ignore_errors=True)
        overlay.mkdir(parents=True)
        for part in parts:
            source = self.build.kustomization(part)
            assert source is not None
            shutil.copytree(source, overlay / part)
        (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
            "namespace": self.launch.namespace, "namePrefix": self.launch.name_prefix,
            "resources": parts}))
        rendered = [d for d in yaml.safe_load_all(
            self.plane.kubectl("kustomize", str(overlay)).stdout) if d]
        rbac = [d for d in rendered if d["kind"] in RBAC_KINDS]
        webhooks = [d for d in rendered if d["kind"] in WEBHOOK_KINDS]
        # The rest is the webhook's Service: the API server is sent to a URL instead.
        left = {d["kind"] for d in rendered} - RBAC_KINDS - WEBHOOK_KINDS - {"Service"}
        if left:
            raise StartError(f"{self.name}: the release's kustomizations hold kinds this "
                             f"harness does not install: {sorted(left)}")
        if self.build.kustomization("webhook") and not webhooks:
            raise StartError(f"{self.name}: no webhook configuration in "
                             f"{self.build.kustomization('webhook')}")
        return rbac, webhooks

    def _start_manager(self) -> None:
        cert_dir = self.workdir / self.launch.cert_dir
        if self.launch.certificate is not None:
            self.ca_bundle = self.launch.certificate(self, cert_dir)
        else:
            # controller-runtime's webhook and metrics servers read tls.crt and tls.key.
            self.plane.ca.serving("tls", hosts=("127.0.0.1",), directory=cert_dir)
        if self.launch.before_start is not None:
            self.launch.before_start(self)
        kubeconfig = self.plane.service_account_kubeconfig(
            self.launch.namespace, self.service_account, self.workdir / "manager.kubeconfig",
            seconds=TOKEN_SECONDS)
        self.ports = Ports(webhook=free_port(), metrics=free_port(), health=free_port())
        argv = self.launch.argv(self.build, self.workdir, kubeconfig, self.ports, cert_dir)
        # Nothing of the test's environment (KUBECONFIG, proxies) leaks into the manager.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir)}
        if self.launch.environment is not None:
            env.update(self.launch.environment(self))
        if "TMPDIR" in env:
            pathlib.Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
        self._hold_fixed_ports()
        self.process = Process(self.name, argv, self.log, env=env)
        self.plane.processes[self.name] = self.process
        self.process.start()
        url = f"http://127.0.0.1:{self.ports.health}{self.launch.ready_path}"

        def ready() -> bool:
            if self.launch.ready is not None:
                return self.launch.ready(self)
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bool(answer.status == 200)
        try:
            self.process.wait_until(ready, 90)
        except StartError as failed:
            raise StartError(f"{self.name} {self.build.version} ({self.log}): {failed}") from None

    def _hold_fixed_ports(self) -> None:
        """Take each of the release's fixed ports under its machine-wide lock file (waiting
        up to FIXED_PORT_WAIT for another test process's manager to stop), then make sure
        nobody else listens on it, with an error that says so instead of the manager's."""
        for port in self.launch.fixed_ports:
            path = pathlib.Path(tempfile.gettempdir()) / f"kuota-peer-controller-port-{port}.lock"
            held = path.open("a")
            deadline = time.monotonic() + FIXED_PORT_WAIT
            while True:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        held.close()
                        raise StartError(
                            f"{self.name} {self.build.version} listens on :{port} whatever it "
                            f"is told, and another test process held that port ({path}) for "
                            f"{FIXED_PORT_WAIT} s") from None
                    time.sleep(1)
            self._port_locks.append(held)
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("", port))
                except OSError as taken:
                    raise StartError(f"{self.name} {self.build.version} listens on :{port} "
                                     f"whatever it is told, and something else listens there "
                                     f"already: {taken}") from None

    def _register_webhooks(self) -> None:
        if not self.webhook_configurations:
            return
        assert self.ports is not None
        bundle = base64.b64encode(self.ca_bundle.read_bytes()).decode()
        for config in self.webhook_configurations:
            for hook in config["webhooks"]:
                service = hook["clientConfig"].get("service")
                if service is None:
                    raise StartError(f"{self.name}: webhook {hook['name']} has no service "
                                     f"clientConfig to point at 127.0.0.1")
                hook["clientConfig"] = {
                    "url": f"https://127.0.0.1:{self.ports.webhook}{service.get('path', '/')}",
                    "caBundle": bundle}
        self.plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "List", "items": self.webhook_configurations}))
        # The API server picks new webhook configurations up from a watch: wait until it
        # calls them, or a JobSet created right now could skip defaulting and validation.
        deadline = time.monotonic() + 30
        not_answering = self.launch.webhooks_not_answering
        if not_answering is None:
            raise StartError(f"{self.name}: LAUNCHES gives no way to tell that its webhooks "
                             f"answer (webhooks_not_answering)")
        while (why := not_answering(self.plane)) is not None:
            if time.monotonic() > deadline:
                raise StartError(f"{self.name}: the API server does not call its webhooks on "
                                 f"127.0.0.1:{self.ports.webhook} after 30 s: {why}\n"
                                 f"{self.tail()}")
            if not self.process or not self.process.running():
                raise StartError(f"{self.name} exited:\n{self.tail()}")
            time.sleep(0.3)
