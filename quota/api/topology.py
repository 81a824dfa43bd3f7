"""Topology: the ordered node labels that group nodes into domains.

Levels go from the widest domain to the narrowest, e.g. block, rack,
hostname. Topology-aware admission places all pods of a podSet inside one
domain of a required level, or as few domains as possible of a preferred one.
``kubernetes.io/hostname`` may only be the last (narrowest) level.
"""

from __future__ import annotations

from typing import Final, Literal, Self

from pydantic import Field, model_validator

from quota.api.base import ApiModel, Rules
from quota.api.meta import ApiObject
from quota.api.names import QualifiedName

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"


class TopologyLevel(ApiModel):
    """One level of a topology."""

    node_label: QualifiedName = Field(
        description="Node label whose value names the domain of this level, e.g. "
        "cloud.provider.com/topology-rack."
    )


class TopologySpec(ApiModel):
    """Levels of a topology."""

    levels: tuple[TopologyLevel, ...] = Field(
        min_length=1,
        max_length=16,
        description="Levels from the widest domain to the narrowest (1 to 16, unique). "
        "kubernetes.io/hostname may only be the last.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        seen: set[str] = set()
        for i, level in enumerate(self.levels):
            rules.check(
                level.node_label not in seen,
                f"levels[{i}].nodeLabel",
                f"duplicate level {level.node_label}",
            )
            seen.add(level.node_label)
            if level.node_label == HOSTNAME_LABEL:
                rules.check(
                    i == len(self.levels) - 1,
                    f"levels[{i}].nodeLabel",
                    f"{HOSTNAME_LABEL} may only be the lowest (last) level",
                )
        rules.raise_if_any()
        return self

    @property
    def node_labels(self) -> tuple[str, ...]:
        return tuple(level.node_label for level in self.levels)


class Topology(ApiObject):
    """How nodes are grouped into domains (blocks, racks, hosts)."""

    plural = "topologies"
    short_names = ("topo",)

    kind: Literal["Topology"] = Field(default="Topology", description="Topology.")
    spec: TopologySpec = Field(description="The levels.")
