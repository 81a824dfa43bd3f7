"""The Helm chart (charts/kuota) installs what the kustomize manifests install.

Run with the real helm (``make helm-bin``): ``helm lint --strict`` and
``helm template``. The kustomize manifests are the reference:

* rendered with the values that mirror them (cert-manager, the extender, the
  bundled Redis), the chart makes exactly the objects ``kubectl kustomize
  manifests`` makes, field for field — but for the Namespace (``helm install
  --create-namespace`` makes it) and Helm's bookkeeping labels;
* with its default values it makes the operator part of them and, instead of
  cert-manager's Issuer and Certificate, the CA and certificate it signs itself;
* its crds/ are byte for byte manifests/crds (``make crds`` writes both).

The optional parts are rendered one by one and checked for what a user turns
them on for. Without helm (or kubectl, for the kustomize side) the tests are
skipped, unless ``KUOTA_REQUIRE_CLUSTER=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import base64
import dataclasses
import pathlib
import re
import subprocess
import tomllib
from typing import Any

import pytest
import yaml

from kuota.operator import kinds
from tests.cluster.binaries import ROOT, helm_path, kubectl_path, require

CHART = ROOT / "charts" / "kuota"
NAMESPACE = "kuota-system"
HELM_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
               "app.kubernetes.io/version", "helm.sh/chart")
# The values under which the chart installs what `kubectl apply -k manifests/` does.
AS_KUSTOMIZE = {"webhook.certManager.enabled": "true", "extender.enabled": "true",
                "extender.schedulerConfig": "false", "redis.deploy": "true"}
ALL_ON = {"webhook.certManager.enabled": "true", "extender.enabled": "true",
          "operator.podDisruptionBudget.enabled": "true",
          "scheduler.enabled": "true", "metrics.service.enabled": "true",
          "metrics.serviceMonitor.enabled": "true", "redis.deploy": "true",
          "redis.url": "redis://kuota-redis.kuota-system.svc:6379/0"}

Key = tuple[str, str, str]  # kind, namespace ("" if cluster-scoped), name
Body = dict[str, Any]


@pytest.fixture(scope="module")
def helm() -> str:
    return require("helm", helm_path(), "`make helm-bin` (hack/helm/build-helm.sh)")


def helm_argv(helm: str, command: str, values: dict[str, str] | None = None, *,
              namespace: str = NAMESPACE) -> list[str]:
    """``helm lint`` or ``helm template`` of the chart with ``--set`` for each value."""
    argv = [helm, command, *(["kuota"] if command == "template" else []), str(CHART),
            "--namespace", namespace]
    for name, value in (values or {}).items():
        argv += ["--set", f"{name}={value}"]
    return argv


def render(helm: str, values: dict[str, str] | None = None, *, namespace: str = NAMESPACE,
           crds: bool = False) -> dict[Key, Body]:
    """``helm template`` of the chart, keyed by kind, namespace and name."""
    argv = helm_argv(helm, "template", values, namespace=namespace)
    done = subprocess.run(argv + ["--include-crds"] * crds, capture_output=True, text=True,
                          check=True)
    return keyed(done.stdout)


def render_error(helm: str, values: dict[str, str]) -> str:
    done = subprocess.run(helm_argv(helm, "template", values), capture_output=True, text=True)
    assert done.returncode != 0, f"helm template accepted {values}"
    return done.stderr


def keyed(text: str) -> dict[Key, Body]:
    objects: dict[Key, Body] = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        meta = doc["metadata"]
        key = (doc["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in objects, f"{key} rendered twice"
        objects[key] = doc
    return objects


def without_helm_labels(obj: Body) -> Body:
    """The object as the kustomize manifests spell it: no Helm bookkeeping labels."""
    copy = yaml.safe_load(yaml.safe_dump(obj))
    labels = copy["metadata"].get("labels") or {}
    for name in HELM_LABELS:
        labels.pop(name, None)
    if not labels:
        copy["metadata"].pop("labels", None)
    return copy


@pytest.fixture(scope="module")
def kustomized() -> dict[Key, Body]:
    kubectl = require("kubectl", kubectl_path(), "`make cluster-bins`")
    done = subprocess.run([kubectl, "kustomize", str(ROOT / "manifests")],
                          capture_output=True, text=True, check=True)
    return keyed(done.stdout)


def by_kind(objects: dict[Key, Body], kind: str) -> dict[str, Body]:
    return {name: obj for (k, _, name), obj in objects.items() if k == kind}


def container(objects: dict[Key, Body], deployment: str) -> Body:
    spec = objects[("Deployment", NAMESPACE, deployment)]["spec"]["template"]["spec"]
    first: Body = spec["containers"][0]
    return first


class TestLint:
    @pytest.mark.parametrize("values", [{}, ALL_ON], ids=["defaults", "everything-on"])
    def test_helm_lint_strict_finds_nothing(self, helm: str, values: dict[str, str]) -> None:
        done = subprocess.run([*helm_argv(helm, "lint", values), "--strict"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        findings = [line for line in done.stdout.splitlines()
                    if re.match(r"\[(WARNING|ERROR)\]", line)]
        assert findings == []

    def test_the_chart_is_the_release_of_kuota_it_ships(self) -> None:
        chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert chart["version"] == chart["appVersion"] == project["version"]
        kustomization = yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())
        assert kustomization["images"] == [{"name": "kuota", "newTag": chart["appVersion"]}]


class TestSameAsKustomize:
    def test_the_chart_crds_are_the_manifests_crds_byte_for_byte(self) -> None:
        shipped = {p.name: p.read_bytes() for p in (ROOT / "manifests" / "crds").glob("*.yaml")}
        charted = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
        assert sorted(charted) == sorted(shipped)
        differing = [name for name in shipped if charted[name] != shipped[name]]
        assert differing == [], "run `make crds` (it writes both)"

    def test_the_charts_kueue_crds_are_manifests_kueues_byte_for_byte(self) -> None:
        glob = "*.kueue.x-k8s.io.yaml"
        shipped = {p.name: p.read_bytes() for p in (ROOT / "manifests" / "kueue").glob(glob)}
        charted = {p.name: p.read_bytes() for p in (CHART / "kueue").glob(glob)}
        assert charted == shipped, "run `make crds` (it writes both)"

    def test_with_the_kustomize_values_every_object_is_the_same(
            self, helm: str, kustomized: dict[Key, Body]) -> None:
        charted = render(helm, AS_KUSTOMIZE, crds=True)
        want = {k: v for k, v in kustomized.items() if k != ("Namespace", "", NAMESPACE)}
        assert sorted(charted) == sorted(want)
        for key, obj in want.items():
            assert without_helm_labels(charted[key]) == obj, f"{key} differs"

    def test_with_default_values_the_operator_part_is_the_same_with_a_chart_made_certificate(
            self, helm: str, kustomized: dict[Key, Body]) -> None:
        charted = render(helm, crds=True)
        optional = {"Namespace", "Issuer", "Certificate", "NetworkPolicy"}
        optional_names = {"kuota-extender", "kuota-redis"}
        want = {k: v for k, v in kustomized.items()
                if k[0] not in optional and k[2] not in optional_names}
        made = {("Secret", NAMESPACE, "kuota-webhook-ca"), ("Secret", NAMESPACE,
                                                            "kuota-webhook-tls")}
        assert sorted(charted) == sorted([*want, *made])
        for key, obj in want.items():
            got = without_helm_labels(charted[key])
            if key[0] in ("MutatingWebhookConfiguration", "APIService"):
                # cert-manager's CA injection is replaced by the chart's own CA.
                obj = yaml.safe_load(yaml.safe_dump(obj))
                obj["metadata"].pop("annotations")
                for hook in got.get("webhooks", []):
                    assert hook["clientConfig"].pop("caBundle")
                if key[0] == "APIService":
                    assert got["spec"].pop("caBundle")
            assert got == obj, f"{key} differs"


def _pem(data: str) -> bytes:
    return base64.b64decode(data)


def _openssl_text(pem: bytes) -> str:
    done = subprocess.run(["openssl", "x509", "-noout", "-text"], input=pem,
                          capture_output=True, check=True)
    return done.stdout.decode()


class TestChartMadeCertificate:
    def test_the_serving_certificate_is_signed_by_the_ca_the_api_server_trusts(
            self, helm: str, tmp_path: pathlib.Path) -> None:
        objects = render(helm)
        ca = objects[("Secret", NAMESPACE, "kuota-webhook-ca")]["data"]
        tls = objects[("Secret", NAMESPACE, "kuota-webhook-tls")]
        assert tls["type"] == "kubernetes.io/tls"
        assert tls["data"]["ca.crt"] == ca["tls.crt"]
        bundles = {h["clientConfig"]["caBundle"]
                   for h in objects[("MutatingWebhookConfiguration", "", "kuota")]["webhooks"]}
        assert bundles == {ca["tls.crt"]}
        (tmp_path / "ca.crt").write_bytes(_pem(ca["tls.crt"]))
        (tmp_path / "tls.crt").write_bytes(_pem(tls["data"]["tls.crt"]))
        verified = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca.crt"),
                                   str(tmp_path / "tls.crt")], capture_output=True, text=True)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        text = _openssl_text(_pem(tls["data"]["tls.crt"]))
        assert "DNS:kuota-webhook.kuota-system.svc" in text
        assert "DNS:kuota-webhook.kuota-system.svc.cluster.local" in text
        # The CA's key stays out of the pods: only kuota-webhook-tls is mounted.
        volumes = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"][
            "spec"]["volumes"]
        assert [v["secret"]["secretName"] for v in volumes if "secret" in v] == [
            "kuota-webhook-tls"]

    def test_an_operator_outside_the_cluster_is_called_by_url_with_its_address_in_the_cert(
            self, helm: str) -> None:
        objects = render(helm, {"webhook.url": "https://127.0.0.1:9443/",
                                "webhook.certificate.ipAddresses[0]": "127.0.0.1"})
        hooks = objects[("MutatingWebhookConfiguration", "", "kuota")]["webhooks"]
        assert [h["clientConfig"]["url"] for h in hooks] == [
            *[f"https://127.0.0.1:9443/suspend-{kind.res.plural}"
              for kind in kinds.KINDS.values()],
            *["https://127.0.0.1:9443/gate-pods"] * 5,
            *[f"https://127.0.0.1:9443/queue-{plural}"
              for plural in ("deployments", "statefulsets", "leaderworkersets") * 2]]
        assert all("service" not in h["clientConfig"] for h in hooks)
        tls = objects[("Secret", NAMESPACE, "kuota-webhook-tls")]["data"]
        assert "IP Address:127.0.0.1" in _openssl_text(_pem(tls["tls.crt"]))

    def test_with_the_default_queue_every_pod_and_templated_object_is_seen(
            self, helm: str) -> None:
        objects = render(helm, {"operator.defaultQueue": "true"})
        hooks = objects[("MutatingWebhookConfiguration", "", "kuota")]["webhooks"]
        seen = [h for h in hooks if h["name"].startswith(("queue-", "gate-"))]
        assert [(h["name"], h.get("objectSelector")) for h in seen] == [
            ("gate-pods.kuota.dev", None),
            *((f"queue-{plural}.kuota.dev", None)
              for plural in ("deployments", "statefulsets", "leaderworkersets"))]
        args = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"][
            "spec"]["containers"][0]["args"]
        assert "--default-queue" in args
        default = render(helm, {})
        assert "--default-queue" not in default[("Deployment", NAMESPACE, "kuota-operator")][
            "spec"]["template"]["spec"]["containers"][0]["args"]

    @pytest.mark.parametrize(("host", "want_san"), [
        ("127.0.0.1", "IP Address:127.0.0.1"), ("dev.example", "DNS:dev.example")])
    def test_out_of_cluster_wires_the_webhook_and_the_visibility_api_to_one_host(
            self, helm: str, host: str, want_san: str) -> None:
        objects = render(helm, {"outOfCluster.host": host, "webhook.port": "19443",
                                "visibility.port": "18082"})
        hooks = objects[("MutatingWebhookConfiguration", "", "kuota")]["webhooks"]
        assert {h["clientConfig"]["url"].rsplit("/", 1)[0] for h in hooks} == {
            f"https://{host}:19443"}
        # The aggregation layer dials the ExternalName Service's host at the APIService's
        # port, and checks the Service's name in the certificate.
        service = objects[("Service", NAMESPACE, "kuota-visibility")]["spec"]
        assert service == {"type": "ExternalName", "externalName": host,
                           "ports": [{"name": "https", "port": 18082}]}
        api = objects[("APIService", "", "v1beta2.visibility.kuota.dev")]["spec"]
        assert api["service"] == {"name": "kuota-visibility", "namespace": NAMESPACE,
                                  "port": 18082}
        tls = objects[("Secret", NAMESPACE, "kuota-webhook-tls")]["data"]
        text = _openssl_text(_pem(tls["tls.crt"]))
        assert want_san in text and "DNS:kuota-visibility.kuota-system.svc" in text
        assert api["caBundle"] == tls["ca.crt"]
        assert ("Deployment", NAMESPACE, "kuota-operator") not in objects, \
            "the operator runs outside: no Deployment to fake-run on the nodes"


class TestExtenderTLS:
    """Without cert-manager the chart makes the extender's CA, serving and client
    certificates; extender.tls.enabled=false falls back to plain HTTP."""

    def _files(self, objects: dict[Key, Body], tmp_path: pathlib.Path) -> dict[str, str]:
        files = {}
        for secret in ("kuota-extender-ca", "kuota-extender-tls", "kuota-extender-client"):
            obj = objects[("Secret", NAMESPACE, secret)]
            assert obj["type"] == "kubernetes.io/tls"
            path = tmp_path / f"{secret}.crt"
            path.write_bytes(_pem(obj["data"]["tls.crt"]))
            files[secret] = str(path)
        return files

    def test_both_certificates_are_signed_by_the_extenders_own_ca(
            self, helm: str, tmp_path: pathlib.Path) -> None:
        objects = render(helm, {"extender.enabled": "true", "scheduler.enabled": "true"})
        files = self._files(objects, tmp_path)
        ca = objects[("Secret", NAMESPACE, "kuota-extender-ca")]["data"]["tls.crt"]
        for secret, purpose, name in (("kuota-extender-tls", "sslserver",
                                       f"kuota-extender.{NAMESPACE}.svc"),
                                      ("kuota-extender-client", "sslclient", "")):
            assert objects[("Secret", NAMESPACE, secret)]["data"]["ca.crt"] == ca
            argv = ["openssl", "verify", "-CAfile", files["kuota-extender-ca"],
                    "-purpose", purpose, *(["-verify_hostname", name] if name else []),
                    files[secret]]
            verified = subprocess.run(argv, capture_output=True, text=True)
            assert verified.returncode == 0, verified.stdout + verified.stderr
        # The webhook's CA is not the extender's: a webhook certificate is no client of it.
        assert objects[("Secret", NAMESPACE, "kuota-webhook-ca")]["data"]["tls.crt"] != ca
        # The CA's key stays out of the pods.
        mounted = {v["secret"]["secretName"]
                   for name in ("kuota-extender", "kuota-scheduler")
                   for v in objects[("Deployment", NAMESPACE, name)]["spec"]["template"][
                       "spec"]["volumes"] if "secret" in v}
        assert mounted == {"kuota-extender-tls", "kuota-extender-client"}
        args = container(objects, "kuota-extender")["args"]
        assert {"--tls-cert=/certs/tls.crt", "--tls-key=/certs/tls.key",
                "--client-ca=/certs/ca.crt", "--probe-listen=0.0.0.0:8081"} <= set(args)

    def test_tls_off_is_plain_http_without_certificates(self, helm: str) -> None:
        objects = render(helm, {"extender.enabled": "true", "extender.tls.enabled": "false",
                                "scheduler.enabled": "true"})
        assert not [k for k in objects if k[0] == "Secret" and "extender" in k[2]]
        config = yaml.safe_load(objects[("ConfigMap", NAMESPACE, "kuota-scheduler-config")][
            "data"]["kuota-scheduler.yaml"])
        (entry,) = config["extenders"]
        assert entry["urlPrefix"].startswith("http://") and entry["enableHTTPS"] is False
        assert "tlsConfig" not in entry
        extender = container(objects, "kuota-extender")
        assert not [a for a in extender["args"] if a.startswith(("--tls", "--client-ca"))]
        assert "volumes" not in objects[("Deployment", NAMESPACE, "kuota-extender")]["spec"][
            "template"]["spec"]
        # The probes keep their own port either way.
        assert extender["readinessProbe"]["httpGet"]["port"] == "probes"


@dataclasses.dataclass(frozen=True)
class NamespaceCase:
    id: str
    namespace: str
    want_lease: str
    want_operator_namespace_flag: bool


class TestReleaseNamespace:
    @pytest.mark.parametrize("case", [
        NamespaceCase("kuota-system", "kuota-system", "--lease=kuota-system/kuota-operator",
                      want_operator_namespace_flag=False),
        NamespaceCase("elsewhere", "platform", "--lease=platform/kuota-operator",
                      want_operator_namespace_flag=True),
    ], ids=lambda c: c.id)
    def test_everything_namespaced_follows_the_release_namespace(
            self, helm: str, case: NamespaceCase) -> None:
        objects = render(helm, namespace=case.namespace)
        namespaces = {ns for (_, ns, _) in objects if ns}
        # kube-system: the RoleBinding that lets the visibility server read the front-proxy CA
        assert namespaces == {case.namespace, "kube-system"}
        assert [name for (kind, ns, name) in objects if ns == "kube-system"] == \
            ["kuota-operator-auth-reader"]
        service = objects[("APIService", "", "v1beta2.visibility.kuota.dev")]["spec"]["service"]
        assert service["namespace"] == case.namespace
        spec = objects[("Deployment", case.namespace, "kuota-operator")]["spec"]
        args = spec["template"]["spec"]["containers"][0]["args"]
        assert case.want_lease in args
        assert (f"--operator-namespace={case.namespace}" in args) == \
            case.want_operator_namespace_flag
        hooks = objects[("MutatingWebhookConfiguration", "", "kuota")]["webhooks"]
        for hook in hooks:
            assert hook["clientConfig"]["service"]["namespace"] == case.namespace
            excluded = hook["namespaceSelector"]["matchExpressions"][0]["values"]
            assert sorted(excluded) == sorted({"kube-system", case.namespace})
        binding = objects[("ClusterRoleBinding", "", "kuota-operator")]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kuota-operator",
                                        "namespace": case.namespace}]


class TestOptionalParts:
    def test_operator_values_reach_the_deployment(self, helm: str) -> None:
        objects = render(helm, {"image.repository": "registry.example.com/kuota",
                                "image.tag": "0.1.0-rc1", "image.pullPolicy": "Always",
                                "operator.replicas": "3",
                                "operator.extraArgs[0]": "--fair-sharing",
                                "imagePullSecrets[0].name": "regcred"})
        deployment = objects[("Deployment", NAMESPACE, "kuota-operator")]
        pod = deployment["spec"]["template"]["spec"]
        assert deployment["spec"]["replicas"] == 3
        assert pod["imagePullSecrets"] == [{"name": "regcred"}]
        (main,) = pod["containers"]
        assert main["image"] == "registry.example.com/kuota:0.1.0-rc1"
        assert main["imagePullPolicy"] == "Always"
        assert main["args"][-1] == "--fair-sharing"

    def test_serving_kueues_api_installs_its_crds_converted_by_this_releases_webhook(
            self, helm: str) -> None:
        objects = render(helm, {"operator.api": "kueue"})
        args = container(objects, "kuota-operator")["args"]
        assert "--api=kueue" in args
        crds = by_kind(objects, "CustomResourceDefinition")
        assert len(crds) == 8 and all(n.endswith(".kueue.x-k8s.io") for n in crds)
        tls = objects[("Secret", NAMESPACE, "kuota-webhook-tls")]["data"]
        for crd in crds.values():
            client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
            assert client == {"service": {"name": "kuota-webhook", "namespace": NAMESPACE,
                                          "path": "/convert", "port": 443},
                              "caBundle": tls["ca.crt"]}
            assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
            assert crd["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kuota"
        services = by_kind(objects, "APIService")
        assert sorted(services) == ["v1beta1.visibility.kueue.x-k8s.io",
                                    "v1beta2.visibility.kueue.x-k8s.io"]
        # Out of cluster, the API server calls the operator's address for conversions too.
        outside = render(helm, {"operator.api": "kueue", "outOfCluster.host": "10.0.0.5"})
        client = by_kind(outside, "CustomResourceDefinition")[
            "workloads.kueue.x-k8s.io"]["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client["url"] == "https://10.0.0.5:9443/convert"

    def test_a_disruption_budget_keeps_one_operator_serving_the_webhook(self, helm: str
                                                                        ) -> None:
        objects = render(helm, {"operator.podDisruptionBudget.enabled": "true"})
        budget = objects[("PodDisruptionBudget", NAMESPACE, "kuota-operator")]["spec"]
        pod = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"]
        assert budget["minAvailable"] == 1
        assert budget["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()

    def test_one_replica_may_run_without_leader_election(self, helm: str) -> None:
        objects = render(helm, {"operator.replicas": "1",
                                "operator.leaderElection.enabled": "false"})
        assert "--lease=none" in container(objects, "kuota-operator")["args"]

    def test_the_extender_and_its_kube_scheduler_profile(self, helm: str) -> None:
        objects = render(helm, {"extender.enabled": "true", "scheduler.enabled": "true"})
        config = objects[("ConfigMap", NAMESPACE, "kuota-scheduler-config")]["data"]
        # For the cluster's own kube-scheduler: the file manifests/scheduler ships.
        shipped = yaml.safe_load(
            (ROOT / "manifests" / "scheduler" / "kube-scheduler-config.yaml").read_text())
        assert _sorted_weights(yaml.safe_load(config["kube-scheduler-config.yaml"])) == \
            _sorted_weights(shipped)
        # For the second scheduler: the kuota profile alone, on its own Lease.
        second = yaml.safe_load(config["kuota-scheduler.yaml"])
        assert [p["schedulerName"] for p in second["profiles"]] == ["kuota-binpack"]
        assert second["extenders"] == shipped["extenders"]
        assert second["leaderElection"]["resourceNamespace"] == NAMESPACE
        assert "clientConnection" not in second  # in-cluster credentials
        scheduler = objects[("Deployment", NAMESPACE, "kuota-scheduler")]["spec"]["template"]
        assert scheduler["spec"]["serviceAccountName"] == "kuota-scheduler"
        assert scheduler["spec"]["containers"][0]["command"] == [
            "kube-scheduler", "--config=/etc/kuota-scheduler/kuota-scheduler.yaml"]
        # Its tlsConfig's files: kube-scheduler's client certificate for the extender.
        assert scheduler["spec"]["volumes"] == [
            {"name": "config", "configMap": {"name": "kuota-scheduler-config"}},
            {"name": "extender-client", "secret": {"secretName": "kuota-extender-client"}}]
        (mount,) = [m for m in scheduler["spec"]["containers"][0]["volumeMounts"]
                    if m["name"] == "extender-client"]
        assert {f"{mount['mountPath']}/{name}" for name in ("tls.crt", "tls.key", "ca.crt")} \
            == set(second["extenders"][0]["tlsConfig"].values())
        roles = {b["roleRef"]["name"] for b in by_kind(objects, "ClusterRoleBinding").values()
                 if b["subjects"][0]["name"] == "kuota-scheduler"}
        assert roles == {"system:kube-scheduler", "system:volume-scheduler"}
        extender = container(objects, "kuota-extender")
        assert "--scheduler-name=kuota-binpack" in extender["args"]
        service = objects[("Service", NAMESPACE, "kuota-extender")]["spec"]
        assert shipped["extenders"][0]["urlPrefix"] == \
            f"https://kuota-extender.{NAMESPACE}.svc:{service['ports'][0]['port']}"

    def test_metrics_service_and_service_monitor_reach_the_operators_metrics_port(
            self, helm: str) -> None:
        objects = render(helm, {"metrics.service.enabled": "true",
                                "metrics.serviceMonitor.enabled": "true",
                                "metrics.serviceMonitor.labels.release": "prometheus"})
        service = objects[("Service", NAMESPACE, "kuota-operator-metrics")]
        pod = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"]
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        (port,) = service["spec"]["ports"]
        ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
        assert port["targetPort"] == "http" and ports["http"] == 8080
        assert "--probes=0.0.0.0:8080" in pod["spec"]["containers"][0]["args"]
        monitor = objects[("ServiceMonitor", NAMESPACE, "kuota-operator")]
        assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
        assert monitor["metadata"]["labels"]["release"] == "prometheus"
        selector = monitor["spec"]["selector"]["matchLabels"]
        assert selector.items() <= service["metadata"]["labels"].items()
        # The webhook Service carries the operator's labels too but must not be scraped.
        webhook = objects[("Service", NAMESPACE, "kuota-webhook")]
        assert not selector.items() <= webhook["metadata"]["labels"].items()
        (endpoint,) = monitor["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"]) == (port["name"], "/metrics")

    @pytest.mark.parametrize("issuer, want_issuer", [
        ({}, {"kind": "Issuer", "name": "kuota-selfsigned"}),
        ({"webhook.certManager.issuerRef.kind": "ClusterIssuer",
          "webhook.certManager.issuerRef.name": "corp-ca"},
         {"kind": "ClusterIssuer", "name": "corp-ca"}),
    ], ids=["own-self-signed-issuer", "existing-issuer"])
    def test_cert_manager_issues_the_certificate_and_injects_its_ca(
            self, helm: str, issuer: dict[str, str], want_issuer: dict[str, str]) -> None:
        objects = render(helm, {"webhook.certManager.enabled": "true", **issuer})
        assert by_kind(objects, "Secret") == {}
        certificate = objects[("Certificate", NAMESPACE, "kuota-webhook")]["spec"]
        assert certificate["issuerRef"] == want_issuer
        assert ("Issuer" in {k for (k, _, _) in objects}) == (want_issuer["kind"] == "Issuer")
        volumes = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"][
            "spec"]["volumes"]
        assert {"name": "webhook-certs", "secret": {"secretName": certificate["secretName"]}} \
            in volumes
        assert "kuota-webhook.kuota-system.svc" in certificate["dnsNames"]
        config = objects[("MutatingWebhookConfiguration", "", "kuota")]
        assert config["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"{NAMESPACE}/kuota-webhook"}
        assert all("caBundle" not in h["clientConfig"] for h in config["webhooks"])

    def test_the_operator_connects_to_redis_with_the_password_from_its_secret(
            self, helm: str) -> None:
        url = "redis://redis.example.internal:6379/0"
        objects = render(helm, {"redis.url": url, "redis.passwordSecret.name": "pool-redis"})
        env = {e["name"]: e for e in container(objects, "kuota-operator")["env"]}
        assert env["REDIS_URL"]["value"] == url
        assert env["REDIS_PASSWORD"]["valueFrom"] == {
            "secretKeyRef": {"name": "pool-redis", "key": "password"}}
        assert ("Deployment", NAMESPACE, "kuota-redis") not in objects

    def test_the_bundled_redis_requires_the_same_password(self, helm: str) -> None:
        objects = render(helm, {"redis.deploy": "true",
                                "redis.url": "redis://kuota-redis.kuota-system.svc:6379/0"})
        redis = {e["name"]: e["valueFrom"] for e in container(objects, "kuota-redis")["env"]}
        operator = {e["name"]: e.get("valueFrom")
                    for e in container(objects, "kuota-operator")["env"]}
        assert redis["REDIS_PASSWORD"] == operator["REDIS_PASSWORD"] == {
            "secretKeyRef": {"name": "kuota-redis", "key": "password"}}
        policy = objects[("NetworkPolicy", NAMESPACE, "kuota-redis")]["spec"]
        operator_pod = objects[("Deployment", NAMESPACE, "kuota-operator")]["spec"]["template"]
        allowed = policy["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
        assert allowed.items() <= operator_pod["metadata"]["labels"].items()


@dataclasses.dataclass(frozen=True)
class BadValues:
    id: str
    values: dict[str, str]
    want_error: str


@pytest.mark.parametrize("case", [
    BadValues("two-leaders", {"operator.leaderElection.enabled": "false"},
              "operator.replicas > 1 needs operator.leaderElection.enabled"),
    BadValues("monitor-without-service", {"metrics.serviceMonitor.enabled": "true"},
              "metrics.serviceMonitor.enabled needs metrics.service.enabled"),
    BadValues("scheduler-without-extender", {"scheduler.enabled": "true"},
              "scheduler.enabled needs extender.enabled"),
    BadValues("budget-for-one-replica", {"operator.replicas": "1",
                                         "operator.podDisruptionBudget.enabled": "true"},
              "operator.podDisruptionBudget.enabled needs operator.replicas >= 2"),
    BadValues("redis-without-password", {"redis.deploy": "true",
                                         "redis.passwordSecret.name": ""},
              "redis.deploy needs redis.passwordSecret.name"),
    # values.schema.json: enums, types and misspelt keys.
    BadValues("unknown-failure-policy", {"webhook.failurePolicy": "Retry"},
              "at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"),
    BadValues("misspelt-key", {"extender.enable": "true"},
              "at '/extender': additional properties 'enable' not allowed"),
    BadValues("replicas-not-a-number", {"operator.replicas": "two"},
              "at '/operator/replicas': got string, want integer"),
    BadValues("webhook-url-not-https", {"webhook.url": "http://127.0.0.1:9443"},
              "at '/webhook/url'"),
    BadValues("out-of-cluster-host-a-url", {"outOfCluster.host": "https://127.0.0.1"},
              "at '/outOfCluster/host'"),
], ids=lambda c: c.id)
def test_values_that_cannot_work_are_refused_with_one_clear_line(
        helm: str, case: BadValues) -> None:
    assert case.want_error in render_error(helm, case.values)


def _sorted_weights(config: Body) -> Body:
    """``config`` with NodeResourcesFit's resources in name order (a list, order-free)."""
    copy = yaml.safe_load(yaml.safe_dump(config))
    for profile in copy["profiles"]:
        for plugin in profile.get("pluginConfig", []):
            strategy = plugin["args"]["scoringStrategy"]
            strategy["resources"] = sorted(strategy["resources"], key=lambda r: r["name"])
    return copy
