"""WorkloadPriorityClass: a named priority for workloads, separate from pod priority.

Jobs name a class with the ``kuota.dev/priority-class`` label; the workload's
priority is the class's value when the workload is created (changing the
class later does not change existing workloads). Higher values are admitted
first and may preempt lower ones.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from quota.api.meta import ApiObject

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


class WorkloadPriorityClass(ApiObject):
    """A named priority value for workloads."""

    plural = "workloadpriorityclasses"
    short_names = ("wpc",)

    kind: Literal["WorkloadPriorityClass"] = Field(
        default="WorkloadPriorityClass", description="WorkloadPriorityClass."
    )
    value: int = Field(
        ge=INT32_MIN,
        le=INT32_MAX,
        description="Priority of workloads of this class; higher is more important.",
    )
    description: str = Field(
        default="", max_length=2048, description="When to use this class, for humans."
    )
