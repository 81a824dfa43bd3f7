"""A namespace's editor cannot run outside quota (issue 42, finding 7).

Every attempt is made as a ServiceAccount bound in its namespace to the
built-in ``edit`` ClusterRole (with what the shipped RBAC aggregates into
it), on a real control plane, against a pool whose quota is 1 CPU:

* unsuspending a queued Job kuota has not admitted, taking its queue label
  away (then it would be anyone's to unsuspend), moving a running Job to
  another queue, scaling a running Job beyond its admission, and taking
  kuota's scheduling gate off a gated pod are refused by kuota's webhook
  (403, naming the field) — and no pod of theirs runs;
* creating a Workload, or writing a Workload's status, is refused by RBAC;
  the editor may read Workloads and LocalQueues;
* what stays open does what it should: a suspended Job edited to ask for
  less gets a new Workload for what it asks now, which is admitted; and a
  running Job whose Workload is deleted (by an admin: the editor may not)
  is suspended until its new Workload is admitted.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import OperatorProcess

Body = dict[str, Any]
GATE = "kuota.dev/admission"


@pytest.fixture
def editor(control_plane: ControlPlane, kube: Kube, namespace: str,
           tmp_path: pathlib.Path) -> Kube:
    """A client acting as ServiceAccount ``editor``, bound to ``edit`` in ``namespace``."""
    kube.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "editor", "namespace": namespace}},
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "editor", "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "edit"},
                "subjects": [{"kind": "ServiceAccount", "name": "editor",
                              "namespace": namespace}]})
    config = control_plane.service_account_kubeconfig(namespace, "editor",
                                                      tmp_path / "editor.kubeconfig")
    return Kube(config, describe=control_plane.logs)


def refused(attempt: Callable[[], object]) -> tuple[int, str]:
    """(status, message) of an attempt the API server refuses; fails if it went through."""
    try:
        attempt()
    except DynamicApiError as exc:
        return exc.status, str(exc.summary())
    raise AssertionError("the attempt went through")


def pods_running(kube: Kube, namespace: str, selector: str) -> list[Body]:
    return [p for p in kube.list("v1", "Pod", namespace, label_selector=selector)
            if (p.get("status") or {}).get("phase") == "Running"]


@dataclass(frozen=True)
class Attempt:
    name: str
    #: The Job the attempt is made on: "waiting" (queued, never admitted: it asks for more
    #: than the quota) or "running" (admitted and running).
    job: str
    patch: Body
    want_status: int
    want_in_message: str


ATTEMPTS = [
    Attempt("unsuspend a Job kuota has not admitted", "waiting",
            {"spec": {"suspend": False}}, 403, "cannot be unsuspended by hand"),
    Attempt("take its queue label away", "waiting",
            {"metadata": {"labels": {"kuota.dev/queue-name": None}}}, 403,
            "metadata.labels[kuota.dev/queue-name] cannot be removed"),
    Attempt("move a running Job to another queue", "running",
            {"metadata": {"labels": {"kuota.dev/queue-name": "other"}}}, 403,
            "can be changed only while the Job is suspended"),
    Attempt("scale a running Job beyond its admission", "running",
            {"spec": {"parallelism": 3}}, 403, "cannot change while it runs"),
]


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=lambda a: a.name)
def test_an_editor_cannot_run_a_job_outside_quota(
        control_plane: ControlPlane, kube: Kube, namespace: str, editor: Kube,
        operator: OperatorProcess, attempt: Attempt) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 1})
    cpu, run_for = ("4", "3s") if attempt.job == "waiting" else ("500m", "1h")
    editor.create(b.job("j", namespace, cpu=cpu, run_for=run_for))
    if attempt.job == "waiting":
        kube.wait_for(lambda: b.owned_workload(kube, namespace, "Job", "j"),
                      what="its Workload")
    else:
        kube.wait_for(lambda: pods_running(kube, namespace, "job-name=j"),
                      what="the Job admitted and running", timeout=60)

    status, message = refused(
        lambda: editor.patch("batch/v1", "Job", "j", attempt.patch, namespace))
    assert status == attempt.want_status, message
    assert attempt.want_in_message in message, message
    job = kube.get("batch/v1", "Job", "j", namespace)
    assert job["spec"].get("suspend") is (attempt.job == "waiting")
    if attempt.job == "waiting":
        assert kube.list("v1", "Pod", namespace) == []
    else:
        assert job["spec"]["parallelism"] == 1
        assert len(kube.list("v1", "Pod", namespace, label_selector="job-name=j")) == 1


def test_an_editor_cannot_ungate_a_pod(
        control_plane: ControlPlane, kube: Kube, namespace: str, editor: Kube,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 1})
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "big", "namespace": namespace,
                        "labels": {"kuota.dev/queue-name": "main"},
                        "annotations": {"kuota.dev/test-run-for": "3s"}},
           "spec": {"restartPolicy": "Never", "containers": [{
               "name": "main", "image": "registry.example/fake:1",
               "resources": {"requests": {"cpu": "4"}}}]}}
    created = editor.create(pod)
    assert GATE in [g["name"] for g in created["spec"]["schedulingGates"]]

    status, message = refused(lambda: editor.patch(
        "v1", "Pod", "big", {"spec": {"schedulingGates": []}}, namespace))
    assert status == 403 and f"spec.schedulingGates[{GATE}]" in message, message
    status, message = refused(lambda: editor.patch(
        "v1", "Pod", "big", {"metadata": {"labels": {"kuota.dev/pod-group-name": "theirs"}}},
        namespace))
    assert status == 403 and "kuota.dev/pod-group-name" in message, message
    assert GATE in [g["name"] for g in
                    kube.get("v1", "Pod", "big", namespace)["spec"]["schedulingGates"]]


def test_workloads_are_read_only_to_an_editor(
        control_plane: ControlPlane, kube: Kube, namespace: str, editor: Kube,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 1})
    editor.create(b.job("j", namespace, cpu="4"))
    workload = kube.wait_for(lambda: b.owned_workload(kube, namespace, "Job", "j"),
                             what="its Workload")
    name = workload["metadata"]["name"]
    # Read: the shipped role aggregated into edit.
    assert [w["metadata"]["name"] for w in editor.list(b.API, "Workload", namespace)] == [name]
    assert editor.list(b.API, "LocalQueue", namespace)
    forged = {**workload, "metadata": {"name": "forged", "namespace": namespace}}
    forged.pop("status", None)
    for attempt in (lambda: editor.create(forged),
                    lambda: editor.patch(b.API, "Workload", name, {"status": {"admission": {
                        "clusterQueue": f"{namespace}-cq", "podSetAssignments": []}}},
                                         namespace, subresource="status"),
                    lambda: editor.delete(b.API, "Workload", name, namespace)):
        status, message = refused(attempt)
        assert status == 403, message


def test_what_stays_open_keeps_quota(
        control_plane: ControlPlane, kube: Kube, namespace: str, editor: Kube,
        operator: OperatorProcess) -> None:
    b.pool_queue(control_plane, kube, namespace, {"cpu": 1})
    # A waiting Job edited to ask for less: a new Workload for what it asks now.
    editor.create(b.job("edited", namespace, cpu="500m", parallelism=4, run_for="1h"))
    first = kube.wait_for(lambda: b.owned_workload(kube, namespace, "Job", "edited"),
                          what="its Workload")
    editor.patch("batch/v1", "Job", "edited", {"spec": {"parallelism": 2}}, namespace)
    again = kube.wait_for(
        lambda: (w := b.owned_workload(kube, namespace, "Job", "edited"))
        and w["metadata"]["uid"] != first["metadata"]["uid"] and w,
        what="a new Workload for what it asks now")
    assert [ps["count"] for ps in again["spec"]["podSets"]] == [2]
    kube.wait_for(lambda: len(pods_running(kube, namespace, "job-name=edited")) == 2,
                  what="the edited Job admitted and running", timeout=60)

    # A running Job whose Workload is deleted stops until its new Workload is admitted.
    admitted = b.owned_workload(kube, namespace, "Job", "edited")
    assert admitted is not None
    kube.delete(b.API, "Workload", admitted["metadata"]["name"], namespace)
    kube.wait_for(lambda: (w := b.owned_workload(kube, namespace, "Job", "edited"))
                  and w["metadata"]["uid"] != admitted["metadata"]["uid"],
                  what="a new Workload")
    kube.wait_for(lambda: len(pods_running(kube, namespace, "job-name=edited")) == 2
                  and b.is_true(b.owned_workload(kube, namespace, "Job", "edited"),
                                "Admitted"),
                  what="the Job running again under its new, admitted Workload", timeout=60)
    events = b.event_counts(kube, namespace, "Suspended", "Job")
    assert events.get("edited", 0) >= 1, events
