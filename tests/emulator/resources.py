"""Resource types the emulator serves: the built-in ones and those CRDs register.

A Kubernetes API server knows each resource by ``(group, version, plural)``
and describes it in discovery with a kind, a scope, short names, categories,
verbs and subresources. Objects are stored once per ``(group, plural)``: every
served version of a CRD reads and writes the same objects (the emulator does no
conversion beyond rewriting ``apiVersion``, like a CRD with
``conversion: None``).

Built-in types are a table of facts (kinds, scopes, short names, printer
columns). A CustomResourceDefinition written to the API becomes one
:class:`ResourceType` per served version; deleting it removes them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CRD_GROUP = "apiextensions.k8s.io"


@dataclasses.dataclass(frozen=True)
class PrinterColumn:
    """One column of ``kubectl get`` output, as in a CRD's additionalPrinterColumns."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclasses.dataclass(frozen=True)
class ResourceType:
    """What the server knows about one served ``group/version/plural``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    #: None: the default columns (Name, Age); a tuple: exactly these after Name.
    columns: tuple[PrinterColumn, ...] | None = None
    #: True for custom resources: no strategic merge, PUT needs a resourceVersion.
    custom: bool = False
    #: The openAPIV3Schema of a CRD version (used for pruning, defaults, validation).
    schema: Mapping[str, Any] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Where the objects live: shared by all versions of one group and plural."""
        return (self.group, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _builtin(
    api_version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
    columns: tuple[PrinterColumn, ...] | None = None,
) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=short,
        categories=categories,
        subresources=frozenset({"status"} if status else ()),
        columns=columns,
    )


def _col(name: str, json_path: str, type_: str = "string", priority: int = 0) -> PrinterColumn:
    return PrinterColumn(name=name, type=type_, json_path=json_path, priority=priority)


_AGE = _col("Age", ".metadata.creationTimestamp", "date")

#: The built-in resources tests need, with a few useful printer columns.
BUILTINS: tuple[ResourceType, ...] = (
    _builtin("v1", "namespaces", "Namespace", namespaced=False, short=("ns",), status=True,
             columns=(_col("Status", ".status.phase"), _AGE)),
    _builtin("v1", "pods", "Pod", short=("po",), categories=("all",), status=True,
             columns=(_col("Status", ".status.phase"), _AGE,
                      _col("Node", ".spec.nodeName", priority=1))),
    _builtin("v1", "events", "Event", short=("ev",),
             columns=(_col("Type", ".type"), _col("Reason", ".reason"),
                      _col("Object", ".involvedObject.name"), _col("Message", ".message"))),
    _builtin("v1", "secrets", "Secret",
             columns=(_col("Type", ".type"), _AGE)),
    _builtin("v1", "configmaps", "ConfigMap", short=("cm",)),
    _builtin("v1", "nodes", "Node", namespaced=False, short=("no",), status=True,
             columns=(_col("Status", '.status.conditions[?(@.type=="Ready")].status'), _AGE)),
    _builtin("v1", "services", "Service", short=("svc",), categories=("all",), status=True),
    _builtin("v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _builtin("batch/v1", "jobs", "Job", categories=("all",), status=True,
             columns=(_col("Suspend", ".spec.suspend", "boolean"),
                      _col("Succeeded", ".status.succeeded", "integer"), _AGE)),
    _builtin("apps/v1", "deployments", "Deployment", short=("deploy",), categories=("all",),
             status=True),
    _builtin("coordination.k8s.io/v1", "leases", "Lease",
             columns=(_col("Holder", ".spec.holderIdentity"), _AGE)),
    _builtin("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", namespaced=False,
             short=("pc",), columns=(_col("Value", ".value", "integer"),
                                     _col("Global-Default", ".globalDefault", "boolean"), _AGE)),
    _builtin("rbac.authorization.k8s.io/v1", "roles", "Role"),
    _builtin("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _builtin("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", namespaced=False),
    _builtin("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding",
             namespaced=False),
    _builtin("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations",
             "MutatingWebhookConfiguration", namespaced=False),
    _builtin("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
             "ValidatingWebhookConfiguration", namespaced=False),
    _builtin(f"{CRD_GROUP}/v1", "customresourcedefinitions", "CustomResourceDefinition",
             namespaced=False, short=("crd", "crds"), categories=("api-extensions",), status=True,
             columns=(_col("Created At", ".metadata.creationTimestamp"),)),
)


class CRDError(ValueError):
    """A CustomResourceDefinition the emulator cannot serve; the message names the field."""


def types_from_crd(crd: Mapping[str, Any]) -> list[ResourceType]:
    """One :class:`ResourceType` per served version of a CRD object."""
    name = crd.get("metadata", {}).get("name", "<unnamed>")
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group: str = spec.get("group") or ""
    plural: str = names.get("plural") or ""
    kind: str = names.get("kind") or ""
    scope = spec.get("scope")
    for field, value in (("spec.group", group), ("spec.names.plural", plural),
                         ("spec.names.kind", kind), ("spec.scope", scope)):
        if not value:
            raise CRDError(f"CustomResourceDefinition {name!r}: {field} is required")
    if scope not in ("Namespaced", "Cluster"):
        raise CRDError(f"CustomResourceDefinition {name!r}: spec.scope must be "
                       f"Namespaced or Cluster, not {scope!r}")
    if name != f"{plural}.{group}":
        raise CRDError(f"CustomResourceDefinition {name!r}: metadata.name must be "
                       f"'{plural}.{group}' (spec.names.plural + '.' + spec.group)")
    versions = spec.get("versions") or []
    if not versions:
        raise CRDError(f"CustomResourceDefinition {name!r}: spec.versions must not be empty")
    result = []
    for index, version in enumerate(versions):
        if not version.get("name"):
            raise CRDError(f"CustomResourceDefinition {name!r}: spec.versions[{index}].name "
                           "is required")
        if not version.get("served", True):
            continue
        columns = version.get("additionalPrinterColumns")
        result.append(ResourceType(
            group=group,
            version=version["name"],
            plural=plural,
            kind=kind,
            namespaced=scope == "Namespaced",
            singular=names.get("singular") or kind.lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            # only the status subresource is emulated (no scale)
            subresources=frozenset(version.get("subresources") or {}) & {"status"},
            columns=None if columns is None else tuple(
                PrinterColumn(
                    name=column["name"],
                    type=column.get("type", "string"),
                    json_path=column["jsonPath"],
                    format=column.get("format", ""),
                    description=column.get("description", ""),
                    priority=column.get("priority", 0),
                )
                for column in columns
            ),
            custom=True,
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
        ))
    return result


class Registry:
    """The set of served resource types; thread-safe, changed by CRD writes."""

    def __init__(self, types: Iterable[ResourceType] = BUILTINS) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_crd: dict[str, list[ResourceType]] = {}
        for rtype in types:
            self._types[(rtype.group, rtype.version, rtype.plural)] = rtype

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def find(self, group: str, plural_or_kind: str) -> ResourceType | None:
        """The first served version of a group's resource, by plural or kind."""
        with self._lock:
            for rtype in self._types.values():
                if rtype.group == group and plural_or_kind in (rtype.plural, rtype.kind):
                    return rtype
        return None

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def versions_of(self, key: tuple[str, str]) -> list[ResourceType]:
        with self._lock:
            return [rtype for rtype in self._types.values() if rtype.key == key]

    def register_crd(self, crd: Mapping[str, Any]) -> list[ResourceType]:
        """Serve (or re-serve, after an update) every served version of a CRD."""
        new_types = types_from_crd(crd)
        name = crd["metadata"]["name"]
        with self._lock:
            for old in self._by_crd.pop(name, []):
                self._types.pop((old.group, old.version, old.plural), None)
            for rtype in new_types:
                clash = self._types.get((rtype.group, rtype.version, rtype.plural))
                if clash is not None and not clash.custom:
                    raise CRDError(f"CustomResourceDefinition {name!r}: "
                                   f"{rtype.api_version}/{rtype.plural} is a built-in resource")
            for rtype in new_types:
                self._types[(rtype.group, rtype.version, rtype.plural)] = rtype
            self._by_crd[name] = new_types
        return new_types

    def unregister_crd(self, name: str) -> list[ResourceType]:
        with self._lock:
            gone = self._by_crd.pop(name, [])
            for rtype in gone:
                self._types.pop((rtype.group, rtype.version, rtype.plural), None)
        return gone
