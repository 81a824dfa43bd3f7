"""What an observation of a Kubernetes member counts, from its objects one by one (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kuota.federation import observation
from kuota.federation.observation import PodUse
from placement.model import Node
from placement.objects import ObjectError

Body = dict[str, Any]
OURS = {"kuota.dev/origin": "mgr"}


def pod(node: str | None = "n1", cpu: str = "2", *, labels: dict[str, str] | None = None,
        owner: str | None = None, phase: str = "Running") -> Body:
    meta: Body = {"name": "p", "namespace": "ml", "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": owner,
                                    "uid": "u", "controller": True}]
    spec: Body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


@dataclass(frozen=True)
class PodCase:
    name: str
    pod: Body
    want: PodUse | None


POD_CASES = [
    PodCase("someone else's running pod", pod(), PodUse("n1", {"cpu": 2000})),
    PodCase("pending, bound", pod(phase="Pending"), PodUse("n1", {"cpu": 2000})),
    PodCase("not bound yet", pod(node=None), None),
    PodCase("succeeded", pod(phase="Succeeded"), None),
    PodCase("failed", pod(phase="Failed"), None),
    PodCase("ours, by owner", pod(labels=OURS, owner="train"),
            PodUse("n1", {"cpu": 2000}, "Job:ml/train")),
    PodCase("ours, by the job-name label", pod(labels={**OURS, "job-name": "train"}),
            PodUse("n1", {"cpu": 2000}, "Job:ml/train")),
    PodCase("ours, a JobSet's (its child Job's pod)",
            pod(labels={**OURS, "jobset.sigs.k8s.io/jobset-name": "train"}, owner="train-w-0"),
            PodUse("n1", {"cpu": 2000}, "JobSet:ml/train")),
    PodCase("ours, Job unknown", pod(labels=OURS), None),
    PodCase("another manager's copy counts as someone else's",
            pod(labels={"kuota.dev/origin": "other"}, owner="train"),
            PodUse("n1", {"cpu": 2000})),
]


@pytest.mark.parametrize("case", POD_CASES, ids=lambda c: c.name)
def test_pod_use(case: PodCase) -> None:
    assert observation.pod_use(case.pod, "mgr") == case.want


def test_a_pod_with_a_bad_quantity_is_an_error_naming_it() -> None:
    with pytest.raises(ObjectError, match="pod ml/p"):
        observation.pod_use(pod(cpu="lots"), "mgr")


def test_a_node_with_missing_parts_is_read() -> None:
    node = observation.node_of({"metadata": {"name": "n1"},
                                "status": {"allocatable": {"cpu": "8"}}})
    assert (node.name, dict(node.allocatable).get("cpu"), dict(node.labels)) == \
        ("n1", 8000, {})


def copy(name: str, kind: str = "Job") -> Body:
    return {"kind": kind, "metadata": {
        "name": name, "namespace": "ml",
        "annotations": {"kuota.dev/origin-workload": f"ml/wl-{kind}-{name}"}}}


def test_an_observation_sums_others_per_node_and_ours_per_copy() -> None:
    nodes = {"n2": Node("n2", {"cpu": 8000}), "n1": Node("n1", {"cpu": 8000})}
    pods = [PodUse("n1", {"cpu": 1000}), PodUse("n1", {"cpu": 500}),
            PodUse("n2", {"cpu": 2000}, "Job:ml/train"),
            PodUse("n1", {"cpu": 1000}, "Job:ml/train"),
            PodUse("n1", {"cpu": 3000}, "JobSet:ml/train"),  # a JobSet of the same name
            PodUse("gone", {"cpu": 9000})]  # a node the member no longer has
    seen = observation.observation(
        nodes, pods, [copy("train"), copy("idle"), copy("train", "JobSet")], ["a problem"])
    assert [n.name for n in seen.nodes] == ["n1", "n2"]
    assert [dict(n.requested).get("cpu", 0) for n in seen.nodes] == [1500, 0]
    usage = {(c.kind, c.name): {n: a["cpu"] for n, a in c.usage.items()} for c in seen.copies}
    assert usage == {("Job", "train"): {"n2": 2000, "n1": 1000}, ("Job", "idle"): {},
                     ("JobSet", "train"): {"n1": 3000}}
    assert [c.workload for c in seen.copies] == [
        "ml/wl-Job-train", "ml/wl-Job-idle", "ml/wl-JobSet-train"]
    assert seen.problems == ("a problem",)
