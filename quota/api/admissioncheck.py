"""AdmissionCheck: a second gate a workload passes after quota is reserved.

A ClusterQueue lists checks in ``admissionChecksStrategy``. A workload that
reserved quota is admitted only when every applicable check reports
``Ready``; the controller named by ``controllerName`` (for example
``kuota.dev/multicluster``) sets each check's state on the workload.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from quota.api.base import ApiModel, StatusModel
from quota.api.meta import ApiObject, Condition
from quota.api.names import LabelName, SubdomainName


class AdmissionCheckParametersReference(ApiModel):
    """An object holding the check's configuration."""

    api_group: SubdomainName = Field(description="API group of the parameters object.")
    kind: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$",
        description="Kind of the parameters object.",
    )
    name: LabelName = Field(description="Name of the parameters object.")


class AdmissionCheckSpec(ApiModel):
    """Which controller runs the check, with which parameters."""

    controller_name: str = Field(
        min_length=1,
        max_length=253,
        description="Controller that evaluates this check, e.g. kuota.dev/multicluster.",
    )
    parameters: AdmissionCheckParametersReference | None = Field(
        default=None, description="Configuration object for the controller."
    )


class AdmissionCheckStatus(StatusModel):
    """Observed state of an AdmissionCheck."""

    conditions: tuple[Condition, ...] = Field(
        default=(), max_length=16, description="Conditions, notably Active."
    )


class AdmissionCheck(ApiObject):
    """A check workloads pass after reserving quota and before starting."""

    plural = "admissionchecks"
    short_names = ("ac",)

    kind: Literal["AdmissionCheck"] = Field(default="AdmissionCheck", description="AdmissionCheck.")
    spec: AdmissionCheckSpec = Field(description="Controller and parameters.")
    status: AdmissionCheckStatus = Field(
        default_factory=AdmissionCheckStatus,
        description="Observed state, written by its controller.",
    )
