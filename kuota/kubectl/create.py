"""``kubectl kuota create clusterqueue|localqueue``: objects from kueuectl's flags.

Quotas are written as kueuectl writes them, one flavor after another::

    --nominal-quota "on-demand:cpu=8,memory=32Gi;spot:cpu=16,memory=64Gi"

Flavors that cover the same resources form one resource group (a ClusterQueue
assigns the resources of a group together, from one flavor); flavors covering
different resources form separate groups. ``--borrowing-limit`` and
``--lending-limit`` use the same syntax and may name any subset of the nominal
cells. The object is checked with the same models ``kuota validate`` uses
before it is sent, so a mistake is reported naming its field, not by the API
server's schema.
"""

from __future__ import annotations

from typing import Any

from quota.api.registry import parse_object

Quotas = dict[str, dict[str, str]]  # flavor -> resource -> quantity text


class FlagError(ValueError):
    """A flag's value cannot be read; the message names the flag (exit status 2)."""


class NoSuchObject(LookupError):
    """An object a flag names does not exist (exit status 1, as any not found)."""


def parse_quotas(flag: str, text: str | None) -> Quotas:
    """``"f1:cpu=1,memory=2Gi;f2:cpu=3"`` as {flavor: {resource: quantity}}."""
    out: Quotas = {}
    if not text:
        return out
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        flavor, sep, cells = part.partition(":")
        flavor = flavor.strip()
        if not sep or not flavor:
            raise FlagError(f"{flag}: {part!r}: expected FLAVOR:RESOURCE=QUANTITY[,...]")
        if flavor in out:
            raise FlagError(f"{flag}: flavor {flavor!r} given twice")
        resources: dict[str, str] = {}
        for cell in cells.split(","):
            resource, eq, quantity = cell.partition("=")
            resource, quantity = resource.strip(), quantity.strip()
            if not eq or not resource or not quantity:
                raise FlagError(f"{flag}: {flavor}: {cell!r}: expected RESOURCE=QUANTITY")
            if resource in resources:
                raise FlagError(f"{flag}: {flavor}: resource {resource!r} given twice")
            resources[resource] = quantity
        out[flavor] = resources
    return out


def cluster_queue(name: str, *, cohort: str | None = None, queueing_strategy: str | None = None,
                  namespace_selector: dict[str, Any] | None = None,
                  reclaim_within_cohort: str | None = None,
                  within_cluster_queue: str | None = None,
                  nominal: Quotas, borrowing: Quotas | None = None,
                  lending: Quotas | None = None) -> dict[str, Any]:
    """A checked ClusterQueue manifest."""
    for flag, limits in (("--borrowing-limit", borrowing or {}),
                         ("--lending-limit", lending or {})):
        for flavor, cells in limits.items():
            for resource in cells:
                if resource not in nominal.get(flavor, {}):
                    raise FlagError(f"{flag}: {flavor}/{resource} has no --nominal-quota")
    groups: dict[frozenset[str], list[tuple[str, dict[str, str]]]] = {}
    for flavor, cells in nominal.items():
        for covered, members in groups.items():
            if covered != frozenset(cells) and covered & frozenset(cells):
                raise FlagError(
                    f"--nominal-quota: flavors {members[0][0]} and {flavor} share "
                    f"{', '.join(sorted(covered & frozenset(cells)))} but not the rest; "
                    "flavors that share a resource must list the same resources")
        groups.setdefault(frozenset(cells), []).append((flavor, cells))

    def cell(flavor: str, resource: str, quantity: str) -> dict[str, Any]:
        entry = {"name": resource, "nominalQuota": quantity}
        for field, limits in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
            if resource in (limits or {}).get(flavor, {}):
                entry[field] = (limits or {})[flavor][resource]
        return entry

    resource_groups = []
    for flavors in groups.values():
        order = list(flavors[0][1])  # every flavor of a group lists them in this order
        resource_groups.append({"coveredResources": order, "flavors": [
            {"name": flavor, "resources": [cell(flavor, r, cells[r]) for r in order]}
            for flavor, cells in flavors]})
    spec: dict[str, Any] = {
        "namespaceSelector": namespace_selector if namespace_selector is not None else {},
        "resourceGroups": resource_groups}
    if cohort:
        spec["cohortName"] = cohort
    if queueing_strategy:
        spec["queueingStrategy"] = queueing_strategy
    preemption = {k: v for k, v in (("reclaimWithinCohort", reclaim_within_cohort),
                                    ("withinClusterQueue", within_cluster_queue)) if v}
    if preemption:
        spec["preemption"] = preemption
    return _checked({"apiVersion": "kuota.dev/v1alpha1", "kind": "ClusterQueue",
                     "metadata": {"name": name}, "spec": spec})


def local_queue(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    """A checked LocalQueue manifest."""
    return _checked({"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
                     "metadata": {"name": name, "namespace": namespace},
                     "spec": {"clusterQueue": cluster_queue}})


def _checked(doc: dict[str, Any]) -> dict[str, Any]:
    parse_object(doc, source="flags")  # raises ObjectError naming the field
    return doc


def selector(flag: str, text: str | None) -> dict[str, Any] | None:
    """``key=value,key2=value2`` as a matchLabels selector; ``""`` matches everything."""
    if text is None:
        return None
    labels: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise FlagError(f"{flag}: {pair!r}: expected KEY=VALUE")
        labels[key.strip()] = value.strip()
    return {"matchLabels": labels} if labels else {}
