"""How each peer controller's release is run beside the control plane (:data:`LAUNCHES`).

:mod:`tests.cluster.controllers` installs and runs a release the way a cluster
runs its Deployment; this module says, release by release, what differs:
namespaces and ServiceAccounts, command lines, certificates, readiness, and
the dry-runs proving the API server calls its webhooks. JobSet's way is the
default.

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
* **Kubeflow Trainer v2** (``trainer``): namespace ``kubeflow-system`` of its
  ``manifests/overlays/manager``, RBAC from ``manifests/base/rbac`` (names already
  prefixed). It needs JobSet running (a TrainJob runs through one). Its webhooks are
  validating only and run as JobSet's do; its Configuration turns its cert rotator
  off (``certManagement.enable``, the release's switch) and puts every listener on
  127.0.0.1; it has no certificate directory setting, so its webhook server reads
  controller-runtime's default under ``$TMPDIR``, the work directory's.

"""

from __future__ import annotations

import base64
import contextlib
import json
import pathlib
import subprocess
from collections.abc import Iterator
from typing import Any, Literal

import pytest
import yaml

from tests.cluster.controllers import (
    ControllerBuild,
    Launch,
    PeerController,
    Ports,
    require_controller,
)
from tests.cluster.controlplane import ControlPlane

Scope = Literal["session", "package", "module", "class", "function"]


def _configured(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
                config: dict[str, Any], *flags: str) -> list[str]:
    """A controller-runtime manager's command line with its Configuration file written
    into ``workdir``. Flags would override the file: only the kubeconfig is given
    (controller-runtime's --kubeconfig, else it would look for in-cluster credentials),
    and ``flags``."""
    path = workdir / "controller_manager_config.yaml"
    path.write_text(yaml.safe_dump(config))
    return [str(build.manager), f"--kubeconfig={kubeconfig}", f"--config={path}", *flags]


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
    return _configured(build, workdir, kubeconfig, config)


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
        placeholder.write("# Not a certificate: kuota's tests/cluster/peer_releases.py made this\n"
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
    # As config/default's Deployment: --config and --zap-log-level=2 (its pod webhook logs
    # each pod it defaults at that level). ENABLE_WEBHOOKS is not set: webhooks on.
    return _configured(build, workdir, kubeconfig, config, "--zap-log-level=2")


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


# -- Kubeflow Trainer v2 ------------------------------------------------------------------------

TRAINER_API = "trainer.kubeflow.org/v1alpha1"


def _trainer_argv(build: ControllerBuild, workdir: pathlib.Path, kubeconfig: pathlib.Path,
                  ports: Ports, cert_dir: pathlib.Path) -> list[str]:
    # The Trainer's Configuration (pkg/apis/config/v1alpha1), in place of
    # manifests/base/manager's: every listener on 127.0.0.1, its cert rotator off (the
    # release's switch: certificates "provided externally"), leader election off. Its
    # webhook server has no certificate directory setting: controller-runtime's default,
    # $TMPDIR/k8s-webhook-server/serving-certs (see ``environment``).
    config = {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": ports.webhook},
        "metrics": {"bindAddress": f"127.0.0.1:{ports.metrics}", "secureServing": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports.health}",
                   "readinessEndpointName": "readyz", "livenessEndpointName": "healthz"},
    }
    return _configured(build, workdir, kubeconfig, config)


def _trainer_environment(controller: PeerController) -> dict[str, str]:
    return {"TMPDIR": str(controller.workdir / "tmp")}


def _trainer_webhooks_not_answering(plane: ControlPlane) -> str | None:
    """Why the Trainer's validating webhooks are not in effect yet, or None when they are:
    a dry-run TrainJob naming a ClusterTrainingRuntime that does not exist (the CRD's
    schema allows it) is refused by its TrainJob webhook."""
    probe = {"apiVersion": TRAINER_API, "kind": "TrainJob",
             "metadata": {"name": "kuota-webhook-probe", "namespace": PROBE_NAMESPACE},
             "spec": {"runtimeRef": {"name": "kuota-webhook-probe-missing"}}}
    refused = plane.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe),
                            check=False)
    if refused.returncode == 0:
        return "a dry-run TrainJob naming a runtime that does not exist was accepted"
    if "denied the request" not in refused.stderr \
            or "must be created before" not in refused.stderr:
        return f"a dry-run TrainJob without its runtime was refused otherwise: {refused.stderr}"
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
    # manifests/overlays/manager: namespace kubeflow-system; its base names carry their
    # prefix already (kubeflow-trainer-controller-manager).
    "trainer": Launch(namespace="kubeflow-system", name_prefix="",
                      service_account="kubeflow-trainer-controller-manager",
                      argv=_trainer_argv, ready_path="/readyz",
                      webhooks_not_answering=_trainer_webhooks_not_answering,
                      cert_dir="tmp/k8s-webhook-server/serving-certs",
                      environment=_trainer_environment),
}


def launch_of(name: str) -> Launch:
    """How release ``name`` is run; KeyError naming the known ones otherwise."""
    if name not in LAUNCHES:
        raise KeyError(f"tests/cluster/peer_releases.py does not know how to run {name!r} "
                       f"(LAUNCHES has {', '.join(sorted(LAUNCHES))})")
    return LAUNCHES[name]


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
        with PeerController(build, control_plane, launch_of(name)) as controller:
            yield controller

    return running

