"""Sample manifests for tests: a tiny CRD of our own and kopf's peering CRDs.

``Widget`` (``emu.kuota.dev/v1``, short name ``wdg``, category ``kuota-test``)
is namespaced, has a status subresource, a schema with a default, an enum and
a required field, and printer columns of each type, so one CRD exercises
registration, pruning, validation and ``kubectl get`` tables.
"""

from __future__ import annotations

from typing import Any

GROUP = "emu.kuota.dev"
WIDGET_API = f"{GROUP}/v1"


def widget_crd(*, columns: bool = True) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 0},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    },
                },
                "status": {
                    "type": "object",
                    "properties": {
                        "phase": {"type": "string"},
                        "ready": {"type": "boolean"},
                        "conditions": {"type": "array", "items": {
                            "type": "object",
                            "properties": {"type": {"type": "string"},
                                           "status": {"type": "string"}},
                        }},
                    },
                },
            },
        }},
    }
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Ready", "type": "string",
             "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "shortNames": ["wdg"], "categories": ["kuota-test"]},
            "versions": [version],
        },
    }


def widget(name: str, *, namespace: str = "default", size: int = 1,
           **spec: Any) -> dict[str, Any]:
    return {"apiVersion": WIDGET_API, "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"size": size, **spec}}


def kopf_peering_crds() -> list[dict[str, Any]]:
    """The two CRDs kopf's peering uses (cluster-wide and per-namespace)."""
    def crd(kind: str, plural: str, scope: str) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.kopf.dev"},
            "spec": {
                "group": "kopf.dev",
                "scope": scope,
                "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                "versions": [{
                    "name": "v1", "served": True, "storage": True,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "status": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }},
                }],
            },
        }

    return [crd("ClusterKopfPeering", "clusterkopfpeerings", "Cluster"),
            crd("KopfPeering", "kopfpeerings", "Namespaced")]
