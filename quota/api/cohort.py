"""Cohort: an inner node of the quota tree.

ClusterQueues that name the same cohort share their unused quota. A Cohort
object is optional — a name used only in ``cohortName`` is a cohort with no
quota of its own — but when it exists it may hold its own ``resourceGroups``
(a shared pool on top of its members' quota, lendable upward subject to
``lendingLimit``) and a ``parentName``, so cohorts nest: team < department <
company. ``borrowingLimit`` caps what the whole subtree borrows from the
parent; ``lendingLimit`` caps what it lends. Both need a parent. A cycle of
parents is not rejected here (it spans several objects); the core disables the
tree that contains it.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from quota.api.base import ApiModel, Rules, StatusModel
from quota.api.meta import ApiObject
from quota.api.names import SubdomainName
from quota.api.quotas import FairSharing, FairSharingStatus, ResourceGroup, resource_groups_rules


class CohortSpec(ApiModel):
    """Parent and own quota of a Cohort."""

    parent_name: SubdomainName | None = Field(
        default=None,
        description="Parent cohort. Absent: this cohort is the root of its tree. A parent that "
        "does not exist as an object acts as a cohort without quota.",
    )
    resource_groups: tuple[ResourceGroup, ...] = Field(
        default=(),
        max_length=16,
        description="Quota the cohort itself holds, shared by its members on top of their own. "
        "borrowingLimit and lendingLimit here apply to the whole subtree and need a "
        "parent.",
    )
    fair_sharing: FairSharing = Field(
        default_factory=FairSharing,
        description="Fair-sharing weight of this cohort within its parent.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        rules.extend(
            "resourceGroups",
            resource_groups_rules(
                self.resource_groups,
                has_parent=bool(self.parent_name),
                parent_field="spec.parentName",
                check_lending=False,
            ),
        )
        rules.raise_if_any()
        return self


class CohortStatus(StatusModel):
    """Observed state of a Cohort."""

    fair_sharing: FairSharingStatus | None = Field(
        default=None, description="Fair-sharing state, when fair sharing is enabled."
    )


class Cohort(ApiObject):
    """A node of the quota tree grouping ClusterQueues and other cohorts."""

    plural = "cohorts"
    short_names = ("co",)

    kind: Literal["Cohort"] = Field(default="Cohort", description="Cohort.")
    spec: CohortSpec = Field(default_factory=CohortSpec, description="Parent and own quota.")
    status: CohortStatus = Field(
        default_factory=CohortStatus, description="Observed state, written by kuota."
    )

    def check_rules(self, rules: Rules) -> None:
        rules.check(
            self.spec.parent_name != self.metadata.name,
            "spec.parentName",
            "a Cohort may not be its own parent",
        )
