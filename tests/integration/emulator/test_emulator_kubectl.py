"""The real kubectl against the emulator: discovery, printer columns, apply, watch.

kubectl runs with its own kubeconfig, cache directory and HOME under
``tmp_path`` (never ``~/.kube``). ``apply`` needs ``--validate=false``: the
emulator serves no OpenAPI documents (kubectl then fails to download them).
"""

from __future__ import annotations

import pathlib
import re

import kmock
import pytest
import yaml

from tests.cluster.binaries import kubectl_path
from tests.emulator import Emulator, Kubectl
from tests.emulator.clients import LineReader
from tests.emulator.samples import WIDGET_API, widget, widget_crd

pytestmark = pytest.mark.skipif(kubectl_path() is None, reason="needs kubectl")

CRDS = pathlib.Path(__file__).resolve().parents[3] / "manifests" / "crds"


@pytest.fixture
def kubectl(k8s_api: Emulator, tmp_path: pathlib.Path) -> Kubectl:
    return Kubectl(k8s_api.url, tmp_path)


@pytest.fixture
def widgets(k8s_api: Emulator) -> Emulator:
    k8s_api.create(widget_crd())
    return k8s_api


def table(output: str, header: str | None = None) -> list[list[str]]:
    """kubectl's columns, cut where the header's columns start (empty cells stay empty)."""
    lines = output.rstrip("\n").splitlines()
    header = header or lines[0]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return [[line[a:b].strip() for a, b in bounds] for line in lines]


class TestGet:
    def test_short_name_prints_the_crd_columns(self, widgets: Emulator,
                                               kubectl: Kubectl) -> None:
        widgets.create(dict(widget("w1", size=3, color="blue"), status={
            "phase": "Running", "conditions": [{"type": "Other", "status": "False"},
                                               {"type": "Ready", "status": "True"}]}))
        widgets.create(widget("w2"))
        rows = table(kubectl.run("get", "wdg").stdout)
        assert rows[0] == ["NAME", "SIZE", "COLOR", "PHASE", "READY", "AGE"]
        assert rows[1][:5] == ["w1", "3", "blue", "Running", "True"]
        assert rows[2][:5] == ["w2", "1", "red", "", ""]
        assert re.fullmatch(r"\d+s", rows[1][5])

    def test_categories_and_all_namespaces(self, widgets: Emulator, kubectl: Kubectl) -> None:
        widgets.create(widget("w1", namespace="kube-system"))
        rows = table(kubectl.run("get", "kuota-test", "-A").stdout)
        assert rows[0][:2] == ["NAMESPACE", "NAME"]
        assert rows[1][:2] == ["kube-system", "w1"]

    def test_built_ins_have_name_and_age(self, k8s_api: Emulator, kubectl: Kubectl) -> None:
        k8s_api.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "cm", "namespace": "default"}})
        rows = table(kubectl.run("get", "cm").stdout)
        assert rows[0] == ["NAME", "AGE"] and rows[1][0] == "cm"
        namespaces = table(kubectl.run("get", "ns").stdout)
        assert namespaces[0] == ["NAME", "STATUS", "AGE"]
        assert ["default", "Active"] in [row[:2] for row in namespaces]

    def test_a_missing_object_reads_like_the_real_server(self, widgets: Emulator,
                                                         kubectl: Kubectl) -> None:
        done = kubectl.run("get", "wdg", "nope", check=False)
        assert done.returncode == 1
        assert 'Error from server (NotFound): widgets.emu.kuota.dev "nope" not found' \
            in done.stderr

    def test_api_resources_lists_the_crd(self, widgets: Emulator, kubectl: Kubectl) -> None:
        rows = table(kubectl.run("api-resources", "--api-group=emu.kuota.dev").stdout)
        assert rows[1] == ["widgets", "wdg", "emu.kuota.dev/v1", "true", "Widget"]


class TestApply:
    def test_create_then_configure_a_custom_resource(self, widgets: Emulator,
                                                     kubectl: Kubectl) -> None:
        path = kubectl.manifest("w.yaml", widget("w1", size=3))
        assert "created" in kubectl.run("apply", "--validate=false", "-f", str(path)).stdout
        kubectl.manifest("w.yaml", widget("w1", size=4))
        assert "configured" in kubectl.run("apply", "--validate=false", "-f", str(path)).stdout
        patches = widgets.handler["patch", kmock.resource("emu.kuota.dev", "v1", "widgets")]
        assert [r.headers["Content-Type"] for r in patches] == ["application/merge-patch+json"]
        shown = yaml.safe_load(kubectl.run("get", "widget", "w1", "-o", "yaml").stdout)
        assert shown["apiVersion"] == WIDGET_API and shown["spec"] == {"size": 4, "color": "red"}
        assert shown["metadata"]["generation"] == 2

    def test_a_built_in_is_configured_with_a_strategic_merge(self, k8s_api: Emulator,
                                                             kubectl: Kubectl) -> None:
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
              "data": {"a": "1"}}
        path = kubectl.manifest("cm.yaml", cm)
        kubectl.run("apply", "--validate=false", "-f", str(path))
        kubectl.manifest("cm.yaml", dict(cm, data={"b": "2"}))
        kubectl.run("apply", "--validate=false", "-f", str(path))
        patches = k8s_api.handler["patch", kmock.resource("", "v1", "configmaps")]
        assert [r.headers["Content-Type"] for r in patches] == \
            ["application/strategic-merge-patch+json"]
        assert k8s_api.get("v1", "ConfigMap", "c", "default")["data"] == {"b": "2"}

    def test_a_crd_applied_with_kubectl_is_served(self, k8s_api: Emulator,
                                                  kubectl: Kubectl) -> None:
        kubectl.run("get", "ns")  # fills kubectl's discovery cache before the CRD exists
        kubectl.run("apply", "--validate=false", "-f",
                    str(kubectl.manifest("crd.yaml", widget_crd())))
        kubectl.run("apply", "--validate=false", "-f",
                    str(kubectl.manifest("w.yaml", widget("w1"))))
        assert kubectl.run("get", "wdg", "-o", "name").stdout.split() == [
            "widget.emu.kuota.dev/w1"]

    def test_delete(self, widgets: Emulator, kubectl: Kubectl) -> None:
        widgets.create(widget("w1"))
        kubectl.run("delete", "wdg", "w1")
        assert widgets.find(WIDGET_API, "Widget", "w1", "default") is None


class TestWatch:
    def test_get_w_prints_new_events(self, widgets: Emulator, kubectl: Kubectl) -> None:
        widgets.create(widget("before"))
        reader = LineReader(kubectl.start("get", "wdg", "-w"))
        try:
            header = reader.until(lambda line: line.startswith("NAME"))
            reader.until(lambda line: line.startswith("before"))
            widgets.create(widget("after", size=9))
            added = reader.until(lambda line: line.startswith("after"))
            assert table(added, header)[0][:2] == ["after", "9"]
            widgets.patch(WIDGET_API, "Widget", "before", {"spec": {"size": 5}},
                          namespace="default")
            changed = reader.until(lambda line: line.startswith("before"))
            assert table(changed, header)[0][:2] == ["before", "5"]
        finally:
            reader.stop()


@pytest.mark.skipif(not list(CRDS.glob("*.yaml")), reason="manifests/crds/ not generated yet")
class TestProjectCRDs:
    def test_all_apply_and_get_cq_shows_the_columns(self, k8s_api: Emulator,
                                                    kubectl: Kubectl) -> None:
        kubectl.run("apply", "--validate=false", "-f", str(CRDS))
        for path in sorted(CRDS.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            names = crd["spec"]["names"]
            assert kubectl.run("get", names["plural"], "-A").returncode == 0, path
        k8s_api.create({"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue",
                        "metadata": {"name": "team-a"}, "spec": {"cohortName": "org"},
                        "status": {"pendingWorkloads": 3, "admittedWorkloads": 2}})
        rows = table(kubectl.run("get", "cq").stdout)
        assert rows[0] == ["NAME", "COHORT", "PENDING WORKLOADS"]
        assert rows[1] == ["team-a", "org", "3"]
        wide = table(kubectl.run("get", "cq", "-o", "wide").stdout)
        assert "ADMITTED WORKLOADS" in wide[0] and wide[1][wide[0].index("ADMITTED WORKLOADS")] \
            == "2"
