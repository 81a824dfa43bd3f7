"""spec.managedBy of dispatched Jobs: which new Jobs get it, and the refusal of the others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kuota.federation import managed_by
from kuota.federation.managed_by import JOB_CONTROLLER, MANAGED_BY
from kuota.operator import webhooks

Body = dict[str, Any]
API = "kuota.dev/v1alpha1"


def cluster_queue(name: str, checks: list[Body], flavors: tuple[str, ...] = ("a", "b")) -> Body:
    spec: Body = {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": f, "resources": [{"name": "cpu", "nominalQuota": "8"}]} for f in flavors]}]}
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def check(name: str, controller: str) -> Body:
    return {"apiVersion": API, "kind": "AdmissionCheck", "metadata": {"name": name},
            "spec": {"controllerName": controller}}


OBJECTS: dict[tuple[str, str], Body] = {
    ("LocalQueue", "ml/fleet"): {"spec": {"clusterQueue": "fleet"}},
    ("LocalQueue", "ml/local"): {"spec": {"clusterQueue": "local"}},
    ("LocalQueue", "ml/provisioned"): {"spec": {"clusterQueue": "provisioned"}},
    ("LocalQueue", "ml/some-flavors"): {"spec": {"clusterQueue": "some-flavors"}},
    ("LocalQueue", "ml/all-flavors"): {"spec": {"clusterQueue": "all-flavors"}},
    ("LocalQueue", "ml/dangling"): {"spec": {"clusterQueue": "missing"}},
    ("LocalQueue", "ml/broken"): {"spec": {"clusterQueue": "broken"}},
    ("LocalQueue", "ml/unknown-check"): {"spec": {"clusterQueue": "unknown-check"}},
    ("ClusterQueue", "fleet"): cluster_queue("fleet", [{"name": "prov"}, {"name": "mc"}]),
    ("ClusterQueue", "local"): cluster_queue("local", []),
    ("ClusterQueue", "provisioned"): cluster_queue("provisioned", [{"name": "prov"}]),
    ("ClusterQueue", "some-flavors"): cluster_queue("some-flavors",
                                                    [{"name": "mc", "onFlavors": ["a"]}]),
    ("ClusterQueue", "all-flavors"): cluster_queue("all-flavors",
                                                   [{"name": "mc", "onFlavors": ["a", "b"]}]),
    ("ClusterQueue", "broken"): {"apiVersion": API, "kind": "ClusterQueue",
                                 "metadata": {"name": "broken"}, "spec": {"resourceGroups": 3}},
    ("ClusterQueue", "unknown-check"): cluster_queue("unknown-check", [{"name": "nope"}]),
    ("AdmissionCheck", "mc"): check("mc", "kuota.dev/multicluster"),
    ("AdmissionCheck", "prov"): check("prov", "kuota.dev/provisioning"),
}


def lookup(kind: str, key: str) -> Body | None:
    return OBJECTS.get((kind, key))


def job(queue: str | None = "fleet", managed: str | None = None, name: str = "train",
        kind: str | None = None) -> Body:
    labels = {"kuota.dev/queue-name": queue} if queue else {}
    spec: Body = {"template": {}}
    if managed is not None:
        spec["managedBy"] = managed
    body: Body = {"metadata": {"name": name, "namespace": "ml", "labels": labels}, "spec": spec}
    if kind is not None:
        body["kind"] = kind
    return body


JOBSET_CONTROLLER = "jobset.sigs.k8s.io/jobset-controller"


@dataclass(frozen=True)
class Case:
    name: str
    job: Body
    #: What the webhook patches into spec.managedBy (None: no patch).
    want_managed_by: str | None


CASES = [
    Case("queue with a multicluster check", job("fleet"), MANAGED_BY),
    Case("naming the built-in controller: switched, as Kueue does",
         job("fleet", JOB_CONTROLLER), MANAGED_BY),
    Case("naming another controller: left alone", job("fleet", "example.com/ctl"), None),
    Case("already kuota's: nothing to patch", job("fleet", MANAGED_BY), None),
    Case("queue without checks", job("local"), None),
    Case("queue with another check only", job("provisioned"), None),
    Case("multicluster check on some flavors: may run locally", job("some-flavors"), None),
    Case("multicluster check on every flavor", job("all-flavors"), MANAGED_BY),
    Case("LocalQueue not seen", job("nowhere"), None),
    Case("ClusterQueue not seen", job("dangling"), None),
    Case("invalid ClusterQueue", job("broken"), None),
    Case("AdmissionCheck not seen", job("unknown-check"), None),
    Case("no queue: not kuota's", job(None), None),
    Case("a JobSet into a multicluster queue", job("fleet", kind="JobSet"), MANAGED_BY),
    Case("a JobSet naming its own controller: switched",
         job("fleet", JOBSET_CONTROLLER, kind="JobSet"), MANAGED_BY),
    Case("a JobSet naming another controller: left alone",
         job("fleet", "example.com/ctl", kind="JobSet"), None),
    Case("a kind dispatch does not carry", job("fleet", kind="RayJob"), None),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_webhook_sets_managed_by(case: Case) -> None:
    got = webhooks.managed_by_default(case.job, default_queue=False,
                                      queue_exists=lambda namespace, name: False,
                                      lookup=lookup)
    assert got == case.want_managed_by


def test_the_default_queue_counts_when_the_deployment_opts_in() -> None:
    OBJECTS[("LocalQueue", "ml/default")] = {"spec": {"clusterQueue": "fleet"}}
    try:
        got = webhooks.managed_by_default(
            job(None), default_queue=True,
            queue_exists=lambda namespace, name: name == "default", lookup=lookup)
    finally:
        del OBJECTS[("LocalQueue", "ml/default")]
    assert got == MANAGED_BY


@pytest.mark.parametrize(("managed", "want_refused", "want_in_message"), [
    (MANAGED_BY, False, ""),
    (None, True, "the manager's Job controller runs it"),
    (JOB_CONTROLLER, True, "the manager's Job controller runs it"),
    ("example.com/ctl", True, "names another controller (example.com/ctl)"),
])
def test_refusal(managed: str | None, want_refused: bool, want_in_message: str) -> None:
    why = managed_by.refusal(job("fleet", managed))
    assert (why is not None) is want_refused
    if why is not None:
        assert why.startswith("Job ml/train cannot be dispatched: its spec.managedBy is not "
                              "kuota.dev/multicluster")
        assert want_in_message in why and "create it again" in why


def test_a_jobset_is_refused_naming_its_own_controller() -> None:
    why = managed_by.refusal(job("fleet", JOBSET_CONTROLLER, kind="JobSet"))
    assert why is not None and why.startswith("JobSet ml/train cannot be dispatched")
    assert "the manager's JobSet controller runs it" in why
