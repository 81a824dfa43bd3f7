"""Builders for API test documents: a valid manifest per kind, and path edits on copies.

    doc = edit(valid("ClusterQueue"), {"spec.resourceGroups[0].flavors[1].name": "a100"})

Tests start from a document known to be valid and change one thing, so each
failure case isolates one rule.
"""

from __future__ import annotations

import copy
import re
from typing import Any

DELETE = object()

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

_VALID: dict[str, dict[str, Any]] = {
    "ResourceFlavor": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100"},
        "spec": {
            "nodeLabels": {"cloud.example.com/gpu": "a100", "pool": "gpu"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "topologyName": "default",
        },
    },
    "ClusterQueue": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {
            "cohortName": "research",
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "on-demand",
                            "resources": [
                                {"name": "cpu", "nominalQuota": 9, "borrowingLimit": "6"},
                                {"name": "memory", "nominalQuota": "36Gi", "lendingLimit": "12Gi"},
                            ],
                        },
                        {
                            "name": "spot",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "18"},
                                {"name": "memory", "nominalQuota": "72Gi"},
                            ],
                        },
                    ],
                },
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}],
                        }
                    ],
                },
            ],
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": "multicluster", "onFlavors": ["a100"]}]
            },
        },
    },
    "Cohort": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "Cohort",
        "metadata": {"name": "research"},
        "spec": {
            "parentName": "company",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": "on-demand",
                            "resources": [
                                {
                                    "name": "cpu",
                                    "nominalQuota": "10",
                                    "lendingLimit": "20",
                                    "borrowingLimit": "5",
                                }
                            ],
                        }
                    ],
                }
            ],
            "fairSharing": {"weight": "2"},
        },
    },
    "LocalQueue": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": "team-a"},
        "spec": {"clusterQueue": "team-a"},
    },
    "WorkloadPriorityClass": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "description": "production training",
    },
    "Topology": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"nodeLabel": "cloud.example.com/block"},
                {"nodeLabel": "cloud.example.com/rack"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    },
    "AdmissionCheck": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "AdmissionCheck",
        "metadata": {"name": "multicluster"},
        "spec": {
            "controllerName": "kuota.dev/multicluster",
            "parameters": {
                "apiGroup": "kuota.dev",
                "kind": "MultiClusterConfig",
                "name": "default",
            },
        },
    },
    "Workload": {
        "apiVersion": "kuota.dev/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "train-1", "namespace": "team-a"},
        "spec": {
            "queueName": "main",
            "priority": 100,
            "podSets": [
                {
                    "name": "driver",
                    "count": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ]
                        }
                    },
                },
                {
                    "name": "workers",
                    "count": 4,
                    "minCount": 2,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "trainer",
                                    "resources": {
                                        "requests": {"cpu": "2", "memory": "4Gi"},
                                        "limits": {"nvidia.com/gpu": "1"},
                                    },
                                }
                            ],
                        }
                    },
                },
            ],
        },
        "status": {
            "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}],
            "admission": {
                "clusterQueue": "team-a",
                "podSetAssignments": [
                    {
                        "name": "driver",
                        "flavors": {"cpu": "on-demand"},
                        "resourceUsage": {"cpu": "1"},
                        "count": 1,
                    },
                    {
                        "name": "workers",
                        "flavors": {
                            "cpu": "on-demand",
                            "memory": "on-demand",
                            "nvidia.com/gpu": "a100",
                        },
                        "resourceUsage": {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"},
                        "count": 4,
                    },
                ],
            },
        },
    },
}


def valid(kind: str) -> dict[str, Any]:
    """A fresh copy of a valid manifest of ``kind``."""
    return copy.deepcopy(_VALID[kind])


def kinds() -> list[str]:
    return sorted(_VALID)


def edit(doc: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``doc`` with each ``path: value`` applied (``DELETE`` removes the key)."""
    out = copy.deepcopy(doc)
    for path, value in changes.items():
        keys: list[str | int] = [
            name if name else int(index) for name, index in _TOKEN.findall(path)
        ]
        node: Any = out
        for key in keys[:-1]:
            if isinstance(key, str) and key not in node:
                node[key] = {}
            node = node[key]
        last = keys[-1]
        if value is DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return out
