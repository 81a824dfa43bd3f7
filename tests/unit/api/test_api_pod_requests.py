"""The per-pod request a podSet reserves, computed the way Kubernetes sums a pod."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from quota import api

GI = 2**30 * 1000  # one Gi in milli-units


def container(
    name: str,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    sidecar: bool = False,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


@dataclass(frozen=True)
class Case:
    name: str
    spec: dict[str, Any]
    want: dict[str, int]
    want_total_for_3: dict[str, int] = field(default_factory=dict)


CASES = [
    Case(
        "one container",
        {"containers": [container("a", {"cpu": "500m", "memory": "1Gi"})]},
        {"cpu": 500, "memory": GI},
        {"cpu": 1500, "memory": 3 * GI},
    ),
    Case(
        "app containers add up",
        {"containers": [container("a", {"cpu": "1"}), container("b", {"cpu": "250m"})]},
        {"cpu": 1250},
    ),
    Case(
        "limits stand in for absent requests",
        {"containers": [container("a", limits={"cpu": "2", "nvidia.com/gpu": "1"})]},
        {"cpu": 2000, "nvidia.com/gpu": 1000},
    ),
    Case(
        "limits only fill resources the requests leave out",
        {"containers": [container("a", {"cpu": "1"}, {"cpu": "4", "memory": "2Gi"})]},
        {"cpu": 1000, "memory": 2 * GI},
    ),
    Case(
        "a large init container dominates",
        {
            "initContainers": [container("init", {"cpu": "4", "memory": "1Gi"})],
            "containers": [container("a", {"cpu": "1", "memory": "2Gi"})],
        },
        {"cpu": 4000, "memory": 2 * GI},
    ),
    Case(
        "init containers run one at a time: the largest counts, not the sum",
        {
            "initContainers": [container("i1", {"cpu": "3"}), container("i2", {"cpu": "2"})],
            "containers": [container("a", {"cpu": "1"})],
        },
        {"cpu": 3000},
    ),
    Case(
        "sidecars add to the app containers",
        {
            "initContainers": [container("proxy", {"cpu": "500m"}, sidecar=True)],
            "containers": [container("a", {"cpu": "1"})],
        },
        {"cpu": 1500},
    ),
    Case(
        "an init container after a sidecar runs next to it",
        {
            "initContainers": [
                container("proxy", {"cpu": "1"}, sidecar=True),
                container("migrate", {"cpu": "3"}),
            ],
            "containers": [container("a", {"cpu": "1"})],
        },
        {"cpu": 4000},
    ),
    Case(
        "an init container before a sidecar does not run next to it",
        {
            "initContainers": [
                container("migrate", {"cpu": "3"}),
                container("proxy", {"cpu": "1"}, sidecar=True),
            ],
            "containers": [container("a", {"cpu": "1"})],
        },
        {"cpu": 3000},
    ),
    Case(
        "sidecars started so far add up during init",
        {
            "initContainers": [
                container("s1", {"cpu": "1"}, sidecar=True),
                container("s2", {"cpu": "1"}, sidecar=True),
                container("init", {"cpu": "3"}),
            ],
            "containers": [container("a", {"cpu": "500m"})],
        },
        {"cpu": 5000},
    ),
    Case(
        "overhead is added last",
        {
            "containers": [container("a", {"cpu": "1", "memory": "1Gi"})],
            "overhead": {"cpu": "250m", "memory": "120Mi"},
        },
        {"cpu": 1250, "memory": GI + 120 * 2**20 * 1000},
    ),
    Case(
        "overhead on top of a dominating init container",
        {
            "initContainers": [container("init", {"cpu": "2"})],
            "containers": [container("a", {"cpu": "1"})],
            "overhead": {"cpu": "100m"},
        },
        {"cpu": 2100},
    ),
    Case(
        "pod-level resources replace the container sum",
        {
            "resources": {"requests": {"cpu": "3"}},
            "containers": [container("a", {"cpu": "1", "memory": "1Gi"})],
        },
        {"cpu": 3000, "memory": GI},
    ),
    Case(
        "zero requests are left out",
        {"containers": [container("a", {"cpu": "1", "nvidia.com/gpu": "0"})]},
        {"cpu": 1000},
    ),
    Case("no resources at all", {"containers": [container("a")]}, {}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pod_requests(case: Case) -> None:
    pod_set = api.PodSet.model_validate(
        {"name": "main", "count": 3, "template": {"spec": case.spec}}
    )
    assert pod_set.pod_requests() == case.want
    want_total = case.want_total_for_3 or {k: 3 * v for k, v in case.want.items()}
    assert pod_set.total_requests() == want_total
    assert pod_set.total_requests(count=1) == case.want


def test_pod_requests_returns_a_copy() -> None:
    pod_set = api.PodSet.from_requests("main", 2, {"cpu": "1"})
    pod_set.pod_requests()["cpu"] = 0
    assert pod_set.pod_requests() == {"cpu": 1000}


def test_from_requests_builds_a_one_container_template() -> None:
    toleration = api.Toleration(key="spot", operator="Exists", effect="NoSchedule")
    pod_set = api.PodSet.from_requests(
        "workers",
        4,
        {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
        min_count=2,
        node_selector={"pool": "gpu"},
        tolerations=[toleration],
    )
    assert (pod_set.name, pod_set.count, pod_set.min_count) == ("workers", 4, 2)
    assert pod_set.pod_requests() == {"cpu": 1000, "memory": GI, "nvidia.com/gpu": 1000}
    assert pod_set.node_selector == {"pool": "gpu"}
    assert pod_set.tolerations == (toleration,)
    (only,) = pod_set.template.spec.containers
    assert only.resources.requests == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}
    assert pod_set.to_dict()["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}


def test_pod_template_keeps_fields_it_does_not_type() -> None:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "trainer",
            "containers": [
                {
                    "name": "a",
                    "image": "img",
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    pod_set = api.PodSet.model_validate({"template": template})
    assert pod_set.to_dict()["template"] == template


def test_required_node_affinity_is_read() -> None:
    spec = api.PodSpec.model_validate(
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gpu", "operator": "In", "values": ["a100"]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
    )
    required = spec.required_node_selector()
    assert required is not None
    assert required.matches({"gpu": "a100"}) and not required.matches({"gpu": "t4"})
    assert api.PodSpec().required_node_selector() is None
