"""Quota declarations shared by ClusterQueues and Cohorts: resource groups and fair sharing.

A *resource group* names resources that are always assigned together
(``coveredResources``, e.g. cpu and memory) and lists, in order of
preference, the flavors that provide them. Every flavor of a group gives a
quota for every covered resource, in the same order, so that flavor
assignment can pick one flavor for the whole group. Quota per
(flavor, resource) is ``nominalQuota`` — guaranteed to the owner —,
``borrowingLimit`` — how much more it may borrow from its cohort (absent: no
cap) — and ``lendingLimit`` — how much of its nominal quota it lends (absent:
all of it).

:func:`resource_groups_rules` holds Kueue's webhook rules for these lists;
ClusterQueue and Cohort call it with their own notion of "has a parent".
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from quota.api.base import ApiModel, StatusModel
from quota.api.names import QualifiedName, SubdomainName
from quota.api.quantity import Quantity, amount

MAX_RESOURCE_GROUPS: Final = 16
MAX_TOTAL_FLAVORS: Final = 256
MAX_TOTAL_RESOURCES: Final = 256
MAX_FLAVOR_RESOURCES_PER_GROUP: Final = 512


class ResourceQuota(ApiModel):
    """Quota of one resource in one flavor."""

    name: QualifiedName = Field(description="Resource name, e.g. cpu, memory, nvidia.com/gpu.")
    nominal_quota: Quantity = Field(
        description="Amount guaranteed to this queue (or cohort) at any time. Within a cohort, "
        "the members' nominal quotas add up to the pool they share."
    )
    borrowing_limit: Quantity | None = Field(
        default=None,
        description="Most this queue may use beyond its nominal quota by borrowing idle quota "
        "from its cohort. Absent: no limit. Only allowed with a cohort (or parent).",
    )
    lending_limit: Quantity | None = Field(
        default=None,
        description="Most of its unused nominal quota this queue lends to its cohort; the rest "
        "stays reserved for it. Absent: all of it can be lent. Only allowed with a "
        "cohort (or parent).",
    )


class FlavorQuotas(ApiModel):
    """Quotas one flavor provides for the resources of a group."""

    name: SubdomainName = Field(
        description="Name of a ResourceFlavor. A ClusterQueue naming a missing flavor is inactive."
    )
    resources: tuple[ResourceQuota, ...] = Field(
        min_length=1,
        max_length=64,
        description="One quota per covered resource, in the same order as coveredResources.",
    )


class ResourceGroup(ApiModel):
    """Resources assigned together and the flavors, in order of preference, that provide them."""

    covered_resources: tuple[QualifiedName, ...] = Field(
        min_length=1,
        max_length=64,
        description="Resources covered by this group, e.g. [cpu, memory]. A resource may belong "
        "to only one group.",
    )
    flavors: tuple[FlavorQuotas, ...] = Field(
        min_length=1,
        max_length=64,
        description="Flavors providing these resources, tried in this order during admission. "
        "A flavor may appear in only one group.",
    )


class FairSharing(ApiModel):
    """Properties of a queue or cohort when fair sharing is enabled."""

    weight: Quantity = Field(
        default="1",
        description="Relative claim on idle quota of the cohort: a node's share is its dominant "
        "usage above nominal quota divided by this weight, and admission favours the "
        "lowest share. 0 means an infinite share while borrowing.",
    )


class FairSharingStatus(StatusModel):
    """Current fair-sharing state."""

    weighted_share: int = Field(
        default=0,
        description="Dominant share of lendable quota used above nominal, divided by weight "
        "(0 when within nominal quota).",
    )


class ResourceUsage(StatusModel):
    """Usage of one resource."""

    name: str = Field(description="Resource name.")
    total: Quantity = Field(default="0", description="Quota in use, including borrowed quota.")
    borrowed: Quantity = Field(default="0", description="Part of total above the nominal quota.")


class FlavorUsage(StatusModel):
    """Usage per resource of one flavor."""

    name: str = Field(description="Flavor name.")
    resources: tuple[ResourceUsage, ...] = Field(default=(), description="Usage per resource.")


def resource_groups_rules(
    groups: tuple[ResourceGroup, ...], *, has_parent: bool, parent_field: str, check_lending: bool
) -> list[tuple[str, str]]:
    """Kueue's rules for ``resourceGroups``; paths are relative to ``resourceGroups``.

    ``has_parent``: the owner is in a cohort (ClusterQueue) or has a parent
    (Cohort) — limits are meaningless otherwise. ``check_lending``: enforce
    lendingLimit ≤ nominalQuota (ClusterQueues only; a Cohort's subtree may
    lend more than its own nominal quota).
    """
    problems: list[tuple[str, str]] = []
    seen_resources: dict[str, int] = {}
    seen_flavors: dict[str, int] = {}
    total_flavors = total_resources = 0
    for i, group in enumerate(groups):
        at = f"[{i}]"
        total_flavors += len(group.flavors)
        total_resources += len(group.covered_resources)
        for j, resource in enumerate(group.covered_resources):
            if resource in seen_resources and seen_resources[resource] != i:
                problems.append(
                    (
                        f"{at}.coveredResources[{j}]",
                        f"resource {resource} is already covered by resourceGroups"
                        f"[{seen_resources[resource]}] (a resource may be in only one group)",
                    )
                )
            elif resource in seen_resources:
                problems.append((f"{at}.coveredResources[{j}]", f"duplicate resource {resource}"))
            else:
                seen_resources[resource] = i
        combinations = 0
        for j, flavor in enumerate(group.flavors):
            fat = f"{at}.flavors[{j}]"
            combinations += len(flavor.resources)
            if flavor.name in seen_flavors:
                problems.append(
                    (
                        f"{fat}.name",
                        f"flavor {flavor.name} is already listed in resourceGroups"
                        f"[{seen_flavors[flavor.name]}] (a flavor may appear only once)",
                    )
                )
            else:
                seen_flavors[flavor.name] = i
            names = tuple(r.name for r in flavor.resources)
            if names != group.covered_resources:
                problems.append(
                    (
                        f"{fat}.resources",
                        "must list exactly the covered resources "
                        f"{', '.join(group.covered_resources)} in that order "
                        f"(got {', '.join(names) or 'none'})",
                    )
                )
            for k, quota in enumerate(flavor.resources):
                problems.extend(
                    _quota_rules(
                        quota,
                        f"{fat}.resources[{k}]",
                        has_parent=has_parent,
                        parent_field=parent_field,
                        check_lending=check_lending,
                    )
                )
        if combinations > MAX_FLAVOR_RESOURCES_PER_GROUP:
            problems.append(
                (
                    at,
                    f"has {combinations} flavor-resource combinations; at most "
                    f"{MAX_FLAVOR_RESOURCES_PER_GROUP} are allowed",
                )
            )
    if total_flavors > MAX_TOTAL_FLAVORS:
        problems.append(
            ("", f"lists {total_flavors} flavors in total; at most {MAX_TOTAL_FLAVORS} are allowed")
        )
    if total_resources > MAX_TOTAL_RESOURCES:
        problems.append(
            (
                "",
                f"covers {total_resources} resources in total; at most "
                f"{MAX_TOTAL_RESOURCES} are allowed",
            )
        )
    return problems


def _quota_rules(
    quota: ResourceQuota, at: str, *, has_parent: bool, parent_field: str, check_lending: bool
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for field, value in (
        ("borrowingLimit", quota.borrowing_limit),
        ("lendingLimit", quota.lending_limit),
    ):
        if value is not None and not has_parent:
            problems.append((f"{at}.{field}", f"may only be set when {parent_field} is set"))
    if (
        check_lending
        and quota.lending_limit is not None
        and amount(quota.lending_limit) > amount(quota.nominal_quota)
    ):
        problems.append(
            (
                f"{at}.lendingLimit",
                f"{quota.lending_limit} must not exceed the nominalQuota {quota.nominal_quota}",
            )
        )
    return problems
