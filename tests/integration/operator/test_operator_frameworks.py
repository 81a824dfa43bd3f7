"""Kueue's ``integrations.frameworks`` and ``managedJobsNamespaceSelector`` through the
whole operator, on the emulator: a kind left out is created as it is (not suspended, no
Workload) while the kinds listed are queued; pods are queued only in the namespaces the
selector matches."""

from __future__ import annotations

import pathlib
from typing import Any

from quota.api.meta import LabelSelector
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h
from tests.integration.operator.test_operator_queued_kinds import (
    RAYCLUSTERS,
    get,
    raycluster,
    setup,
)

GATE = {"name": "kuota.dev/admission"}


def bare_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"kuota.dev/queue-name": "main"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "1"}}}]}}


def test_only_the_listed_frameworks_are_queued(cluster: Emulator,
                                               certs: pathlib.Path) -> None:
    setup(cluster)
    with h.Running(cluster, certs, frameworks=frozenset({"Job"})) as running:
        created = call(cluster.url, "POST", RAYCLUSTERS, raycluster("rc"))
        assert created.status == 201 and not created.data["spec"].get("suspend")
        pod = call(cluster.url, "POST", "/api/v1/namespaces/default/pods", bare_pod("p"))
        assert pod.status == 201 and not pod.data["spec"].get("schedulingGates")
        cluster.create(h.job("train"))
        h.wait(cluster, lambda: h.running(cluster, "train"), "the Job admitted and started")
        running.quiet()
        assert not get(cluster, "rc")["spec"].get("suspend")
        assert [w["metadata"]["labels"]["kuota.dev/owner-kind"]
                for w in cluster.list(h.API, "Workload", "default")] == ["Job"]


def test_pods_are_queued_only_in_the_selected_namespaces(cluster: Emulator,
                                                         certs: pathlib.Path) -> None:
    for name, labels in (("ml", {"team": "ml"}), ("web", {"team": "web"})):
        h.namespace(cluster, name, **labels)
    selector = LabelSelector.model_validate({"matchLabels": {"team": "ml"}})
    with h.Running(cluster, certs, frameworks=frozenset({"Job", "Pod"}),
                   pod_namespaces=selector) as running:
        running.quiet()
        gated = call(cluster.url, "POST", "/api/v1/namespaces/ml/pods", bare_pod("a"))
        left = call(cluster.url, "POST", "/api/v1/namespaces/web/pods", bare_pod("b"))
        assert (gated.status, left.status) == (201, 201)
        assert gated.data["spec"].get("schedulingGates") == [GATE]
        assert not left.data["spec"].get("schedulingGates")
