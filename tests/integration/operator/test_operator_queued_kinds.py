"""Kinds of the contract through the whole operator, on the emulator: a RayCluster (its CRD
registered as a cluster would have it) is suspended at creation, queued with Kueue's pod
sets and started with its flavor; one kuota cannot queue is refused at creation naming the
field, and one that slipped past the webhook is suspended with a Warning Event."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from kuota.operator import loop
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RAYCLUSTERS = "/apis/ray.io/v1/namespaces/default/rayclusters"
Body = dict[str, Any]


def raycluster_crd() -> Body:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "rayclusters.ray.io"},
            "spec": {"group": "ray.io", "scope": "Namespaced",
                     "names": {"plural": "rayclusters", "singular": "raycluster",
                               "kind": "RayCluster", "listKind": "RayClusterList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "schema": {"openAPIV3Schema": schema}}]}}


def raycluster(name: str, *, workers: Any = 2, autoscaling: bool = False,
               queued: bool = True) -> Body:
    template = {"spec": {"containers": [{"name": "ray", "image": "rayproject/ray",
                                         "resources": {"requests": {"cpu": "1"}}}]}}
    spec: Body = {"headGroupSpec": {"template": template},
                  "workerGroupSpecs": [{"groupName": "workers", "replicas": workers,
                                        "template": template}]}
    if autoscaling:
        spec["enableInTreeAutoscaling"] = True
    meta: Body = {"name": name}
    if queued:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": "main"}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta, "spec": spec}


def get(api: Emulator, name: str) -> Body:
    return api.get("ray.io/v1", "RayCluster", name, "default")


def setup(cluster: Emulator) -> None:
    assert call(cluster.url, "POST", CRDS, raycluster_crd()).status == 201
    cluster.apply(h.flavor("fast", labels={"tier": "fast"}),
                  h.cluster_queue("team", quotas={"fast": {"cpu": 8}}),
                  h.local_queue("main", "team"))


class TestRayClusters:
    def test_suspended_queued_and_started_with_its_flavor(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        with h.Running(cluster, certs):
            created = call(cluster.url, "POST", RAYCLUSTERS, raycluster("rc"))
            assert created.status == 201 and created.data["spec"]["suspend"] is True
            h.wait(cluster, lambda: get(cluster, "rc")["spec"]["suspend"] is False,
                   "the RayCluster admitted and started")
            started = get(cluster, "rc")["spec"]
            assert started["headGroupSpec"]["template"]["spec"]["nodeSelector"] == \
                {"tier": "fast"}
            assert started["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == \
                {"tier": "fast"}
            workloads = cluster.list(h.API, "Workload", "default")
            assert [[(ps["name"], ps["count"]) for ps in w["spec"]["podSets"]]
                    for w in workloads] == [[("head", 1), ("workers", 2)]]
            assert workloads[0]["metadata"]["labels"]["kuota.dev/owner-kind"] == "RayCluster"

    def test_an_autoscaling_cluster_is_refused_and_a_malformed_one_is_told(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        setup(cluster)
        # Made while kuota was not running: its webhook never saw it.
        assert call(cluster.url, "POST", RAYCLUSTERS,
                    raycluster("odd", workers="many")).status == 201
        with h.Running(cluster, certs):
            refused = call(cluster.url, "POST", RAYCLUSTERS,
                           raycluster("auto", autoscaling=True))
            assert refused.status == 422
            assert "spec.enableInTreeAutoscaling" in refused.data["message"]
            plain = call(cluster.url, "POST", RAYCLUSTERS,
                         raycluster("plain", autoscaling=True, queued=False))
            assert plain.status == 201 and "suspend" not in plain.data["spec"]

            h.wait(cluster, lambda: get(cluster, "odd")["spec"].get("suspend") is True,
                   "the malformed cluster suspended")
            events = h.wait(cluster, lambda: [
                e for e in cluster.list("v1", "Event", "default")
                if e.get("reason") == "CannotQueue"
                and e["involvedObject"]["name"] == "odd"], "a CannotQueue Event")
            assert "cannot be queued" in events[0]["message"]
            assert not cluster.list(h.API, "Workload", "default")

    def test_a_kind_installed_while_kuota_runs_is_queued(
            self, cluster: Emulator, certs: pathlib.Path,
            monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(loop, "KIND_RECHECK", 0.2)
        cluster.apply(h.flavor("fast", labels={"tier": "fast"}),
                      h.cluster_queue("team", quotas={"fast": {"cpu": 8}}),
                      h.local_queue("main", "team"))
        with h.Running(cluster, certs) as running:
            running.quiet()
            assert call(cluster.url, "POST", CRDS, raycluster_crd()).status == 201
            # (kopf's managed webhook configuration here lists only the kinds served when
            # it started, so this one is not suspended at creation; the shipped
            # configuration lists every kind.)
            assert call(cluster.url, "POST", RAYCLUSTERS, raycluster("late")).status == 201
            h.wait(cluster, lambda: cluster.list(h.API, "Workload", "default"),
                   "the RayCluster's Workload once its kind is watched")
            h.wait(cluster, lambda: get(cluster, "late")["spec"].get("suspend") is False
                   and get(cluster, "late")["spec"]["headGroupSpec"]["template"]["spec"]
                   .get("nodeSelector") == {"tier": "fast"},
                   "the RayCluster started with its flavor")

    def test_a_workload_the_api_server_refuses_is_created_later(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """A Workload's creation refused on its merits (as a real API server refuses an
        owner reference to a kind its owner check does not know yet, just after the CRD
        was installed: 403) is reported and tried again, not dropped."""
        setup(cluster)
        fault = cluster.faults.fail(plural="workloads", verbs={"create"}, status=403, times=1)
        with h.Running(cluster, certs):
            assert call(cluster.url, "POST", RAYCLUSTERS, raycluster("rc")).status == 201
            h.wait(cluster, lambda: get(cluster, "rc")["spec"]["suspend"] is False,
                   "the RayCluster queued and started after the refusal", timeout=15)
            assert fault.hits == 1
            refused = [e for e in cluster.list("v1", "Event", "default")
                       if e.get("reason") == "WorkloadNotCreated"]
            assert refused and refused[0]["involvedObject"]["name"] == "rc"


class TestOtherNamespaces:
    def test_an_operator_for_some_namespaces_leaves_the_others_alone(
            self, cluster: Emulator, certs: pathlib.Path) -> None:
        """Suspended or gated in a namespace kuota does not manage, an object would never
        run: the webhook leaves it as it is."""
        setup(cluster)
        with h.Running(cluster, certs, namespaces=("team",)):
            created = call(cluster.url, "POST", RAYCLUSTERS, raycluster("theirs"))
            lone = call(cluster.url, "POST", "/api/v1/namespaces/default/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "lone", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        assert created.status == 201 and "suspend" not in created.data["spec"]
        assert lone.status == 201 and not lone.data["spec"].get("schedulingGates")
