"""The shipped webhook configuration sends the API server every pod the operator must gate.

kopf's generated configuration (used by the emulator tier) routes every pod;
the shipped ``manifests/operator/webhook.yaml`` narrows pods down with
objectSelectors, so a pod it does not select is created ungated, whatever
:func:`kuota.operator.webhooks.pod_gates` would have said. Each case is a
pod the operator gates (or not) and whether the shipped file routes it.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from kuota.operator import webhooks
from tests.emulator.selectors import label_selector

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _pod_hooks() -> list[dict[str, Any]]:
    docs = yaml.safe_load_all((ROOT / "manifests" / "operator" / "webhook.yaml").read_text())
    config = next(d for d in docs if d and d["kind"] == "MutatingWebhookConfiguration")
    return [h for h in config["webhooks"]
            if any("pods" in r["resources"] for r in h["rules"])]


def _routed(labels: dict[str, str]) -> bool:
    return any(label_selector(h.get("objectSelector"))(labels) for h in _pod_hooks())


CASES = [
    {"id": "pod group", "want_gated": True,
     "labels": {"kuota.dev/pod-group-name": "g", "kuota.dev/queue-name": "q"},
     "annotations": {"kuota.dev/pod-group-total-count": "2"}},
    {"id": "Kueue-spelled pod group", "want_gated": True,
     "labels": {"kueue.x-k8s.io/pod-group-name": "g", "kueue.x-k8s.io/queue-name": "q"},
     "annotations": {"kueue.x-k8s.io/pod-group-total-count": "2"}},
    {"id": "pod of a Job started on a topology domain", "want_gated": True,
     "labels": {"kuota.dev/tas": "true", "batch.kubernetes.io/job-name": "train"},
     "annotations": {"kuota.dev/podset-required-topology": "rack"}},
    {"id": "plain pod", "want_gated": False, "labels": {"app": "web"}, "annotations": {}},
]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_every_pod_the_operator_gates_is_routed_to_it(case: dict[str, Any]) -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": case["labels"],
                        "annotations": case["annotations"]},
           "spec": {"containers": [{"name": "c"}]}}
    gated = webhooks.pod_gates(pod) is not None
    assert gated is case["want_gated"]
    if gated:
        assert _routed(case["labels"]), f"webhook.yaml does not send {case['id']} pods"
