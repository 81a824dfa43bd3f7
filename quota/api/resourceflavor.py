"""ResourceFlavor: one kind of capacity, described by the nodes that provide it.

A flavor says which nodes its quota stands for: ``nodeLabels`` (injected into
an admitted workload's nodeSelector, and used to skip flavors a workload's
own nodeSelector or required node affinity rules out), ``nodeTaints`` (a
workload must tolerate them to get this flavor, unless the flavor's own
``tolerations`` cover them) and ``tolerations`` (added to admitted pods).
``topologyName`` links the flavor to a Topology for topology-aware placement.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from quota.api.base import ApiModel, Rules, join_path
from quota.api.meta import ApiObject, Taint, Toleration
from quota.api.names import SubdomainName, labels_errors


class ResourceFlavorSpec(ApiModel):
    """The nodes a flavor stands for."""

    node_labels: dict[str, str] = Field(
        default_factory=dict,
        max_length=8,
        description="Labels of the nodes of this flavor (up to 8). Admitted pods get them as "
        "nodeSelector; a workload whose nodeSelector or required node affinity "
        "contradicts them cannot use this flavor.",
    )
    node_taints: tuple[Taint, ...] = Field(
        default=(),
        max_length=8,
        description="Taints of the nodes of this flavor (up to 8). A workload must tolerate the "
        "NoSchedule and NoExecute ones to use this flavor.",
    )
    tolerations: tuple[Toleration, ...] = Field(
        default=(),
        max_length=8,
        description="Tolerations added to pods admitted on this flavor (up to 8); taints they "
        "tolerate are not held against workloads.",
    )
    topology_name: SubdomainName | None = Field(
        default=None,
        description="Topology describing how the nodes of this flavor are grouped (racks, "
        "blocks), for topology-aware placement. Needs at least one nodeLabel.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        for key, error in labels_errors(self.node_labels):
            rules.add(join_path("nodeLabels", key), error)
        seen: set[tuple[str, str]] = set()
        for i, taint in enumerate(self.node_taints):
            rules.check(
                (taint.key, taint.effect) not in seen,
                f"nodeTaints[{i}]",
                f"duplicate taint {taint.key}:{taint.effect} (taints must be unique by "
                "key and effect)",
            )
            seen.add((taint.key, taint.effect))
        if self.topology_name is not None:
            rules.check(
                bool(self.node_labels),
                "nodeLabels",
                "at least one node label is required when topologyName is set",
            )
        rules.raise_if_any()
        return self


class ResourceFlavor(ApiObject):
    """A kind of capacity (GPU model, spot vs on-demand, ...) that quota is given in."""

    plural = "resourceflavors"
    short_names = ("flavor", "flavors", "rf")

    kind: Literal["ResourceFlavor"] = Field(default="ResourceFlavor", description="ResourceFlavor.")
    spec: ResourceFlavorSpec = Field(
        default_factory=ResourceFlavorSpec, description="Node labels, taints and tolerations."
    )
