"""What one observation of a Kubernetes member reports: others' pods as node usage, our copies'
bound pods per copy (for a restarted manager to adopt), and a refused create as a refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kuota.federation import member_watch
from kuota.federation.kubernetes_member import KubernetesMember
from kuota.federation.member import refusal_of
from tests.emulator import Emulator, kubeconfig

ORIGIN = {"kuota.dev/origin": "mgr"}


@pytest.fixture(autouse=True)
def no_watches_left() -> Iterator[None]:
    yield
    member_watch.close_all()


def node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}},
            "spec": {}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def pod(name: str, node_name: str | None, cpu: str, *, labels: dict[str, str] | None = None,
        owner: str | None = None, phase: str = "Running") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                                    "uid": "u-1", "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x",
                                            "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase}}


def copy_job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default", "labels": dict(ORIGIN),
                         "annotations": {"kuota.dev/origin-workload": f"default/wl-{name}"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}],
                                           "restartPolicy": "Never"}}}}


def test_an_observation_splits_others_usage_from_our_copies(k8s_api: Emulator) -> None:
    api = k8s_api
    for name in ("n1", "n2"):
        api.create(node(name))
    api.create(copy_job("train"))
    api.create(copy_job("idle"))
    api.create(pod("train-0", "n1", "2", labels=ORIGIN, owner="train"))
    api.create(pod("train-1", "n2", "3", labels={**ORIGIN, "job-name": "train"}))  # label only
    api.create(pod("train-2", "n2", "1", labels=ORIGIN, owner="train", phase="Succeeded"))
    api.create(pod("train-3", None, "1", labels=ORIGIN, owner="train"))  # not bound yet
    api.create(pod("other", "n1", "4"))
    seen = KubernetesMember(kubeconfig(api.url)).observe("mgr")
    requested = {n.name: dict(n.requested) for n in seen.nodes}
    assert requested["n1"].get("cpu") == 4_000 and requested["n2"].get("cpu", 0) == 0
    usage = {c.name: {n: dict(a) for n, a in c.usage.items()} for c in seen.copies}
    assert usage["idle"] == {}
    assert {n: a["cpu"] for n, a in usage["train"].items()} == {"n1": 2_000, "n2": 3_000}
    assert {c.workload for c in seen.copies} == {"default/wl-train", "default/wl-idle"}


def test_a_forbidden_create_is_a_refusal_not_an_error(k8s_api: Emulator) -> None:
    api = k8s_api
    api.faults.fail(status=403, verbs={"create"}, plural="jobs", message="no Jobs here")
    answer = KubernetesMember(kubeconfig(api.url)).create(copy_job("train"))
    assert refusal_of(answer) == "403 Forbidden: no Jobs here"
    assert refusal_of(KubernetesMember(kubeconfig(api.url)).create(copy_job("train"))) is None
