"""A Job's priority as Kueue resolves it: its WorkloadPriorityClass label, else its pods'
Kubernetes PriorityClass (``priorityClassName``), else 0 — and a Job naming a class that
does not exist gets no Workload until the class exists."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h

JOBS = "/apis/batch/v1/namespaces/default/jobs"
Body = dict[str, Any]


def pod_priority_class(name: str, value: int) -> Body:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}


def job(name: str, *, label: str | None = None, pod_class: str | None = None) -> Body:
    body = h.job(name, priority_class=label)
    if pod_class is not None:
        body["spec"]["template"]["spec"]["priorityClassName"] = pod_class
    return body


def setup(cluster: Emulator, *objects: Body) -> None:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 4}}),
                  h.local_queue("main", "team"), *objects)


@dataclass(frozen=True)
class Case:
    name: str
    label: str | None
    pod_class: str | None
    want_priority: int
    want_ref: Body | None
    classes: tuple[Body, ...] = field(default=(h.priority_class("wpc-high", 100),
                                             pod_priority_class("pod-high", 50)))


CASES = [
    Case("the WorkloadPriorityClass label wins over the pods' class", "wpc-high", "pod-high",
         100, {"group": "kuota.dev", "kind": "WorkloadPriorityClass", "name": "wpc-high"}),
    Case("the pods' PriorityClass without a label", None, "pod-high", 50,
         {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "pod-high"}),
    Case("neither: priority 0 and no class", None, None, 0, None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_workload_gets_its_priority_and_class(case: Case, cluster: Emulator,
                                                  certs: pathlib.Path) -> None:
    setup(cluster, *case.classes)
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, job("j", label=case.label, pod_class=case.pod_class))
        wl = h.wait(cluster, lambda: h.workload_of(cluster, "j"), "the Workload")
        assert wl["spec"]["priority"] == case.want_priority
        assert wl["spec"].get("priorityClassRef") == case.want_ref


@pytest.mark.parametrize(("label", "pod_class", "create", "want_ref_kind"), [
    ("later", None, h.priority_class("later", 7), "WorkloadPriorityClass"),
    (None, "later", pod_priority_class("later", 7), "PriorityClass"),
])
def test_a_job_naming_a_missing_class_waits_for_it(
        label: str | None, pod_class: str | None, create: Body, want_ref_kind: str,
        cluster: Emulator, certs: pathlib.Path) -> None:
    setup(cluster)
    with h.Running(cluster, certs):
        call(cluster.url, "POST", JOBS, job("j", label=label, pod_class=pod_class))
        warnings = h.wait(cluster, lambda: [
            e for e in cluster.list("v1", "Event", "default")
            if e["reason"] == "PriorityClassNotFound" and e["involvedObject"]["name"] == "j"],
            "the PriorityClassNotFound Event on the Job")
        assert warnings[0]["type"] == "Warning" and "later not found" in warnings[0]["message"]
        h.settle()
        assert h.workload_of(cluster, "j") is None
        assert h.get_job(cluster, "j")["spec"]["suspend"] is True
        cluster.apply(create)
        wl = h.wait(cluster, lambda: h.workload_of(cluster, "j"), "the Workload, once the "
                    "class exists", timeout=20)
        assert (wl["spec"]["priority"], wl["spec"]["priorityClassRef"]["kind"]) == \
            (7, want_ref_kind)
        h.wait(cluster, lambda: h.running(cluster, "j"), "the Job to start")
