"""manifests/scheduler/: the kube-scheduler config, the extender's Deployment,
Service, certificates and RBAC agree with each other and with the extender's own
routes and options."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from kuota import extender as ext
from kuota.commands import extender as command
from placement.cache import ClusterCache
from tests.cluster.binaries import kubectl_path

ROOT = Path(__file__).resolve().parents[3]
DIR = ROOT / "manifests" / "scheduler"


def load(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DIR / name).read_text()) if doc]


def one(kind: str, name: str = "kuota-extender") -> dict[str, Any]:
    for file in ("rbac.yaml", "extender.yaml", "namespace.yaml", "certificates.yaml"):
        for doc in load(file):
            if doc["kind"] == kind and doc["metadata"]["name"] == name:
                return doc
    raise AssertionError(f"no {kind} {name}")


CONFIG = load("kube-scheduler-config.yaml")[0]
(EXTENDER,) = CONFIG["extenders"]
DEPLOYMENT, SERVICE = one("Deployment"), one("Service")
(CONTAINER,) = DEPLOYMENT["spec"]["template"]["spec"]["containers"]


def extender_options() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    assert CONTAINER["command"] == ["kuota", "extender"]
    return parser.parse_args(["extender", *CONTAINER["args"]])


def test_config_has_the_default_and_the_binpack_profile() -> None:
    assert CONFIG["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert CONFIG["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in CONFIG["profiles"]] == ["default-scheduler",
                                                                 "kuota-binpack"]
    (fit,) = CONFIG["profiles"][1]["pluginConfig"]
    assert fit["name"] == "NodeResourcesFit"
    strategy = fit["args"]["scoringStrategy"]
    assert strategy["type"] == "MostAllocated"
    assert {"name": "nvidia.com/gpu", "weight": 3} in strategy["resources"]


def test_extender_entry_names_the_right_verbs_and_weight() -> None:
    assert EXTENDER["filterVerb"] == "filter"
    assert EXTENDER["prioritizeVerb"] == "prioritize"
    assert EXTENDER["weight"] == 5
    assert EXTENDER["nodeCacheCapable"] is True
    assert EXTENDER["managedResources"] == [{"name": "nvidia.com/gpu",
                                             "ignoredByScheduler": False}]
    assert "bindVerb" not in EXTENDER and "preemptVerb" not in EXTENDER


def test_verbs_are_routes_the_extender_serves() -> None:
    settings = ext.ExtenderSettings(scorer=command.build_scorer(extender_options()))
    app = ext.make_app(ext.Extender(settings, ClusterCache()))
    posts = {r.resource.canonical for r in app.router.routes()
             if r.method == "POST" and r.resource is not None}
    assert {f"/{EXTENDER['filterVerb']}", f"/{EXTENDER['prioritizeVerb']}"} <= posts


def test_extender_url_matches_the_service() -> None:
    url = urlsplit(EXTENDER["urlPrefix"])
    assert url.scheme == ("https" if EXTENDER["enableHTTPS"] else "http")
    meta = SERVICE["metadata"]
    assert url.hostname == f"{meta['name']}.{meta['namespace']}.svc"
    (port,) = SERVICE["spec"]["ports"]  # the probe port is not exposed
    assert url.port == port["port"]
    (container_port,) = [p for p in CONTAINER["ports"] if p["name"] == port["targetPort"]]
    assert str(container_port["containerPort"]) == extender_options().listen.rpartition(":")[2]
    assert SERVICE["spec"]["selector"].items() <= \
        DEPLOYMENT["spec"]["template"]["metadata"]["labels"].items()


def test_deployment_args_agree_with_the_config() -> None:
    args = extender_options()
    assert args.node_cache == EXTENDER["nodeCacheCapable"]
    assert args.listen.rpartition(":")[2] == str(CONTAINER["ports"][0]["containerPort"])
    settings = command.build_settings(args)
    assert settings.scheduler_names == frozenset({CONFIG["profiles"][1]["schedulerName"]})


def test_only_kube_scheduler_is_served_over_mutual_tls() -> None:
    args = extender_options()
    assert EXTENDER["enableHTTPS"] is True
    tls = EXTENDER["tlsConfig"]
    assert not tls.get("insecure")
    # A client certificate for the extender's --client-ca, and a CA to verify it by.
    assert {"certFile", "keyFile", "caFile"} <= tls.keys()
    assert (args.tls_cert, args.tls_key, args.client_ca) == (
        "/certs/tls.crt", "/certs/tls.key", "/certs/ca.crt")
    (mount,) = CONTAINER["volumeMounts"]
    (volume,) = DEPLOYMENT["spec"]["template"]["spec"]["volumes"]
    assert (mount["mountPath"], mount["readOnly"], mount["name"]) == ("/certs", True,
                                                                        volume["name"])
    serving, client = one("Certificate"), one("Certificate", "kuota-extender-client")
    assert volume["secret"]["secretName"] == serving["spec"]["secretName"]
    assert urlsplit(EXTENDER["urlPrefix"]).hostname in serving["spec"]["dnsNames"]
    assert "server auth" in serving["spec"]["usages"]
    assert "client auth" in client["spec"]["usages"]
    assert "server auth" not in client["spec"]["usages"]


def test_the_extender_ca_is_its_own_and_signs_both_certificates() -> None:
    ca = one("Certificate", "kuota-extender-ca")
    assert ca["spec"]["isCA"] is True
    assert one("Issuer", "kuota-extender-selfsigned")["spec"] == {"selfSigned": {}}
    assert ca["spec"]["issuerRef"] == {"kind": "Issuer", "name": "kuota-extender-selfsigned"}
    issuer = one("Issuer", "kuota-extender-ca")
    assert issuer["spec"] == {"ca": {"secretName": ca["spec"]["secretName"]}}
    for name in ("kuota-extender", "kuota-extender-client"):
        assert one("Certificate", name)["spec"]["issuerRef"] == {"kind": "Issuer",
                                                                 "name": "kuota-extender-ca"}


def test_probes_use_the_plain_probe_port_which_serves_only_probes() -> None:
    args = extender_options()
    ports = {p["name"]: p["containerPort"] for p in CONTAINER["ports"]}
    assert args.probe_listen.rpartition(":")[2] == str(ports["probes"])
    probes = {(CONTAINER[kind]["httpGet"]["path"], CONTAINER[kind]["httpGet"]["port"],
               CONTAINER[kind]["httpGet"].get("scheme", "HTTP"))
              for kind in ("readinessProbe", "livenessProbe")}
    assert probes == {("/readyz", "probes", "HTTP"), ("/healthz", "probes", "HTTP")}
    settings = ext.ExtenderSettings(scorer=command.build_scorer(args))
    app = ext.make_probe_app(ext.Extender(settings, ClusterCache()))
    assert {r.resource.canonical for r in app.router.routes()
            if r.resource is not None} == {"/healthz", "/readyz"}


def test_rbac_only_reads_nodes_and_pods() -> None:
    role = one("ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes", "pods"],
                              "verbs": ["get", "list", "watch"]}]
    binding = one("ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (subject,) = binding["subjects"]
    account = one("ServiceAccount")
    assert (subject["name"], subject["namespace"]) == (account["metadata"]["name"],
                                                       account["metadata"]["namespace"])
    assert DEPLOYMENT["spec"]["template"]["spec"]["serviceAccountName"] == subject["name"]


def test_kustomization_lists_every_object_file() -> None:
    kustomization = load("kustomization.yaml")[0]
    files = {p.name for p in DIR.glob("*.yaml")} - {"kustomization.yaml",
                                                    "kube-scheduler-config.yaml"}
    assert set(kustomization["resources"]) == files


#: The kubectl the real tier builds into the cache (hack/cluster/build-bins.sh), else one
#: on PATH; CI (KUOTA_REQUIRE_CLUSTER=1) always has the first, so this never skips there.
KUBECTL = kubectl_path()


@pytest.mark.skipif(KUBECTL is None and not os.environ.get("KUOTA_REQUIRE_CLUSTER"),
                    reason="needs kubectl (make cluster-bins)")
def test_kustomization_renders() -> None:
    assert KUBECTL is not None, "KUOTA_REQUIRE_CLUSTER=1 but no kubectl: make cluster-bins"
    out = subprocess.run([KUBECTL, "kustomize", str(DIR)], check=True, capture_output=True,
                         text=True).stdout
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(out) if doc)
    assert kinds == ["Certificate"] * 3 + ["ClusterRole", "ClusterRoleBinding", "Deployment"] + \
        ["Issuer"] * 2 + ["Namespace", "Service", "ServiceAccount"]


def test_docs_snippet_for_the_in_tree_alternative_parses() -> None:
    text = (ROOT / "docs" / "placement.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    configs = [yaml.safe_load(b) for b in blocks if "KubeSchedulerConfiguration" in b]
    in_tree = [c for c in configs if not c.get("extenders")]
    assert in_tree, "docs/placement.md shows no extender-free config"
    (profile,) = in_tree[0]["profiles"]
    (fit,) = profile["pluginConfig"]
    assert fit["name"] == "NodeResourcesFit"
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
