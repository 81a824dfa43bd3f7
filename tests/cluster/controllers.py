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

The others, where each differs from JobSet (:data:`LAUNCHES`):

* **Kubeflow's training operator** (v1; ``training-operator``): namespace
  ``kubeflow`` and ServiceAccount ``training-operator`` of its standalone
  overlay, RBAC from ``manifests/base/rbac``. Its validating webhooks cannot be
  turned off (no flag; its controllers start only once its certificates are
  ready), so they run as JobSet's do, except for the certificate: the release
  always runs open-policy-agent's cert rotator, which keeps the certificate in
  a Secret and injects its CA into the release's ValidatingWebhookConfiguration.
  The Secret is created holding a certificate for 127.0.0.1 *and* the Service
  name the rotator checks, with a CA of the form it accepts; it keeps them and
  injects that CA, so the configuration is registered under its own name and
  the rotator works as on a cluster. Two things of the release cannot be moved:
  its webhook server listens on every interface (a port flag, no host one; the
  port is a free one), and the rotator waits for a fixed
  ``/tmp/k8s-webhook-server/serving-certs/tls.crt`` to exist (made if missing,
  see :func:`_training_operator_before_start`). Its MPIJob (v1) is neither
  installed nor run: see :data:`TRAINING_OPERATOR_SCHEMES`.
* **Kubeflow's MPI operator** (v2beta1; ``mpi-operator``): no webhooks. Its RBAC
  files are those of ``manifests/base``, namespace ``mpi-operator`` of its
  standalone overlay. It is not a controller-runtime manager and has neither a
  switch for leader election (it always elects itself, through a Lease in
  ``--lock-namespace``) nor one for its health server, which listens on
  ``:8080``, every interface, always: so one MPI operator at a time runs on a
  machine (:attr:`Launch.fixed_ports`), and it is taken as ready once it leads.
  Its metrics server stays off, as released (``--monitoring-port=0``).
* **KubeRay** (``kuberay``): namespace ``default`` and RBAC of ``config/default``
  and ``config/rbac``. Its webhooks are optional and off there (they are only
  in ``config/default-with-webhooks``, behind ``ENABLE_WEBHOOKS=true``), and
  they stay off here: its manager gives them no host or port (they would listen
  on ``:9443``, every interface), and v1.5.0 serves only the RayCluster one of
  the three its configuration registers (RayJob and RayService requests would be
  refused). Metrics and probes on 127.0.0.1, leader election off by its flag.
* **LeaderWorkerSet** (``lws``): namespace ``lws-system``, name prefix ``lws-`` and
  ServiceAccount ``lws-controller-manager`` of its ``config/default``, RBAC from
  ``config/rbac``. Its webhooks run as JobSet's do, from ``config/webhook`` (its
  ``mutating-patch.yaml`` and ``validating-patch.yaml`` give the pod webhooks their
  ``leaderworkerset.sigs.k8s.io/name`` object selector): a mutating and a validating
  one for LeaderWorkerSets, and a mutating and a validating one for the pods of its
  StatefulSets. The pod one is part of how it works, not a check: it gives a leader
  pod its ``group-index`` label (the controller makes a group's worker StatefulSet
  only once its leader pod has it) and a worker pod its ``worker-index``. Its
  Configuration file is JobSet's form: ``internalCertManagement`` off (the release's
  switch, else open-policy-agent's cert-controller would write a certificate for
  ``lws-webhook-service.lws-system.svc`` into a Secret and the fixed
  ``/tmp/k8s-webhook-server/serving-certs``), the webhook server on 127.0.0.1 with the
  control plane CA's certificate, metrics (HTTPS behind the API server's
  authentication, a self-signed certificate of controller-runtime's) and probes on
  127.0.0.1, leader election off. Its registered configurations are named
  ``lws-mutating-webhook-configuration`` and ``lws-validating-webhook-configuration``:
  the API server calls mutating configurations in name order, so kuota's (``kuota``,
  whose pod webhooks select pods by kuota's and Kueue's labels only) comes first and
  LWS's pod webhook after it, on the pod as kuota left it.

Not built, a test needing it is skipped (``make controllers``), unless
``KUOTA_REQUIRE_CLUSTER=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import fcntl
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import IO, Any, Literal

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


# -- Kubeflow's training operator (v1) ------------------------------------------------------

#: The kinds the training operator runs here (``--enable-scheme``): the release's default
#: set (every one it knows) less MPIJob. Its MPIJob is kubeflow.org/v1 in a CRD named
#: mpijobs.kubeflow.org, the very CRD the MPI operator installs with v2beta1 (the MPIJob
#: kuota queues): one cluster holds one of them, so build-controllers.sh leaves that CRD
#: out (crd-exclude) and the operator does not run its MPIJob controller. MPIJob is also
#: the one kind without a webhook entry in the release's configuration.
TRAINING_OPERATOR_SCHEMES = ("tfjob", "pytorchjob", "mxjob", "xgboostjob", "paddlejob")
#: Fixed in the release (pkg/cert): its cert rotator waits for ``tls.crt`` to appear here,
#: where its Deployment mounts the certificate Secret, before it starts any controller.
TRAINING_OPERATOR_MOUNT_CHECK = pathlib.Path("/tmp/k8s-webhook-server/serving-certs/tls.crt")
#: The release's defaults: --webhook-service-name, --webhook-secret-name and, in pkg/cert,
#: the CA's name the rotator verifies.
TRAINING_OPERATOR_SERVICE = "training-operator"
TRAINING_OPERATOR_SECRET = "training-operator-webhook-cert"
TRAINING_OPERATOR_CA_NAME = "training-operator-ca"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _training_operator_certificate(controller: PeerController,
                                   cert_dir: pathlib.Path) -> pathlib.Path:
    """A CA and serving certificate in the form open-policy-agent's cert-controller (the
    rotator the release runs unconditionally, v0.10.1) accepts as valid in its Secret, so
    it keeps them instead of making its own: an RSA CA in PKCS#1 named
    ``training-operator-ca`` (it verifies the CA for that name), and a serving certificate
    for ``training-operator.<namespace>.svc`` (which it verifies) and 127.0.0.1 (which the
    API server verifies, calling the webhooks by URL). Both valid for longer than its
    90-day renewal look-ahead, or it would replace them at once."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = cert_dir / "ca.crt", cert_dir / "ca.key"
    cert, key, csr = cert_dir / "tls.crt", cert_dir / "tls.key", cert_dir / "tls.csr"
    config, ext = cert_dir / "ca.cnf", cert_dir / "tls.ext"
    config.write_text(
        "[req]\ndistinguished_name = dn\nprompt = no\n"
        f"[dn]\nCN = {TRAINING_OPERATOR_CA_NAME}\nO = training-operator\n"
        "[ca]\nbasicConstraints = critical,CA:TRUE\n"
        "keyUsage = critical,digitalSignature,keyEncipherment,keyCertSign\n"
        f"subjectAltName = DNS:{TRAINING_OPERATOR_CA_NAME}\n")
    dns = f"{TRAINING_OPERATOR_SERVICE}.{controller.launch.namespace}.svc"
    ext.write_text(f"subjectAltName = DNS:{dns},IP:127.0.0.1\nextendedKeyUsage = serverAuth\n"
                   "keyUsage = digitalSignature,keyEncipherment\n")
    _openssl("genrsa", "-traditional", "-out", str(ca_key), "2048")
    _openssl("req", "-x509", "-new", "-key", str(ca_key), "-days", "3650", "-config",
             str(config), "-extensions", "ca", "-out", str(ca_cert))
    _openssl("genrsa", "-traditional", "-out", str(key), "2048")
    _openssl("req", "-new", "-key", str(key), "-subj", f"/CN={dns}", "-out", str(csr))
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key),
             "-CAcreateserial", "-days", "365", "-extfile", str(ext), "-out", str(cert))
    for scratch in (csr, config, ext):
        scratch.unlink()
    return ca_cert


def _training_operator_before_start(controller: PeerController) -> None:
    """What the release's standalone overlay makes besides RBAC, and what its pod has.

    * Its webhook certificate Secret (the overlay's secretGenerator makes it empty; the
      rotator fills it): made here holding the certificate above, which the rotator
      finds valid and keeps, injecting its CA into the release's webhook configuration.
    * The file its rotator waits for. The path is fixed in the release, outside any work
      directory, and only its existence is checked (the webhook server reads the
      certificate from $TMPDIR, see ``environment``): made if missing, with a comment as
      content, and left for later runs and other control planes.
    """
    cert_dir = controller.workdir / controller.launch.cert_dir
    data = {name: base64.b64encode((cert_dir / name).read_bytes()).decode()
            for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    controller.plane.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": TRAINING_OPERATOR_SECRET,
                     "namespace": controller.launch.namespace},
        "data": data}))
    TRAINING_OPERATOR_MOUNT_CHECK.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError), \
            TRAINING_OPERATOR_MOUNT_CHECK.open("x") as placeholder:
        placeholder.write("# Not a certificate: kuota's tests/cluster/controllers.py made this\n"
                          "# file because Kubeflow's training operator v1.8.1 waits for it to\n"
                          "# exist (pkg/cert); it reads its certificate from $TMPDIR.\n")


def _training_operator_environment(controller: PeerController) -> dict[str, str]:
    # MY_POD_NAMESPACE: where its Deployment runs (downward API), the rotator's namespace.
    # TMPDIR: controller-runtime's webhook server reads $TMPDIR/k8s-webhook-server/
    # serving-certs (the release gives it no directory), here the work directory's.
    return {"MY_POD_NAMESPACE": controller.launch.namespace,
            "TMPDIR": str(controller.workdir / "tmp")}


def _training_operator_argv(build: ControllerBuild, workdir: pathlib.Path,
                            kubeconfig: pathlib.Path, ports: Ports,
                            cert_dir: pathlib.Path) -> list[str]:
    # The webhook server has a port flag but no host one: it listens on every interface.
    return [str(build.manager), f"--kubeconfig={kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{ports.metrics}",
            f"--health-probe-bind-address=127.0.0.1:{ports.health}",
            f"--webhook-server-port={ports.webhook}", "--leader-elect=false",
            *(f"--enable-scheme={s}" for s in TRAINING_OPERATOR_SCHEMES)]


def _pytorchjob_probe(name: str, container: str) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": PROBE_NAMESPACE},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": container, "image": "registry.example/fake:1"}]}}}}}}


def _training_operator_webhooks_not_answering(plane: ControlPlane) -> str | None:
    """Why the training operator's validating webhooks are not in effect yet, or None when
    they are: a dry-run PyTorchJob is accepted, and one whose container is not named
    ``pytorch`` (the CRD's schema allows it) is refused by the webhook."""
    done = plane.kubectl("create", "--dry-run=server", "-f", "-",
                         input=json.dumps(_pytorchjob_probe("kuota-webhook-probe", "pytorch")),
                         check=False)
    if done.returncode != 0:
        return f"a dry-run PyTorchJob was refused: {done.stderr.strip()}"
    refused = plane.kubectl("create", "--dry-run=server", "-f", "-",
                            input=json.dumps(_pytorchjob_probe("kuota-webhook-probe", "main")),
                            check=False)
    if refused.returncode == 0:
        return "a dry-run PyTorchJob without a container named pytorch was accepted"
    if "denied the request" not in refused.stderr or "name pytorch" not in refused.stderr:
        return f"a dry-run PyTorchJob without a pytorch container was refused otherwise: " \
               f"{refused.stderr}"
    return None


# -- Kubeflow's MPI operator (v2) --------------------------------------------------------------

#: Its health server: ``:8080`` in cmd/mpi-operator/app (healthCheckPort), no flag.
MPI_OPERATOR_HEALTH_PORT = 8080
#: manifests/overlays/standalone's namespace, where its Lease is (--lock-namespace).
MPI_OPERATOR_NAMESPACE = "mpi-operator"
#: The Lease it always elects itself through (no switch turns election off).
MPI_OPERATOR_LEASE = "mpi-operator"


def _mpi_operator_argv(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
                       ports: Ports, cert_dir: pathlib.Path) -> list[str]:
    # As its Deployment: -alsologtostderr, and the standalone overlay's --lock-namespace.
    # --monitoring-port stays 0 (its default: no metrics server; it would listen on every
    # interface). Not scoped to a namespace (KUBEFLOW_NAMESPACE is not set).
    return [str(build.manager), "-alsologtostderr", f"--kubeConfig={kubeconfig}",
            f"--lock-namespace={MPI_OPERATOR_NAMESPACE}", "--monitoring-port=0"]


def _mpi_operator_before_start(controller: PeerController) -> None:
    """A Lease left by a manager stopped earlier on this control plane would hold the new
    one back until it expires (15 s): it is not released on shutdown."""
    controller.plane.kubectl("-n", controller.launch.namespace, "delete", "lease",
                             MPI_OPERATOR_LEASE, "--ignore-not-found")


def _mpi_operator_ready(controller: PeerController) -> bool:
    """Leading: its controller starts once it holds its Lease (there is one manager)."""
    got = controller.plane.kubectl("-n", controller.launch.namespace, "get", "lease",
                                   MPI_OPERATOR_LEASE, "-o", "json", check=False)
    return got.returncode == 0 and bool(
        json.loads(got.stdout).get("spec", {}).get("holderIdentity"))


# -- KubeRay ----------------------------------------------------------------------------------


def _kuberay_argv(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
                  ports: Ports, cert_dir: pathlib.Path) -> list[str]:
    # As config/manager's Deployment (the feature gate is its one argument), with the
    # listeners on 127.0.0.1 and leader election off (its default is on). Webhooks stay
    # off, as in config/default: ENABLE_WEBHOOKS is not set (see the module docstring).
    return [str(build.manager), f"--kubeconfig={kubeconfig}",
            f"--metrics-addr=127.0.0.1:{ports.metrics}",
            f"--health-probe-bind-address=127.0.0.1:{ports.health}",
            "--enable-leader-election=false", "--feature-gates=RayClusterStatusConditions=true"]


# -- LeaderWorkerSet ----------------------------------------------------------------------------

LWS_API = "leaderworkerset.x-k8s.io/v1"
#: The labels and annotation of LWS's pods (api/leaderworkerset/v1).
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"


def _lws_argv(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
              ports: Ports, cert_dir: pathlib.Path) -> list[str]:
    # LWS's Configuration (api/config/v1alpha1), in place of config/manager's
    # controller_manager_config.yaml: every listener on 127.0.0.1, the webhook server
    # reading tls.crt/tls.key from cert_dir, its cert-controller off (its own switch),
    # leader election off. The metrics server has no certificate setting: it makes a
    # self-signed one in memory.
    config = {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}"},
    }
    path = workdir / "controller_manager_config.yaml"
    path.write_text(yaml.safe_dump(config))
    # As config/default's Deployment: --config and --zap-log-level=2 (its pod webhook logs
    # each pod it defaults at that level). ENABLE_WEBHOOKS is not set: webhooks on.
    return [str(build.manager), f"--kubeconfig={kubeconfig}", f"--config={path}",
            "--zap-log-level=2"]


def _lws_probe(name: str) -> dict[str, Any]:
    return {"apiVersion": LWS_API, "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": PROBE_NAMESPACE},
            "spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": {
                "containers": [{"name": "main", "image": "registry.example/fake:1"}]}}}}}


def _lws_pod_probe() -> dict[str, Any]:
    """A leader pod as LWS's leader StatefulSet makes it (the set's name label, worker
    index 0, the size annotation), less what its pod webhook adds."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "kuota-webhook-probe-0", "namespace": PROBE_NAMESPACE,
                         "labels": {LWS_NAME_LABEL: "kuota-webhook-probe",
                                    LWS_WORKER_INDEX_LABEL: "0"},
                         "annotations": {LWS_SIZE_ANNOTATION: "2"}},
            "spec": {"containers": [{"name": "main", "image": "registry.example/fake:1"}]}}


def _lws_webhooks_not_answering(plane: ControlPlane) -> str | None:
    """Why LWS's webhook configurations are not all in effect yet, or None when they are:
    a dry-run LeaderWorkerSet comes back with the mutating webhook's network default, one
    whose name is not a DNS-1035 label (the API server allows it) is refused by the
    validating one, and a dry-run leader pod comes back with its group-index label from
    the pod webhook."""
    done = plane.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                         input=json.dumps(_lws_probe("kuota-webhook-probe")), check=False)
    if done.returncode != 0:
        return f"a dry-run LeaderWorkerSet was refused: {done.stderr.strip()}"
    network = json.loads(done.stdout)["spec"].get("networkConfig") or {}
    if network.get("subdomainPolicy") != "Shared":
        return f"a dry-run LeaderWorkerSet came back without LWS's defaults: {done.stdout}"
    refused = plane.kubectl("create", "--dry-run=server", "-f", "-",
                            input=json.dumps(_lws_probe("kuota-webhook.probe")), check=False)
    if refused.returncode == 0:
        return "a dry-run LeaderWorkerSet whose name is not a DNS-1035 label was accepted"
    if "denied the request" not in refused.stderr or "DNS-1035" not in refused.stderr:
        return f"a dry-run LeaderWorkerSet with a dotted name was refused otherwise: " \
               f"{refused.stderr}"
    pod = plane.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                        input=json.dumps(_lws_pod_probe()), check=False)
    if pod.returncode != 0:
        return f"a dry-run LWS leader pod was refused: {pod.stderr.strip()}"
    labels = json.loads(pod.stdout)["metadata"].get("labels") or {}
    if labels.get(LWS_GROUP_INDEX_LABEL) != "0":
        return f"a dry-run LWS leader pod came back without its group-index label: {labels}"
    return None


LAUNCHES: dict[str, Launch] = {
    "jobset": Launch(namespace="jobset-system", name_prefix="jobset-",
                     service_account="controller-manager", argv=_jobset_argv,
                     ready_path="/readyz",
                     webhooks_not_answering=_jobset_webhooks_not_answering),
    # manifests/overlays/standalone: namespace kubeflow, no name prefix.
    "training-operator": Launch(
        namespace="kubeflow", name_prefix="", service_account="training-operator",
        argv=_training_operator_argv, ready_path="/readyz",
        webhooks_not_answering=_training_operator_webhooks_not_answering,
        cert_dir="tmp/k8s-webhook-server/serving-certs",
        certificate=_training_operator_certificate,
        environment=_training_operator_environment,
        before_start=_training_operator_before_start),
    # manifests/overlays/standalone: namespace mpi-operator, no name prefix. No webhooks.
    "mpi-operator": Launch(
        namespace=MPI_OPERATOR_NAMESPACE, name_prefix="", service_account="mpi-operator",
        argv=_mpi_operator_argv, ready_path=None, ready=_mpi_operator_ready,
        before_start=_mpi_operator_before_start, fixed_ports=(MPI_OPERATOR_HEALTH_PORT,)),
    # config/default: namespace default, no name prefix, no webhooks.
    "kuberay": Launch(namespace="default", name_prefix="", service_account="kuberay-operator",
                      argv=_kuberay_argv, ready_path="/readyz"),
    # config/default: namespace lws-system, name prefix lws-.
    "lws": Launch(namespace="lws-system", name_prefix="lws-",
                  service_account="controller-manager", argv=_lws_argv, ready_path="/readyz",
                  webhooks_not_answering=_lws_webhooks_not_answering),
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


def peer_controller_fixture(name: str, *, scope: Scope = "session",
                            fixture_name: str | None = None) -> Any:
    """A pytest fixture running controller ``name`` on the ``control_plane`` fixture's
    cluster (one per control plane with the default session scope), named
    ``<name>_controller`` (a ``-`` of the name becoming ``_``) unless ``fixture_name`` says
    otherwise. Assign it to a
    module-level name of a conftest or test module::

        jobset_controller = peer_controller_fixture("jobset")

    Skipped (failed under ``KUOTA_REQUIRE_CLUSTER=1``) when the release is not built.
    Define it once per control plane's scope (best in tests/real/conftest.py): a second
    definition elsewhere would try to start a second manager, which is refused.
    """

    @pytest.fixture(scope=scope, name=fixture_name or f"{name.replace('-', '_')}_controller")
    def running(control_plane: ControlPlane) -> Iterator[PeerController]:
        build = require_controller(name)
        with PeerController(build, control_plane) as controller:
            yield controller

    return running

