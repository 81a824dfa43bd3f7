"""Sample manifests for tests: a tiny CRD of our own, kopf's peering CRDs, Job statuses.

``Widget`` (``emu.kuota.dev/v1``, short name ``wdg``, category ``kuota-test``)
is namespaced, has a status subresource, a schema with a default, an enum and
a required field, and printer columns of each type, so one CRD exercises
registration, pruning, validation and ``kubectl get`` tables.

:func:`finished_job_status` is the status a 1.31+ Job controller writes when a
Job ends — what a test that plays the Job controller must write, since the
emulator refuses a status the real server would (see :mod:`.jobs`).
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


def finished_job_status(*, failed: bool = False, succeeded: int = 1, failures: int = 0,
                        started: str = "2025-01-01T00:00:00Z",
                        ended: str = "2025-01-01T00:01:00Z", reason: str = "",
                        message: str = "") -> dict[str, Any]:
    """A Job's final status as the Job controller writes it: the interim condition
    (``SuccessCriteriaMet`` / ``FailureTarget``) with the terminal one, ``startTime``,
    ``completionTime`` only when complete, no active or ready pods."""
    if failed:
        reason = reason or "BackoffLimitExceeded"
        message = message or "Job has reached the specified backoff limit"
        kinds = ("FailureTarget", "Failed")
        status: dict[str, Any] = {"failed": max(failures, 1), "succeeded": 0}
    else:
        reason = reason or "CompletionsReached"
        message = message or "Reached expected number of succeeded pods"
        kinds = ("SuccessCriteriaMet", "Complete")
        status = {"succeeded": succeeded, "failed": failures, "completionTime": ended}
    status.update(startTime=started, active=0, ready=0, terminating=0,
                  uncountedTerminatedPods={},
                  conditions=[{"type": kind, "status": "True", "reason": reason,
                               "message": message, "lastProbeTime": ended,
                               "lastTransitionTime": ended} for kind in kinds])
    return status
