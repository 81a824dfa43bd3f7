"""Which kinds the operator queues (Kueue's ``integrations.frameworks``) and in which
namespaces pod-based kinds are queued (``managedJobsNamespaceSelector``): the pure rules
the webhook and the watches follow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kuota.operator.settings import Options, pod_kind
from quota.api.meta import LabelSelector

RS = {"kind": "ReplicaSet", "name": "web-5d4", "controller": True}
STS = {"kind": "StatefulSet", "name": "db", "controller": True}
JOB = {"kind": "Job", "apiVersion": "batch/v1", "name": "train", "controller": True}


def _meta(labels: dict[str, str] | None = None, *owners: dict[str, Any]) -> dict[str, Any]:
    return {"labels": labels or {}, "ownerReferences": list(owners)}


@pytest.mark.parametrize(("meta", "want"), [
    (_meta({"kuota.dev/queue-name": "main"}), "Pod"),
    (_meta({"pod-template-hash": "5d4"}, RS), "Deployment"),
    (_meta({}, RS), "Pod"),  # (a ReplicaSet of its own: no Deployment's hash label)
    (_meta({}, STS), "StatefulSet"),
    (_meta({"leaderworkerset.sigs.k8s.io/name": "lws"}, STS), "LeaderWorkerSet"),
])
def test_the_kind_a_pod_stands_for(meta: dict[str, Any], want: str) -> None:
    assert pod_kind(meta) == want


ML = LabelSelector.model_validate({"matchLabels": {"team": "ml"}})


@dataclass
class Leaves:
    name: str
    options: Options
    meta: dict[str, Any]
    namespace_labels: dict[str, str] | None
    want_left: bool


LEAVES = [
    Leaves("every kind (no file)", Options(), _meta({"kuota.dev/queue-name": "q"}), None,
           False),
    Leaves("pods not queued", Options(frameworks=frozenset({"Job"})),
           _meta({"kuota.dev/queue-name": "q"}), None, True),
    Leaves("a Job's pod is always seen (topology gates)", Options(frameworks=frozenset()),
           _meta({"batch.kubernetes.io/job-name": "train"}, JOB), None, False),
    Leaves("a pod of an object kuota started with a topology", Options(frameworks=frozenset()),
           _meta({"kuota.dev/tas": "true"}), None, False),
    Leaves("Deployments queued, not single pods: a Deployment's pod",
           Options(frameworks=frozenset({"Deployment"})), _meta({"pod-template-hash": "1"}, RS),
           None, False),
    Leaves("Deployments queued, not single pods: a bare pod",
           Options(frameworks=frozenset({"Deployment"})), _meta({}), None, True),
    Leaves("a namespace the selector matches", Options(pod_namespaces=ML), _meta({}),
           {"team": "ml"}, False),
    Leaves("a namespace it does not match", Options(pod_namespaces=ML), _meta({}),
           {"team": "web"}, True),
    Leaves("a namespace not seen yet", Options(pod_namespaces=ML), _meta({}), None, True),
]


@pytest.mark.parametrize("case", LEAVES, ids=lambda c: c.name)
def test_which_new_pods_the_webhook_leaves_alone(case: Leaves) -> None:
    assert case.options.leaves_pod({"metadata": case.meta}, "apps",
                                   case.namespace_labels) is case.want_left


def test_the_namespace_name_label_is_known_before_the_namespace_is_seen() -> None:
    not_system = LabelSelector.model_validate({"matchExpressions": [{
        "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]})
    options = Options(frameworks=frozenset({"Pod"}), pod_namespaces=not_system)
    assert options.queues_pods("Pod", "apps", None)
    assert not options.queues_pods("Pod", "kube-system", None)
    assert not options.queues_pods("Deployment", "apps", None)


@pytest.mark.parametrize(("frameworks", "want"), [
    (None, True), (frozenset({"Job"}), False), (frozenset({"Job", "StatefulSet"}), True)])
def test_pod_groups_are_watched_only_when_a_pod_based_kind_is_queued(
        frameworks: frozenset[str] | None, want: bool) -> None:
    assert Options(frameworks=frameworks).queues_pod_groups is want
