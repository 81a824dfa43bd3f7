"""Generated CRDs: checked-in files match the models, schemas are structural, kubectl niceties."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuota import cli, crds
from quota import api

ROOT = Path(__file__).resolve().parents[3]
CRD_DIR = ROOT / "manifests" / "crds"
REFERENCE = ROOT / "docs" / "reference" / "api.md"


def test_checked_in_crds_match_the_models() -> None:
    assert crds.drift(CRD_DIR) == []


def test_checked_in_reference_matches_the_models() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == crds.reference()


def test_generation_does_not_depend_on_the_process() -> None:
    """The same files from fresh interpreters with other hash seeds (set and dict orders
    differ between them), so that `kuota crds --check` never flips in CI."""
    script = "import json, sys; from kuota import crds; json.dump(crds.rendered(), sys.stdout)"
    outputs = [subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                              text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2")]
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0]) == crds.rendered()


@pytest.mark.parametrize("kind", sorted(api.KINDS))
def test_schema_is_structural(kind: str) -> None:
    schema = crds.openapi_schema(api.KINDS[kind])
    assert crds.structural_problems(schema) == []
    nodes = dict(crds.walk(schema))
    assert all("$ref" not in str(node) for node in nodes.values())


def test_structural_checker_finds_untyped_nodes() -> None:
    bad: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"description": "no type"},
            "b": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "c": {
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "string"},
            },
        },
    }
    assert crds.structural_problems(bad) == [
        "a: no type",
        "b: no type",
        "b: anyOf outside int-or-string",
        "c: both properties and additionalProperties",
    ]


def _crd(kind: str) -> dict[str, Any]:
    path = CRD_DIR / crds.file_name(api.KINDS[kind])
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


def _node(kind: str, path: str) -> dict[str, Any]:
    node = _crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


NAMES = [
    # (kind, plural, scope, short names, status subresource)
    ("ClusterQueue", "clusterqueues", "Cluster", ["cq"], True),
    ("Cohort", "cohorts", "Cluster", ["co"], True),
    ("LocalQueue", "localqueues", "Namespaced", ["queue", "queues", "lq"], True),
    ("ResourceFlavor", "resourceflavors", "Cluster", ["flavor", "flavors", "rf"], False),
    ("WorkloadPriorityClass", "workloadpriorityclasses", "Cluster", ["wpc"], False),
    ("Workload", "workloads", "Namespaced", ["kwl"], True),
    ("Topology", "topologies", "Cluster", ["topo"], False),
    ("AdmissionCheck", "admissionchecks", "Cluster", ["ac"], True),
]


@pytest.mark.parametrize(("kind", "plural", "scope", "short", "status"), NAMES)
def test_names_scope_and_status(
    kind: str, plural: str, scope: str, short: list[str], status: bool
) -> None:
    crd = _crd(kind)
    assert crd["metadata"]["name"] == f"{plural}.kuota.dev"
    assert crd["spec"]["group"] == "kuota.dev"
    assert crd["spec"]["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
        "shortNames": short,
    }
    assert crd["spec"]["scope"] == scope
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert ("subresources" in version) is status


COLUMNS = [
    (
        "ClusterQueue",
        [
            ("Cohort", ".spec.cohortName", 0),
            ("Strategy", ".spec.queueingStrategy", 1),
            ("Pending Workloads", ".status.pendingWorkloads", 0),
            ("Admitted Workloads", ".status.admittedWorkloads", 1),
        ],
    ),
    (
        "LocalQueue",
        [
            ("ClusterQueue", ".spec.clusterQueue", 0),
            ("Pending Workloads", ".status.pendingWorkloads", 0),
            ("Admitted Workloads", ".status.admittedWorkloads", 0),
        ],
    ),
    (
        "Workload",
        [
            ("Owner", ".metadata.labels.kuota\\.dev/owner-kind", 0),
            ("Queue", ".spec.queueName", 0),
            ("Reserved in", ".status.admission.clusterQueue", 0),
            ("Admitted", ".status.conditions[?(@.type=='Admitted')].status", 0),
            ("Finished", ".status.conditions[?(@.type=='Finished')].status", 0),
            ("Age", ".metadata.creationTimestamp", 0),
        ],
    ),
    ("WorkloadPriorityClass", [("Value", ".value", 0)]),
]


@pytest.mark.parametrize(("kind", "want"), COLUMNS)
def test_printer_columns_follow_kueue(kind: str, want: list[tuple[str, str, int]]) -> None:
    columns = _crd(kind)["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in columns] == want


SCHEMA_NODES = [
    # (kind, path, expected subset of the node)
    (
        "ClusterQueue",
        "spec.queueingStrategy",
        {"type": "string", "enum": ["StrictFIFO", "BestEffortFIFO"], "default": "BestEffortFIFO"},
    ),
    ("ClusterQueue", "spec.preemption", {"type": "object", "default": {}}),
    (
        "ClusterQueue",
        "spec.preemption.borrowWithinCohort.policy",
        {"enum": ["Never", "LowerPriority"], "default": "Never"},
    ),
    ("ClusterQueue", "spec.flavorFungibility", {"default": {}}),
    ("ClusterQueue", "spec.resourceGroups", {"type": "array", "maxItems": 16}),
    (
        "ClusterQueue",
        "spec.resourceGroups.[].flavors.[].resources.[].nominalQuota",
        {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    ),
    (
        "ClusterQueue",
        "spec.fairSharing.weight",
        {"x-kubernetes-int-or-string": True, "default": "1"},
    ),
    (
        "ClusterQueue",
        "spec.namespaceSelector.matchLabels",
        {"type": "object", "additionalProperties": {"type": "string"}},
    ),
    (
        "Workload",
        "spec.podSets.[].template.spec",
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    ),
    (
        "Workload",
        "spec.podSets.[].template.metadata",
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    ),
    ("Workload", "spec.podSets.[].count", {"type": "integer", "minimum": 0, "default": 1}),
    ("Workload", "spec.podSets.[].name", {"default": "main", "maxLength": 63}),
    ("Workload", "spec.active", {"type": "boolean", "default": True}),
    (
        "Workload",
        "status.conditions.[].lastTransitionTime",
        {"type": "string", "format": "date-time"},
    ),
    ("ResourceFlavor", "spec.nodeLabels", {"maxProperties": 8}),
    ("WorkloadPriorityClass", "value", {"type": "integer", "maximum": 2**31 - 1}),
]


@pytest.mark.parametrize(("kind", "path", "want"), SCHEMA_NODES)
def test_schema_nodes(kind: str, path: str, want: dict[str, Any]) -> None:
    node = _node(kind, path.replace(".[]", ".[]"))
    assert {k: node.get(k) for k in want} == want


def test_status_carries_no_defaults() -> None:
    status = _node("ClusterQueue", "status")
    assert all("default" not in node for _, node in crds.walk(status))


def test_metadata_is_a_plain_object() -> None:
    assert _node("Workload", "metadata") == {"type": "object"}


def test_every_user_facing_field_is_described() -> None:
    missing = []
    for kind, cls in api.KINDS.items():
        schema = crds.openapi_schema(cls)
        for path, node in crds.walk(schema):
            if path.endswith(("[]", ".*")) or path.startswith("metadata"):
                continue
            if not node.get("description"):
                missing.append(f"{kind}: {path or '<root>'}")
    assert missing == []


def test_check_reports_drift_and_missing_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["crds", "--write", str(tmp_path)]) == 0
    assert cli.main(["crds", "--check", str(tmp_path)]) == 0
    (tmp_path / "cohorts.kuota.dev.yaml").write_text("tampered\n", encoding="utf-8")
    (tmp_path / "topologies.kuota.dev.yaml").unlink()
    (tmp_path / "stale.kuota.dev.yaml").write_text("old\n", encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["crds", "--check", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{tmp_path}/cohorts.kuota.dev.yaml: differs from the models (run `kuota crds --write "
        f"{tmp_path}`)",
        f"{tmp_path}/topologies.kuota.dev.yaml: missing (run `kuota crds --write {tmp_path}`)",
        f"{tmp_path}/stale.kuota.dev.yaml: no kind generates this file (remove it)",
    ]


def test_write_is_idempotent_and_docs_are_checked(tmp_path: Path) -> None:
    docs = tmp_path / "api.md"
    assert crds.write(tmp_path) != []
    assert crds.write(tmp_path) == []
    assert cli.main(["crds", "--check", str(tmp_path), "--docs", str(docs)]) == 1
    assert cli.main(["crds", "--write", str(tmp_path), "--docs", str(docs)]) == 0
    assert cli.main(["crds", "--check", str(tmp_path), "--docs", str(docs)]) == 0
    docs.write_text("old\n", encoding="utf-8")
    assert cli.main(["crds", "--check", str(tmp_path), "--docs", str(docs)]) == 1
