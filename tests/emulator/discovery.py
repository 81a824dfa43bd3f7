"""Discovery documents: how clients learn which resources a server has.

* ``GET /api`` — ``APIVersions`` (the core group has only ``v1``);
* ``GET /api/v1`` and ``GET /apis/<group>/<version>`` — ``APIResourceList``:
  per resource its plural name, kind, scope, verbs, short names, categories,
  and one more entry per subresource (``pods/status``);
* ``GET /apis`` — ``APIGroupList``, ``GET /apis/<group>`` — ``APIGroup``.

kubectl resolves ``kubectl get cq`` from these (short names, kinds,
categories); kopf finds resources and whether they have a status
subresource. CRD-registered resources appear as soon as the CRD is written.

Newer clients first ask for aggregated discovery
(``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``);
answering plain ``application/json`` makes them fall back to these legacy
documents, which is what the emulator does.
"""

from __future__ import annotations

import re
from typing import Any

from .resources import ALL_VERBS, ResourceType

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kuota-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                        "serverAddress": server_address}],
    }


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order, best first: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > other."""
    match = _VERSION.match(version)
    if match is None:
        return (0, 0, 0, version)
    stability = {"alpha": 1, "beta": 2}.get(match[2] or "", 3)
    return (-stability, -int(match[1]), -int(match[3] or 0), "")


def _versions_by_group(types: list[ResourceType]) -> dict[str, list[str]]:
    """Each group's versions, the preferred one first."""
    groups: dict[str, list[str]] = {}
    for rtype in sorted(types, key=lambda t: (t.group, version_priority(t.version))):
        if rtype.group and rtype.version not in groups.setdefault(rtype.group, []):
            groups[rtype.group].append(rtype.version)
    return groups


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{version}", "version": version} for version in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(types: list[ResourceType]) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(name, versions)
                   for name, versions in _versions_by_group(types).items()],
    }


def api_group(types: list[ResourceType], group: str) -> dict[str, Any] | None:
    versions = _versions_by_group(types).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def api_resource_list(types: list[ResourceType], group: str, version: str,
                      ) -> dict[str, Any] | None:
    served = sorted((t for t in types if t.group == group and t.version == version),
                    key=lambda t: t.plural)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for rtype in served:
        resources.append({
            "name": rtype.plural,
            "singularName": rtype.singular,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(ALL_VERBS),
            **({"shortNames": list(rtype.short_names)} if rtype.short_names else {}),
            **({"categories": list(rtype.categories)} if rtype.categories else {}),
        })
        for subresource in sorted(rtype.subresources):
            resources.append({
                "name": f"{rtype.plural}/{subresource}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": rtype.kind,
                "verbs": ["get", "patch", "update"],
            })
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def root_paths(types: list[ResourceType]) -> dict[str, Any]:
    paths = {"/api", "/api/v1", "/apis", "/version", "/healthz", "/readyz", "/livez"}
    for rtype in types:
        if rtype.group:
            paths |= {f"/apis/{rtype.group}", f"/apis/{rtype.group}/{rtype.version}"}
    return {"paths": sorted(paths)}
