"""LocalQueue: the namespaced name users submit workloads to.

A LocalQueue points at one ClusterQueue. Users label their jobs with the
LocalQueue's name; the workload then competes for the ClusterQueue's quota
(if the ClusterQueue's namespaceSelector admits the namespace). A LocalQueue
has its own stop policy, so one team's queue can be held without stopping the
ClusterQueue. In Redis mode a LocalQueue may also give default per-pod
requests to submissions that request nothing (``defaultRequests``), as a
Kubernetes LimitRange does for the pods of a namespace.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from quota.api import unimplemented
from quota.api.base import ApiModel, Rules, StatusModel
from quota.api.clusterqueue import StopPolicy
from quota.api.meta import ApiObject, Condition
from quota.api.names import SubdomainName
from quota.api.quantity import Quantity
from quota.api.quotas import FairSharing, FairSharingStatus


class LocalQueueSpec(ApiModel):
    """Where a LocalQueue sends its workloads."""

    cluster_queue: SubdomainName = Field(
        description="The ClusterQueue whose quota this queue's workloads use."
    )
    stop_policy: StopPolicy = Field(
        default="None",
        description="None: submit normally. Hold: admit nothing new from this queue. "
        "HoldAndDrain: also evict its admitted workloads.",
    )
    fair_sharing: FairSharing | None = Field(
        default=None,
        description="Weight of this queue under admission fair sharing: not implemented "
        "by kuota yet, refused.",
    )
    default_requests: dict[str, Quantity] = Field(
        default_factory=dict,
        description="Redis mode: per-pod requests given to a submission that requests "
        "nothing (like a LimitRange's defaultRequest). Without it such a submission is "
        "refused.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        unimplemented.refuse(rules, "fairSharing", self.fair_sharing,
                             unimplemented.ADMISSION_FAIR_SHARING)
        rules.raise_if_any()
        return self


class LocalQueueResourceUsage(StatusModel):
    """Usage of one resource."""

    name: str = Field(description="Resource name.")
    total: Quantity = Field(default="0", description="Quota in use.")


class LocalQueueFlavorUsage(StatusModel):
    """Usage per resource of one flavor."""

    name: str = Field(description="Flavor name.")
    resources: tuple[LocalQueueResourceUsage, ...] = Field(
        default=(), description="Usage per resource."
    )


class LocalQueueStatus(StatusModel):
    """Observed state of a LocalQueue."""

    conditions: tuple[Condition, ...] = Field(
        default=(), max_length=16, description="Conditions, notably Active."
    )
    pending_workloads: int = Field(default=0, description="Workloads waiting for admission.")
    reserving_workloads: int = Field(
        default=0, description="Workloads holding a quota reservation."
    )
    admitted_workloads: int = Field(default=0, description="Admitted workloads not yet finished.")
    flavors_reservation: tuple[LocalQueueFlavorUsage, ...] = Field(
        default=(), description="Quota reserved per flavor by this queue's workloads."
    )
    flavors_usage: tuple[LocalQueueFlavorUsage, ...] = Field(
        default=(), description="Quota used per flavor by this queue's admitted workloads."
    )
    fair_sharing: FairSharingStatus | None = Field(
        default=None, description="Admission fair-sharing state."
    )


class LocalQueue(ApiObject):
    """A namespaced queue that users submit workloads to; backed by a ClusterQueue."""

    plural = "localqueues"
    namespaced = True
    short_names = ("queue", "queues", "lq")

    kind: Literal["LocalQueue"] = Field(default="LocalQueue", description="LocalQueue.")
    spec: LocalQueueSpec = Field(description="The backing ClusterQueue and stop policy.")
    status: LocalQueueStatus = Field(
        default_factory=LocalQueueStatus, description="Observed state, written by kuota."
    )
