"""What a cluster admin sees with the real kubectl: samples apply, tables show real counts."""

from __future__ import annotations

import pathlib
import re
import subprocess

import yaml

from tests.emulator import Emulator, Kubectl
from tests.emulator.clients import KUBECTL
from tests.integration.operator import harness as h

SAMPLES = h.ROOT / "manifests" / "samples"


def table(out: str) -> list[list[str]]:
    """Rows of a kubectl table, cut at the header's column starts (blank cells stay)."""
    lines = out.rstrip().splitlines()
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=\s\s))\S", lines[0])]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [[line[a:b].strip() for a, b in bounds] for line in lines]


class TestKubectl:
    def test_samples_apply_and_tables_show_real_counts(
            self, cluster: Emulator, certs: pathlib.Path, tmp_path: pathlib.Path) -> None:
        kubectl = Kubectl(cluster.url, tmp_path)
        with h.Running(cluster, certs):
            kubectl.run("apply", "--validate=false", "-f", str(SAMPLES))
            h.wait(cluster, lambda: h.running(cluster, "sample-job"), "sample-job to start")
            h.wait(cluster, lambda: h.running(cluster, "team-a-training"),
                   "team-a-training to start")
            kubectl.run("apply", "--validate=false", "-f", "-", input=_second_job())

            def cq_row() -> list[str] | None:
                rows = table(kubectl.run("get", "cq", "-o", "wide").stdout)
                row = next((r for r in rows if r[0] == "cluster-queue"), None)
                return row if row and row[-1] == "1" and row[-2] == "1" else None

            header = table(kubectl.run("get", "cq", "-o", "wide").stdout)[0]
            assert header == ["NAME", "COHORT", "STRATEGY", "PENDING WORKLOADS",
                              "ADMITTED WORKLOADS"]
            assert h.wait(cluster, cq_row, "kubectl get cq to count") == \
                ["cluster-queue", "", "BestEffortFIFO", "1", "1"]
            rows = table(kubectl.run("get", "cq", "-o", "wide").stdout)
            assert ["team-a-cq", "team-ab", "BestEffortFIFO", "0", "1"] in rows
            assert table(kubectl.run("get", "cq").stdout)[0] == \
                ["NAME", "COHORT", "PENDING WORKLOADS"]

            workloads = table(kubectl.run("get", "kwl", "-A").stdout)
            assert workloads[0][:6] == ["NAMESPACE", "NAME", "OWNER", "QUEUE", "RESERVED IN",
                                        "ADMITTED"]
            by_queue = {r[3]: r for r in workloads[1:]}
            assert by_queue["team-a-queue"][2:6] == ["Job", "team-a-queue", "team-a-cq", "True"]
            lq = table(kubectl.run("get", "lq", "user-queue").stdout)
            assert lq[1][:2] == ["user-queue", "cluster-queue"]
            h.wait(cluster, lambda: "Started" in kubectl.run(
                "get", "events", "--field-selector", "involvedObject.name=sample-job").stdout,
                "kubectl get events to show the start")


def _second_job() -> str:
    text = (SAMPLES / "sample-job.yaml").read_text()
    return text.replace("name: sample-job", "name: sample-job-2").replace(
        "parallelism: 3", "parallelism: 7").replace("completions: 3", "completions: 7")


def test_kustomize_renders_everything_once() -> None:
    out = subprocess.run([KUBECTL, "kustomize", str(h.ROOT / "manifests")], check=True,
                         capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    ids = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(ids) == len(set(ids))
    kinds = {d["kind"] for d in docs}
    assert {"Namespace", "CustomResourceDefinition", "Deployment", "Service",
            "MutatingWebhookConfiguration", "ClusterRole", "Role"} <= kinds
    crds = {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"}
    generated = {p.name.removesuffix(".yaml") for p in (h.ROOT / "manifests/crds").glob("*.yaml")}
    assert crds == generated  # every generated CRD is installed
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")
             and d["metadata"]["name"] == "kuota-operator"]
    for role in roles:
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"]
            if "secrets" in rule["resources"]:
                assert role["kind"] == "Role"  # Secrets only in the operator's namespace
    operator = next(d for d in docs if d["kind"] == "Deployment"
                    and d["metadata"]["name"] == "kuota-operator")
    container = operator["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] and container["readinessProbe"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
