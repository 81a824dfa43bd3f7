"""The dashboard's Kubernetes mode against the API emulator: the kuota objects listed with a
kubeconfig, the engine rebuilt from them as the operator rebuilds it, and the pages a
person sees in chromium (one screenshot: dashboard-kubernetes.png)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kuota.dashboard.kube_source import KubeSource
from kuota.dashboard.model import Counts
from tests.emulator import Emulator, write_kubeconfig
from tests.integration.dashboard import browser
from tests.integration.operator.harness import install_crds

API = "kuota.dev/v1alpha1"


def condition(type_: str, status: str, reason: str, message: str = "",
              at: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": at}


def workload(name: str, cpu: str, created: str, status: dict[str, Any],
             priority: int = 0) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Workload",
            "metadata": {"name": name, "namespace": "ml", "creationTimestamp": created},
            "spec": {"queueName": "main", "priority": priority, "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [
                    {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}]},
            "status": status}


def admitted(cpu: str) -> dict[str, Any]:
    return {"admission": {"clusterQueue": "team", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": cpu},
         "count": 1}]},
        "conditions": [condition("QuotaReserved", "True", "QuotaReserved"),
                       condition("Admitted", "True", "Admitted", at="2026-01-01T00:00:05Z")]}


WAITING = {"conditions": [condition("QuotaReserved", "False", "Pending",
                                    "insufficient unused quota for cpu in flavor default")]}


@pytest.fixture
def kubeconfig(k8s_api: Emulator, tmp_path: Path) -> str:
    install_crds(k8s_api)
    k8s_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}})
    k8s_api.create({"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    for name, cpu in (("team", "4"), ("other", "4")):
        k8s_api.create({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
                        "spec": {"cohortName": "org", "namespaceSelector": {},
                                 "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                     {"name": "default", "resources": [
                                         {"name": "cpu", "nominalQuota": cpu}]}]}]}})
    k8s_api.create({"apiVersion": API, "kind": "LocalQueue",
                    "metadata": {"name": "main", "namespace": "ml"},
                    "spec": {"clusterQueue": "team"}})
    runs = workload("runs", "6", "2026-01-01T00:00:00Z", admitted("6"))
    runs["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                            "name": "train", "uid": "u1"}]
    k8s_api.create(runs)
    for name, node in (("train-a", "node-1"), ("train-b", "node-2"), ("train-c", None)):
        k8s_api.create({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": name, "namespace": "ml",
                                     "labels": {"batch.kubernetes.io/job-name": "train"}},
                        "spec": {"containers": [{"name": "c", "image": "x"}],
                                 **({"nodeName": node} if node else {})}})
    k8s_api.create(workload("old", "3", "2026-01-01T00:01:00Z", WAITING))
    k8s_api.create(workload("urgent", "3", "2026-01-01T00:02:00Z", WAITING, priority=10))
    k8s_api.create(workload("done", "1", "2026-01-01T00:00:00Z", {"conditions": [
        condition("Finished", "True", "Succeeded")]}))
    k8s_api.create({"apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": "runs.1", "namespace": "ml"},
                    "involvedObject": {"kind": "Workload", "name": "runs", "namespace": "ml"},
                    "reason": "Admitted", "message": "Admitted by ClusterQueue team",
                    "type": "Normal", "count": 1, "lastTimestamp": "2026-01-01T00:00:05Z"})
    return str(write_kubeconfig(k8s_api.url, tmp_path / "kubeconfig"))


def test_the_overview_is_the_operators_engine(kubeconfig: str) -> None:
    ov = KubeSource.connect(kubeconfig, None).overview()
    team = ov.cluster_queue("team")
    assert team is not None and team.counts == Counts(pending=2, reserving=1, admitted=1)
    (cell,) = team.cells
    assert (cell.nominal, cell.used, cell.borrowed) == (4000, 6000, 2000)
    other = ov.cluster_queue("other")
    assert other is not None and other.cells[0].lent == 2000
    # Priority first, then creation time; the reason the operator wrote.
    assert [(p.key, p.position) for p in ov.pending["team"]] == [("ml/urgent", 0),
                                                                 ("ml/old", 1)]
    assert ov.pending["team"][1].waits_because == \
        "Pending: insufficient unused quota for cpu in flavor default"
    # The finished one is left out; nodes are those of the Job's bound pods.
    assert [(r.key, r.nodes) for r in ov.running] == [("ml/runs", ("node-1", "node-2"))]
    assert ov.problems == ()


def test_a_workload_page_reads_conditions_and_events(kubeconfig: str) -> None:
    source = KubeSource.connect(kubeconfig, None)
    page = source.workload("ml/runs", source.overview())
    assert page is not None and page.running is not None
    assert [(h.event, h.detail) for h in page.history] == [
        ("QuotaReserved=True", "QuotaReserved"), ("Admitted=True", "Admitted"),
        ("Admitted", "Admitted by ClusterQueue team")]
    assert source.workload("ml/absent", None) is None


def test_kubernetes_mode_in_the_browser(kubeconfig: str, page: Any) -> None:
    with browser.dashboard("--kubeconfig", kubeconfig, "--interval", "0.5") as dash:
        browser.wait_ready(dash.url)
        page.goto(dash.url + "/")
        assert page.locator("#total-pending").inner_text() == "2"
        assert page.locator('tr[data-name="team"] .seg.borrowed').evaluate(
            "e => e.style.width") == "33.33%"  # 2 of 6: no borrowing limit, the bar is 6
        assert "Kubernetes http://127.0.0.1" in page.locator("header").inner_text()
        page.locator('table.pending a[href="/workloads/ml/urgent"]').click()
        page.wait_for_url(dash.url + "/workloads/ml/urgent")
        assert "0 in ClusterQueue team" in page.locator("dl.facts").inner_text()
        why = page.locator("pre.why").inner_text()
        assert "Waiting: Pending: insufficient unused quota" in why
        assert "dispatch" not in why.lower(), why  # issue 41: a single pool's workload
        page.goto(dash.url + "/")
        path = browser.artifacts() / "dashboard-kubernetes.png"
        page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
