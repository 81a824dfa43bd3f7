"""``kuota why`` / ``kuota describe workload`` reading a Workload from a cluster (the emulator).

The operator writes the dispatch decision into ``status.dispatch`` (and the
member into ``status.clusterName``); the command reads it with a kubeconfig.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kuota import cli
from tests.emulator import Emulator, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]

DECISION = {
    "workload": "ml/train", "cluster": "eu", "config": "fleet", "maxTotal": 200,
    "clusters": [
        {"name": "eu", "total": 150, "scores": [
            {"plugin": "Cost", "raw": 12.5, "score": 100, "weight": 1},
            {"plugin": "LoadBalance", "raw": 0.5, "score": 50, "weight": 1}]},
        {"name": "us", "total": 60, "scores": [
            {"plugin": "Cost", "raw": 30.0, "score": 10, "weight": 1},
            {"plugin": "LoadBalance", "raw": 0.9, "score": 50, "weight": 1}]},
        {"name": "ap", "filteredBy": "Health", "reason": "member last seen 600s ago"},
    ],
}


def _condition(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2025-01-01T00:00:00Z"}


ADMITTED = [_condition("QuotaReserved", "True", "QuotaReserved"),
            _condition("Admitted", "True", "Admitted")]


def _workload(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
            }}]},
            "status": status}


#: ClusterQueue team (one cpu, held by train), LocalQueue ml/main feeding it.
QUEUES = [
    {"apiVersion": "kuota.dev/v1alpha1", "kind": "ResourceFlavor",
     "metadata": {"name": "default"}, "spec": {}},
    {"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue", "metadata": {"name": "team"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{
         "coveredResources": ["cpu"],
         "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
    {"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
     "metadata": {"name": "main", "namespace": "ml"}, "spec": {"clusterQueue": "team"}},
]


@pytest.fixture
def kubeconfig(k8s_api: Emulator, tmp_path: Path) -> str:
    for path in sorted((ROOT / "manifests" / "crds").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                k8s_api.create(doc)
    k8s_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    for doc in QUEUES:
        k8s_api.create(doc)
    k8s_api.create(_workload("train", {
        "clusterName": "eu", "dispatch": DECISION,
        "admission": {"clusterQueue": "team", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"},
             "count": 1}]},
        "conditions": ADMITTED}))
    k8s_api.create(_workload("waiting", {
        "conditions": [_condition("QuotaReserved", "False", "Pending",
                                  "insufficient quota for cpu in flavor default")]}))
    k8s_api.create(_workload("stopping", {
        "admission": {"clusterQueue": "team", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"},
             "count": 1}]},
        "conditions": [*ADMITTED, _condition("Evicted", "True", "Preempted",
                                             "preempted to admit ml/high")]}))
    return str(write_kubeconfig(k8s_api.url, tmp_path / "kubeconfig"))


CASES = [
    {"argv": ["why", "ml/train"], "want_status": 0,
     "want_out": ["Workload ml/train: dispatched to eu (config fleet)", "Cost",
                  "ap  Health: member last seen 600s ago"]},
    {"argv": ["describe", "workload", "ml/train"], "want_status": 0,
     "want_out": ["State:", "Admitted", "Cluster:", "eu", "ClusterQueue:  team",
                  "main: cpu=default", "Requests main: 1 pod × cpu=1", "Dispatch:",
                  "dispatched to eu (config fleet)"]},
    # Issue 41: it led with "no multi-cluster dispatch decision yet" on a single pool.
    {"argv": ["why", "ml/waiting"], "want_status": 0,
     "want_out": ["Workload ml/waiting is Pending in ClusterQueue team (LocalQueue ml/main).",
                  "insufficient quota for cpu in flavor default",
                  "cpu in flavor default: needs 1, free 0, at most 1 ever"],
     "want_not": ["dispatch"]},
    # evicted, its pods still stopping: it holds its quota until they are gone
    {"argv": ["describe", "workload", "ml/stopping"], "want_status": 0,
     "want_out": ["Evicting", "Preempted", "preempted to admit ml/high"]},
    {"argv": ["why", "ml/absent"], "want_status": 1, "want_err": "Workload ml/absent not found"},
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: " ".join(c["argv"]))
def test_why_reads_the_workload_status(kubeconfig: str, case: dict[str, Any],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main([*case["argv"], "--kubeconfig", kubeconfig])
    out, err = capsys.readouterr()
    assert status == case["want_status"], err
    for text in case.get("want_out", []):
        assert text in out, out
    for text in case.get("want_not", []):
        assert text not in out.lower(), out
    if "want_err" in case:
        assert case["want_err"] in err


def test_why_json_gives_the_stored_decision(kubeconfig: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["why", "ml/train", "-o", "json", "--kubeconfig", kubeconfig]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["cluster"] == "eu"
    assert [c["name"] for c in doc["dispatch"]["clusters"]] == ["eu", "us", "ap"]


def test_context_without_kubeconfig_is_invalid(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["why", "x", "--context", "c"]) == 2
    assert "--context needs --kubeconfig" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["waiting", "train"])
def test_kubectl_kuota_why_says_what_kuota_why_says(kubeconfig: str, name: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 41: one explanation everywhere — the plugin prints kuota why's text."""
    from kuota import kubectl

    assert cli.main(["why", f"ml/{name}", "--kubeconfig", kubeconfig]) == 0
    said = capsys.readouterr().out
    assert kubectl.main(["--kubeconfig", kubeconfig, "why", name, "-n", "ml"]) == 0
    assert capsys.readouterr().out == said
