"""kuota installed with ``helm install`` on a real control plane admits a Job.

The session's kubectl-applied operator objects (tests/real/operator.py) are taken
away first, so the chart installs into ``kuota-system`` as on a cluster that has only
the CRDs — the way a user upgrades from the kustomize install — and they are put
back afterwards for the other tests.

Pods do not really run on kwok nodes, so the chart's Deployment cannot serve the
webhook. Instead the chart is installed with ``webhook.url`` pointing at
127.0.0.1 (and that address in its certificate), and ``kuota operator`` runs on
the host with what the chart made for its pods: the ServiceAccount's token (its
RBAC), the Deployment's arguments (leader election on the chart's Lease) and the
serving certificate from the chart's Secret, which the API server trusts through
the CA the chart put into the webhook configuration. Then:

* a queue-labelled Job is held by the webhook, admitted and started;
* ``helm upgrade`` keeps the certificate and the CA (the chart looks them up), so
  the running operator keeps being trusted and admits the next Job; a new name
  in the certificate re-signs it with the same CA (the caBundle stays), a CA past
  two thirds of its validity is replaced (and the caBundle with it);
* ``helm uninstall`` removes the webhook and the operator's objects and keeps the
  CRDs, the queues and the Workloads; Jobs already started run on, and a new Job is
  no longer held.

The optional parts are installed too (all but cert-manager's and
prometheus-operator's kinds, whose CRDs a bare control plane lacks), and the
second kube-scheduler is run the same way: the real kube-scheduler binary with the
chart's ``kuota-scheduler.yaml`` as the chart's ServiceAccount (in-cluster
credentials and DNS replaced by a kubeconfig and 127.0.0.1), which must start
with the RBAC the chart gives it, lead on its Lease and bind pods of its profile.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from tests.cluster.binaries import ROOT, helm_path, require
from tests.cluster.controlplane import ControlPlane, Process, node
from tests.cluster.kube import Kube
from tests.ports import free_port
from tests.real import builders as b
from tests.real import operator as op

CHART = ROOT / "charts" / "kuota"
NS = op.OPERATOR_NAMESPACE
# Where the operator listens decides the host run, not the chart: these are replaced.
HOST_FLAGS = ("--webhook-listen=", "--webhook-cert-dir=", "--probes=")


class Helm:
    """helm as the cluster's admin, its caches and settings under ``home``."""

    def __init__(self, binary: str, plane: ControlPlane, home: pathlib.Path) -> None:
        self.binary = binary
        self.env = dict(os.environ, KUBECONFIG=str(plane.admin_kubeconfig),
                        HELM_CACHE_HOME=str(home / "cache"),
                        HELM_CONFIG_HOME=str(home / "config"),
                        HELM_DATA_HOME=str(home / "data"))

    def __call__(self, *args: str) -> str:
        done = subprocess.run([self.binary, *args], capture_output=True, text=True,
                              env=self.env, timeout=180)
        assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stderr}{done.stdout}"
        return done.stdout


@pytest.fixture
def helm(control_plane: ControlPlane, installation: op.Installation,
         tmp_path: pathlib.Path) -> Iterator[Helm]:
    """helm, with the session's operator objects out of the way until the test ends."""
    client = Helm(require("helm", helm_path(), "`make helm-bin` (hack/helm/build-helm.sh)"),
                  control_plane, tmp_path / "helm")
    op.remove_operator(control_plane)
    try:
        yield client
    finally:
        subprocess.run([client.binary, "uninstall", "kuota", "-n", NS, "--wait"],
                       capture_output=True, env=client.env, timeout=180)
        control_plane.kubectl("-n", NS, "delete", "lease", "kuota-operator",
                              "--ignore-not-found")
        op.apply_operator(control_plane, installation.webhook_port)


def chart_values(port: int) -> list[str]:
    # No visibility API: its Service would have no endpoints here (the operator runs on the
    # host), and an APIService nobody answers breaks API discovery for the other tests
    # (test_real_visibility.py runs the shipped one against the host).
    return ["--set", f"webhook.url=https://127.0.0.1:{port}",
            "--set", "webhook.certificate.ipAddresses[0]=127.0.0.1",
            "--set", "visibility.enabled=false"]


def certificate_files(kube: Kube, directory: pathlib.Path) -> dict[str, str]:
    """The chart's serving certificate, written as its pods would have it mounted."""
    data = kube.get("v1", "Secret", "kuota-webhook-tls", NS)["data"]
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (directory / name).write_bytes(base64.b64decode(data[name]))
    return dict(data)


def operator_args(kube: Kube) -> list[str]:
    """The chart Deployment's ``kuota operator`` arguments but where it listens."""
    deployment = kube.get("apps/v1", "Deployment", "kuota-operator", NS)
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    assert main["command"] == ["kuota", "operator"]
    return [a for a in main["args"] if not a.startswith(HOST_FLAGS)]


def ca_bundles(kube: Kube) -> set[str]:
    config = kube.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "kuota")
    return {h["clientConfig"]["caBundle"] for h in config["webhooks"]}


def admitted_and_started(kube: Kube, namespace: str, job: str) -> dict:
    def started() -> dict | None:
        found = kube.get("batch/v1", "Job", job, namespace)
        return found if found["spec"].get("suspend") is False else None

    workload = kube.wait_for(
        lambda: (wl := b.workload_of(kube.list(b.API, "Workload", namespace), job))
        and b.is_true(wl, "Admitted") and wl, what=f"the Workload of {job} to be admitted")
    kube.wait_for(started, what=f"Job {job} to be unsuspended")
    return workload


def test_the_chart_installs_an_operator_that_admits_jobs_upgrades_and_uninstalls_keeping_crds(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: op.Installation,
        helm: Helm, tmp_path: pathlib.Path) -> None:
    port = installation.webhook_port
    helm("install", "kuota", str(CHART), "--namespace", NS, *chart_values(port))
    (release,) = json.loads(helm("list", "--namespace", NS, "--output", "json"))
    assert (release["name"], release["status"]) == ("kuota", "deployed")
    args = operator_args(kube)
    assert f"--lease={NS}/kuota-operator" in args
    certs = certificate_files(kube, tmp_path / "certs")
    assert ca_bundles(kube) == {certs["ca.crt"]}

    renamed = [*chart_values(port), "--set", "webhook.certificate.dnsNames[0]=kuota.example"]
    pool = f"{namespace}-pool"
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}), b.cluster_queue(cq, quotas={rf: {"cpu": 4}}),
               b.local_queue("main", cq, namespace))

    with op.OperatorProcess(installation, tmp_path, *args, cert_dir=tmp_path / "certs"):
        created = kube.create(b.job("first", namespace, run_for="600s"))
        assert created["spec"]["suspend"] is True, "the chart's webhook must hold the Job"
        admitted_and_started(kube, namespace, "first")
        lease = kube.get("coordination.k8s.io/v1", "Lease", "kuota-operator", NS)
        assert lease["spec"]["holderIdentity"], "the operator leads on the chart's Lease"

        helm("upgrade", "kuota", str(CHART), "--namespace", NS, *chart_values(port))
        assert kube.get("v1", "Secret", "kuota-webhook-tls", NS)["data"] == certs
        assert ca_bundles(kube) == {certs["ca.crt"]}
        assert kube.create(b.job("second", namespace))["spec"]["suspend"] is True
        admitted_and_started(kube, namespace, "second")

        # A new name: a new serving certificate from the same CA, so the caBundle stays and
        # the operator, still serving the previous certificate, is trusted throughout.
        helm("upgrade", "kuota", str(CHART), "--namespace", NS, *renamed)
        renewed = kube.get("v1", "Secret", "kuota-webhook-tls", NS)["data"]
        assert renewed["tls.crt"] != certs["tls.crt"]
        assert renewed["ca.crt"] == certs["ca.crt"]
        assert ca_bundles(kube) == {certs["ca.crt"]}
        assert kube.create(b.job("third", namespace))["spec"]["suspend"] is True

    # A CA past two thirds of its validity: the next upgrade makes a new CA, re-signs the
    # serving certificate and puts the new CA into the webhook configuration.
    kube.patch("v1", "Secret", "kuota-webhook-ca",
               {"metadata": {"annotations": {"kuota.dev/renew-after": "1"}}}, NS)
    helm("upgrade", "kuota", str(CHART), "--namespace", NS, *renamed)
    new_ca = kube.get("v1", "Secret", "kuota-webhook-ca", NS)["data"]["tls.crt"]
    assert new_ca != certs["ca.crt"]
    assert kube.get("v1", "Secret", "kuota-webhook-tls", NS)["data"]["ca.crt"] == new_ca
    assert ca_bundles(kube) == {new_ca}

    helm("uninstall", "kuota", "--namespace", NS, "--wait")
    assert kube.find("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                     "kuota") is None
    assert kube.find("apps/v1", "Deployment", "kuota-operator", NS) is None
    assert kube.find("rbac.authorization.k8s.io/v1", "ClusterRole", "kuota-operator") is None
    crds = control_plane.kubectl("get", "crd", "-o", "name").stdout.split()
    assert "customresourcedefinition.apiextensions.k8s.io/workloads.kuota.dev" in crds
    assert kube.find(b.API, "ClusterQueue", cq) is not None
    assert b.workload_of(kube.list(b.API, "Workload", namespace), "first") is not None
    assert kube.get("batch/v1", "Job", "first", namespace)["spec"]["suspend"] is False
    unheld = kube.create(b.job("after-uninstall", namespace))
    assert unheld["spec"].get("suspend") is not True, "no webhook holds Jobs any more"


def test_with_the_default_queue_an_unlabelled_deployment_runs_under_quota(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: op.Installation,
        helm: Helm, tmp_path: pathlib.Path) -> None:
    """operator.defaultQueue: the webhook sees unlabelled Deployments and Pods and labels
    those whose namespace has a LocalQueue "default"; their pods are gated, admitted within
    the quota and run on the flavor's node."""
    port = installation.webhook_port
    helm("install", "kuota", str(CHART), "--namespace", NS, *chart_values(port),
         "--set", "operator.defaultQueue=true")
    args = operator_args(kube)
    assert "--default-queue" in args
    certificate_files(kube, tmp_path / "certs")
    pool = f"{namespace}-pool"
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}), b.cluster_queue(cq, quotas={rf: {"cpu": 1}}),
               b.local_queue("default", cq, namespace))
    with op.OperatorProcess(installation, tmp_path, *args, cert_dir=tmp_path / "certs"):
        created = kube.create({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                         "containers": [{"name": "c", "image": "registry.example/fake:1",
                                         "resources": {"requests": {"cpu": "400m"}}}]}}}})
        assert created["metadata"]["labels"] == {"kuota.dev/queue-name": "default"}

        def pods(phase: str) -> list[dict]:
            return [p for p in kube.list("v1", "Pod", namespace, label_selector="app=web")
                    if (p.get("status") or {}).get("phase") == phase]

        # 1 cpu of quota: two replicas of 400m run, the third waits gated.
        running = kube.wait_for(lambda: len(pods("Running")) == 2 and pods("Running"),
                                what="two replicas admitted and running", timeout=90)
        assert {p["spec"]["nodeName"] for p in running} == {f"{namespace}-n1"}
        waiting = pods("Pending")
        assert len(waiting) == 1 and [g["name"] for g in waiting[0]["spec"][
            "schedulingGates"]] == ["kuota.dev/admission"]

        # A bare Pod: labelled and gated too, a group of one, admitted in what is left.
        bare = kube.create({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "bare", "namespace": namespace},
                            "spec": {"containers": [{
                                "name": "c", "image": "registry.example/fake:1",
                                "resources": {"requests": {"cpu": "100m"}}}]}})
        assert bare["metadata"]["labels"]["kuota.dev/queue-name"] == "default"
        assert "kuota.dev/admission" in [g["name"] for g in bare["spec"]["schedulingGates"]]
        kube.wait_for(lambda: (kube.get("v1", "Pod", "bare", namespace).get("status") or {})
                      .get("phase") == "Running", what="the bare Pod admitted and running")


# Not kuota-binpack: the session's kube-scheduler has that profile and would claim the pod.
SECOND = "kuota-second"


def second_scheduler(plane: ControlPlane, kube: Kube, workdir: pathlib.Path) -> Process:
    """The chart's second kube-scheduler, run on the host as its ServiceAccount."""
    config = yaml.safe_load(kube.get("v1", "ConfigMap", "kuota-scheduler-config", NS)["data"][
        "kuota-scheduler.yaml"])
    (main,) = kube.get("apps/v1", "Deployment", "kuota-scheduler", NS)["spec"]["template"][
        "spec"]["containers"]
    assert main["command"] == ["kube-scheduler",
                               "--config=/etc/kuota-scheduler/kuota-scheduler.yaml"]
    kubeconfig = plane.service_account_kubeconfig(NS, "kuota-scheduler",
                                                  workdir / "scheduler.kubeconfig")
    config["clientConnection"] = {"kubeconfig": str(kubeconfig)}
    for extender in config["extenders"]:
        assert extender["urlPrefix"] == f"https://kuota-extender.{NS}.svc:8888"
        plane.point_at_extender(extender)  # the session's extender, with its client certificate
    path = workdir / "kuota-scheduler.yaml"
    path.write_text(yaml.safe_dump(config))
    return Process("kuota-scheduler", [
        plane.binaries.path("kube-scheduler"), f"--config={path}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--v=1"],
        workdir / "kuota-scheduler.log")


def test_the_optional_parts_install_and_the_second_scheduler_places_pods_of_its_profile(
        control_plane: ControlPlane, kube: Kube, namespace: str, helm: Helm,
        tmp_path: pathlib.Path) -> None:
    values = ["--set", "visibility.enabled=false",
              "--set", "extender.enabled=true", "--set", "scheduler.enabled=true",
              "--set", f"extender.schedulerName={SECOND}", "--set", "metrics.service.enabled=true",
              "--set", "redis.deploy=true",
              "--set", f"redis.url=redis://kuota-redis.{NS}.svc:6379/0"]
    helm("install", "kuota", str(CHART), "--namespace", NS, *values)
    # The extender's chart-made CA and certificates survive an upgrade: the control-plane
    # nodes hold copies of the client certificate and the CA.
    extender_secrets = ("kuota-extender-ca", "kuota-extender-tls", "kuota-extender-client")
    made = {name: kube.get("v1", "Secret", name, NS)["data"] for name in extender_secrets}
    helm("upgrade", "kuota", str(CHART), "--namespace", NS, *values)
    assert {name: kube.get("v1", "Secret", name, NS)["data"] for name in extender_secrets} \
        == made
    for kind, name in (("Deployment", "kuota-extender"), ("Deployment", "kuota-scheduler"),
                       ("Deployment", "kuota-redis"), ("Service", "kuota-operator-metrics")):
        api = "apps/v1" if kind == "Deployment" else "v1"
        assert kube.find(api, kind, name, NS) is not None, f"{kind} {name} not installed"

    scheduler = second_scheduler(control_plane, kube, tmp_path)
    scheduler.start()
    try:
        def leading() -> bool:
            lease = kube.find("coordination.k8s.io/v1", "Lease", "kuota-scheduler", NS)
            return bool(lease and lease["spec"].get("holderIdentity"))

        scheduler.wait_until(leading, 60)
        pool = f"{namespace}-pool"
        control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
        kube.create({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "placed", "namespace": namespace},
                     "spec": {"schedulerName": SECOND, "nodeSelector": {"pool": pool},
                              "containers": [{"name": "main", "image": "registry.example/fake:1",
                                              "resources": {"requests": {"cpu": "1"}}}]}})
        bound = kube.wait_for(
            lambda: kube.get("v1", "Pod", "placed", namespace)["spec"].get("nodeName"),
            what=f"the pod to be bound by {SECOND}")
        assert bound == f"{namespace}-n1"
    finally:
        scheduler.stop()
        print(f"--- second kube-scheduler ---\n{scheduler.tail(30)}")
