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

Webhooks, and why not its internal certificate management: JobSet's manager
normally runs open-policy-agent's cert-controller, which writes a self-signed
certificate for ``jobset-webhook-service.jobset-system.svc`` to a fixed
``/tmp/k8s-webhook-server/serving-certs`` and injects its CA into the webhook
configurations, which name that Service. Here there is no Service the API
server can reach (no kube-proxy, no cluster DNS), a certificate for a Service
name does not verify for 127.0.0.1, and two control planes on one machine would
share the fixed directory. So the configuration file turns
``internalCertManagement`` off — the release's supported switch for
cert-manager installs — and the webhook server is given a certificate for
127.0.0.1 signed by the control plane's CA (tests/cluster/pki.py). The webhooks
do run: JobSet's defaulting (success policy, Indexed completion, restart
policy, DNS hostnames) and validation are part of what a JobSet is. After the
configurations are registered, a server-side dry-run proves the API server
calls both (a defaulted JobSet, a refused one) before any test creates one.

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
import json
import os
import pathlib
import re
import shutil
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Literal

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
Scope = Literal["session", "package", "module", "class", "function"]


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
    """

    namespace: str
    name_prefix: str
    service_account: str
    argv: Callable[[ControllerBuild, pathlib.Path, pathlib.Path, Ports, pathlib.Path],
                   list[str]]
    ready_path: str
    webhooks_not_answering: Callable[[ControlPlane], str | None]


def _jobset_argv(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
                 ports: Ports, cert_dir: pathlib.Path) -> list[str]:
    # JobSet's Configuration (api/config/v1alpha1): every listener on 127.0.0.1; the
    # webhook and metrics servers read tls.crt/tls.key from cert_dir.
    config = {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}", "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
    }
    path = workdir / "controller_manager_config.yaml"
    path.write_text(yaml.safe_dump(config))
    # Flags would override the file; only the kubeconfig is given (controller-runtime's
    # --kubeconfig, else it would look for in-cluster credentials).
    return [str(build.manager), f"--kubeconfig={kubeconfig}", f"--config={path}"]


#: Where webhook probes are sent (server-side dry runs: nothing is stored). Not a test
#: namespace: kuota's own webhook (failurePolicy Fail) sees JobSets everywhere but in
#: kube-system and kuota-system, and no kuota operator need run while a controller starts.
PROBE_NAMESPACE = "kube-system"


def _jobset_probe(name: str) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": PROBE_NAMESPACE},
            "spec": {"replicatedJobs": [{"name": "probe", "template": {"spec": {"template": {
                "spec": {"containers": [{"name": "main", "image": "registry.example/fake:1"}]},
            }}}}]}}


def _jobset_webhooks_not_answering(plane: ControlPlane) -> str | None:
    """Why JobSet's webhook configurations are not both in effect yet, or None when they
    are: a dry-run create comes back defaulted by the mutating one, and a name too long
    for its Jobs is refused by the validating one (the CRD's schema allows it)."""
    done = plane.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                         input=json.dumps(_jobset_probe("kuota-webhook-probe")), check=False)
    if done.returncode != 0:
        return f"a dry-run JobSet was refused: {done.stderr.strip()}"
    defaulted = json.loads(done.stdout)["spec"]
    if (defaulted.get("successPolicy") or {}).get("operator") != "All":
        return f"a dry-run JobSet came back without JobSet's defaults: {defaulted}"
    refused = plane.kubectl("create", "--dry-run=server", "-f", "-",
                            input=json.dumps(_jobset_probe("kuota-webhook-probe-" + "x" * 40)),
                            check=False)
    if refused.returncode == 0:
        return "a dry-run JobSet whose Job names are too long was accepted"
    if "denied the request" not in refused.stderr or "too long" not in refused.stderr:
        return f"a dry-run JobSet with too long a name was refused otherwise: {refused.stderr}"
    return None


LAUNCHES: dict[str, Launch] = {
    "jobset": Launch(namespace="jobset-system", name_prefix="jobset-",
                     service_account="controller-manager", argv=_jobset_argv,
                     ready_path="/readyz",
                     webhooks_not_answering=_jobset_webhooks_not_answering),
}


# -- running one ------------------------------------------------------------------------------


class PeerController:
    """One peer controller installed on ``plane`` and running; a context manager."""

    def __init__(self, build: ControllerBuild, plane: ControlPlane) -> None:
        if build.name not in LAUNCHES:
            raise KeyError(f"tests/cluster/controllers.py does not know how to run "
                           f"{build.name!r} (LAUNCHES has {', '.join(sorted(LAUNCHES))})")
        self.build, self.plane = build, plane
        self.launch = LAUNCHES[build.name]
        self.workdir = plane.workdir / "controllers" / build.name
        self.log = plane.workdir / "logs" / f"{build.name}.log"
        self.process: Process | None = None
        self.ports: Ports | None = None
        self.webhook_configurations: list[dict[str, Any]] = []

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
        cert_dir = self.workdir / "certs"
        # controller-runtime's webhook and metrics servers read tls.crt and tls.key.
        self.plane.ca.serving("tls", hosts=("127.0.0.1",), directory=cert_dir)
        kubeconfig = self.plane.service_account_kubeconfig(
            self.launch.namespace, self.service_account, self.workdir / "manager.kubeconfig",
            seconds=TOKEN_SECONDS)
        self.ports = Ports(webhook=free_port(), metrics=free_port(), health=free_port())
        argv = self.launch.argv(self.build, self.workdir, kubeconfig, self.ports, cert_dir)
        # Nothing of the test's environment (KUBECONFIG, proxies) leaks into the manager.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir)}
        self.process = Process(self.name, argv, self.log, env=env)
        self.plane.processes[self.name] = self.process
        self.process.start()
        url = f"http://127.0.0.1:{self.ports.health}{self.launch.ready_path}"

        def ready() -> bool:
            with urllib.request.urlopen(url, timeout=2) as answer:
                return bool(answer.status == 200)
        try:
            self.process.wait_until(ready, 90)
        except StartError as failed:
            raise StartError(f"{self.name} {self.build.version} ({self.log}): {failed}") from None

    def _register_webhooks(self) -> None:
        if not self.webhook_configurations:
            return
        assert self.ports is not None
        bundle = base64.b64encode(self.plane.ca.cert.read_bytes()).decode()
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
        while (why := self.launch.webhooks_not_answering(self.plane)) is not None:
            if time.monotonic() > deadline:
                raise StartError(f"{self.name}: the API server does not call its webhooks on "
                                 f"127.0.0.1:{self.ports.webhook} after 30 s: {why}\n"
                                 f"{self.tail()}")
            if not self.process or not self.process.running():
                raise StartError(f"{self.name} exited:\n{self.tail()}")
            time.sleep(0.3)


def peer_controller_fixture(name: str, *, scope: Scope = "session",
                            fixture_name: str | None = None) -> Any:
    """A pytest fixture running controller ``name`` on the ``control_plane`` fixture's
    cluster (one per control plane with the default session scope), named
    ``<name>_controller`` unless ``fixture_name`` says otherwise. Assign it to a
    module-level name of a conftest or test module::

        jobset_controller = peer_controller_fixture("jobset")

    Skipped (failed under ``KUOTA_REQUIRE_CLUSTER=1``) when the release is not built.
    Define it once per control plane's scope (best in tests/real/conftest.py): a second
    definition elsewhere would try to start a second manager, which is refused.
    """

    @pytest.fixture(scope=scope, name=fixture_name or f"{name}_controller")
    def running(control_plane: ControlPlane) -> Iterator[PeerController]:
        build = require_controller(name)
        with PeerController(build, control_plane) as controller:
            yield controller

    return running

