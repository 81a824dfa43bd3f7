"""A Job's priority on a real cluster, as Kueue resolves it: its pods' Kubernetes
PriorityClass when no WorkloadPriorityClass is named (read under the operator's shipped
RBAC), and no Workload for a Job naming a WorkloadPriorityClass that does not exist yet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess


@pytest.fixture
def pod_class(control_plane: ControlPlane, kube: Kube, namespace: str) -> Iterator[str]:
    name = f"{namespace}-pc"
    kube.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": 50})
    yield name
    control_plane.kubectl("delete", "priorityclass", name, "--wait=false", check=False)


def test_the_pods_priority_class_and_a_missing_workload_priority_class(
        kube: Kube, namespace: str, operator: OperatorProcess, pod_class: str) -> None:
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": "x"}), b.cluster_queue(cq, quotas={rf: {"cpu": 4}}),
               b.local_queue("main", cq, namespace))
    with_pod_class = b.job("pods-class", namespace)
    with_pod_class["spec"]["template"]["spec"]["priorityClassName"] = pod_class
    kube.create(with_pod_class)
    wl = kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace),
                                             "pods-class"), what="the Workload")
    assert wl["spec"]["priority"] == 50
    assert wl["spec"]["priorityClassRef"] == {"group": "scheduling.k8s.io",
                                              "kind": "PriorityClass", "name": pod_class}

    wpc = f"{namespace}-later"
    kube.create(b.job("waits", namespace, priority_class=wpc))
    kube.wait_for(lambda: [e for e in kube.list("v1", "Event", namespace)
                           if e["reason"] == "PriorityClassNotFound"
                           and e["involvedObject"]["name"] == "waits"] or None,
                  what="the PriorityClassNotFound Event")
    assert b.workload_of(kube.list(b.API, "Workload", namespace), "waits") is None
    kube.apply({"apiVersion": b.API, "kind": "WorkloadPriorityClass",
                "metadata": {"name": wpc}, "value": 7})
    wl = kube.wait_for(lambda: b.workload_of(kube.list(b.API, "Workload", namespace),
                                             "waits"), what="the Workload once the class exists")
    assert wl["spec"]["priority"] == 7
