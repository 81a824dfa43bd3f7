"""Deletion as a real server and its garbage collector do it: propagation, graceful pods."""

from __future__ import annotations

from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
Body = dict[str, Any]


def job(name: str) -> Body:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def owned(kind: str, name: str, owner: Body, *, blocking: bool = False,
          finalizers: list[str] | None = None, node: str | None = None) -> Body:
    meta: Body = {"name": name, "namespace": "default", "ownerReferences": [
        {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
         "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
         "blockOwnerDeletion": blocking}]}
    if finalizers:
        meta["finalizers"] = finalizers
    if kind == "Pod":
        spec: Body = {"containers": [{"name": "c", "image": "i"}]}
        if node:
            spec["nodeName"] = node
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def delete_url(path: str, query: str = "") -> str:
    return f"{path}?{query}" if query else path


class TestPropagation:
    @pytest.mark.parametrize(("query", "want_dependent", "want_owner_ref"), [
        ("", "kept", False),  # batch/v1 Jobs orphan by default
        ("propagationPolicy=Orphan", "kept", False),
        ("orphanDependents=true", "kept", False),
        ("propagationPolicy=Background", "gone", None),
        ("orphanDependents=false", "gone", None),
        ("propagationPolicy=Foreground", "gone", None),
    ])
    def test_a_jobs_dependents(self, k8s_api: Emulator, query: str, want_dependent: str,
                               want_owner_ref: bool | None) -> None:
        owner = k8s_api.create(job("j"))
        k8s_api.create(owned("ConfigMap", "dep", owner))
        reply = call(k8s_api.url, "DELETE", delete_url(f"{JOBS}/j", query))
        assert reply.status == 200
        assert k8s_api.find("batch/v1", "Job", "j", "default") is None
        dependent = k8s_api.find("v1", "ConfigMap", "dep", "default")
        assert ("kept" if dependent else "gone") == want_dependent
        if want_owner_ref is not None:
            assert dependent is not None
            assert bool(dependent["metadata"].get("ownerReferences")) is want_owner_ref

    def test_other_resources_delete_dependents_by_default(self, k8s_api: Emulator) -> None:
        owner = k8s_api.create({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "o", "namespace": "default"}})
        k8s_api.create(owned("ConfigMap", "dep", owner))
        call(k8s_api.url, "DELETE", "/api/v1/namespaces/default/configmaps/o")
        assert k8s_api.find("v1", "ConfigMap", "dep", "default") is None

    def test_orphaning_is_seen_as_a_marked_owner_then_a_freed_dependent(
            self, k8s_api: Emulator) -> None:
        owner = k8s_api.create(job("j"))
        k8s_api.create(owned("ConfigMap", "dep", owner))
        since = k8s_api.store.resource_version
        call(k8s_api.url, "DELETE", f"{JOBS}/j")
        seen = []
        backlog, stop = k8s_api.store.watch(k8s_api.resource("batch/v1", "Job"), None, since,
                                            lambda event: None)
        stop()
        for event in backlog:
            seen.append((event.type, event.obj["metadata"].get("finalizers")))
        assert seen == [("MODIFIED", ["orphan"]), ("MODIFIED", None), ("DELETED", None)]

    def test_foreground_keeps_the_owner_until_blocking_dependents_are_gone(
            self, k8s_api: Emulator) -> None:
        owner = k8s_api.create(job("j"))
        k8s_api.create(owned("ConfigMap", "blocker", owner, blocking=True, finalizers=["x/y"]))
        k8s_api.create(owned("ConfigMap", "bystander", owner, finalizers=["x/y"]))
        call(k8s_api.url, "DELETE", delete_url(f"{JOBS}/j", "propagationPolicy=Foreground"))
        marked = k8s_api.get("batch/v1", "Job", "j", "default")
        assert marked["metadata"]["deletionTimestamp"]
        assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
        for name in ("blocker", "bystander"):
            assert k8s_api.get("v1", "ConfigMap", name, "default")["metadata"][
                "deletionTimestamp"]
        k8s_api.patch("v1", "ConfigMap", "bystander", {"metadata": {"finalizers": None}},
                      namespace="default")
        assert k8s_api.find("batch/v1", "Job", "j", "default") is not None  # still blocked
        k8s_api.patch("v1", "ConfigMap", "blocker", {"metadata": {"finalizers": None}},
                      namespace="default")
        assert k8s_api.find("batch/v1", "Job", "j", "default") is None

    def test_an_unknown_policy_is_400(self, k8s_api: Emulator) -> None:
        k8s_api.create(job("j"))
        assert call(k8s_api.url, "DELETE",
                    delete_url(f"{JOBS}/j", "propagationPolicy=Sometimes")).status == 400


class TestGracefulPods:
    @pytest.mark.parametrize(("node", "phase", "query", "want_terminating", "want_grace"), [
        ("n1", None, "", True, 30),  # the pod's terminationGracePeriodSeconds default
        ("n1", None, "gracePeriodSeconds=5", True, 5),
        ("n1", None, "gracePeriodSeconds=0", False, None),
        (None, None, "", False, None),  # never scheduled: nothing to stop
        ("n1", "Succeeded", "", False, None),  # already ended
        ("n1", "Failed", "", False, None),
    ])
    def test_a_pod_deletion(self, k8s_api: Emulator, node: str | None, phase: str | None,
                            query: str, want_terminating: bool, want_grace: int | None) -> None:
        pod = owned("Pod", "p", {"apiVersion": "v1", "kind": "Node",
                                 "metadata": {"name": "n", "uid": "u"}}, node=node)
        k8s_api.create(pod)
        if phase:
            k8s_api.patch("v1", "Pod", "p", {"status": {"phase": phase}}, namespace="default",
                          subresource="status")
        reply = call(k8s_api.url, "DELETE", delete_url(f"{PODS}/p", query))
        assert reply.status == 200
        found = k8s_api.find("v1", "Pod", "p", "default")
        assert (found is not None) is want_terminating
        if found is not None:
            assert found["metadata"]["deletionTimestamp"]
            assert found["metadata"]["deletionGracePeriodSeconds"] == want_grace

    def test_the_grace_period_only_shrinks_and_zero_removes(self, k8s_api: Emulator) -> None:
        k8s_api.create(owned("Pod", "p", {"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": "n", "uid": "u"}}, node="n1"))
        call(k8s_api.url, "DELETE", delete_url(f"{PODS}/p", "gracePeriodSeconds=10"))
        call(k8s_api.url, "DELETE", delete_url(f"{PODS}/p", "gracePeriodSeconds=60"))
        pod = k8s_api.get("v1", "Pod", "p", "default")
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 10
        k8s_api.patch("v1", "Pod", "p", {"status": {"phase": "Failed"}}, namespace="default",
                      subresource="status")
        assert k8s_api.find("v1", "Pod", "p", "default") is not None  # the kubelet's call
        k8s_api.delete("v1", "Pod", "p", "default", grace_period=0)
        assert k8s_api.find("v1", "Pod", "p", "default") is None

    def test_a_terminating_pod_blocks_its_foreground_owner(self, k8s_api: Emulator) -> None:
        owner = k8s_api.create(job("j"))
        k8s_api.create(owned("Pod", "p", owner, blocking=True, node="n1"))
        k8s_api.delete("batch/v1", "Job", "j", "default", propagation="Foreground")
        assert k8s_api.get("v1", "Pod", "p", "default")["metadata"]["deletionTimestamp"]
        assert k8s_api.get("batch/v1", "Job", "j", "default")["metadata"]["deletionTimestamp"]
        k8s_api.delete("v1", "Pod", "p", "default", grace_period=0)
        assert k8s_api.find("batch/v1", "Job", "j", "default") is None
