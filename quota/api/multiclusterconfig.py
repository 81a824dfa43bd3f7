"""MultiClusterConfig: which members a ClusterQueue dispatches to, and how it chooses.

Like Kueue's MultiKueueConfig, it is named by the ``parameters`` of an
AdmissionCheck whose ``controllerName`` is ``kuota.dev/multicluster``; a
ClusterQueue opts in by listing that check. Besides the member list it
tunes the choice (see ``docs/multicluster.md``):

- ``disabledFilters``: filter plugins to skip (all registered ones run
  otherwise);
- ``scoreWeights``: a weight 0..100 per score plugin; unlisted plugins keep
  their default weight, 0 turns one off;
- ``staleAfter``: a member not seen for this long gets no new workloads;
- ``workerLostTimeout``: a member not seen for this long is lost: its
  workloads are evicted and dispatched elsewhere (Kueue's setting of the
  same name; default 5 minutes here).

Plugin names are checked against the plugin registry when the config is
turned into the dispatcher's value (:mod:`multicluster.settings`), since
plugins can be added in code; this model checks only their spelling.
Durations use Go's syntax as Kubernetes does (``90s``, ``5m``, ``1h30m``).
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal, Self

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from quota.api.base import ApiModel, Rules
from quota.api.meta import ApiObject
from quota.api.names import SubdomainName

DURATION_PATTERN: Final = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
_DURATION_RE: Final = re.compile(DURATION_PATTERN)
_PART_RE: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                        "h": 3600.0}
PLUGIN_NAME_PATTERN: Final = r"^[A-Z][A-Za-z0-9]*$"
MAX_SCORE_WEIGHT: Final = 100


def duration_seconds(text: str) -> float:
    """Seconds in a Go duration string such as ``1h30m`` or ``90s``."""
    if not _DURATION_RE.match(text):
        raise ValueError(f"{text!r} is not a duration (e.g. 90s, 5m, 1h30m)")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART_RE.findall(text))


def _check_duration(value: str) -> str:
    duration_seconds(value)
    return value


#: A Go duration string, stored as written.
Duration = Annotated[
    str,
    AfterValidator(_check_duration),
    WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN}),
]
#: A plugin name: CamelCase, e.g. CapacityEstimate.
PluginName = Annotated[
    str,
    Field(min_length=1, max_length=63, pattern=PLUGIN_NAME_PATTERN),
]


class ScoreWeight(ApiModel):
    """The weight of one score plugin."""

    name: PluginName = Field(description="Score plugin, e.g. Cost, LoadBalance, Binpack, "
                             "DataLocality.")
    weight: int = Field(ge=0, le=MAX_SCORE_WEIGHT,
                        description="Weight 0..100; 0 turns the plugin off.")


class MultiClusterConfigSpec(ApiModel):
    """Members and the plugin settings used to choose among them."""

    clusters: tuple[SubdomainName, ...] = Field(
        min_length=1, max_length=256,
        description="MemberCluster names workloads may be dispatched to (unique).",
    )
    disabled_filters: tuple[PluginName, ...] = Field(
        default=(), max_length=32,
        description="Filter plugins not to run (ClusterAffinity, TaintToleration, Health, "
        "Hardware, DataLocality, CapacityEstimate or added ones).",
    )
    score_weights: tuple[ScoreWeight, ...] = Field(
        default=(), max_length=32,
        description="Weights of score plugins; unlisted ones keep their default weight.",
    )
    stale_after: Duration = Field(
        default="1m", description="A member not seen for this long gets no new workloads.",
    )
    worker_lost_timeout: Duration = Field(
        default="5m",
        description="A member not seen for this long is lost: its workloads are evicted "
        "(ClusterLost) and dispatched to another member.",
    )

    @model_validator(mode="after")
    def _rules(self) -> Self:
        rules = Rules()
        for field, names in (("clusters", self.clusters),
                             ("disabledFilters", self.disabled_filters),
                             ("scoreWeights", tuple(w.name for w in self.score_weights))):
            for i, name in enumerate(names):
                rules.check(name not in names[:i], f"{field}[{i}]", f"{name} is listed twice")
        rules.check(duration_seconds(self.stale_after)
                    <= duration_seconds(self.worker_lost_timeout), "staleAfter",
                    f"{self.stale_after} must not exceed workerLostTimeout "
                    f"{self.worker_lost_timeout}")
        rules.check(duration_seconds(self.worker_lost_timeout) > 0, "workerLostTimeout",
                    "must be longer than zero")
        rules.raise_if_any()
        return self

    @property
    def stale_after_seconds(self) -> float:
        return duration_seconds(self.stale_after)

    @property
    def worker_lost_timeout_seconds(self) -> float:
        return duration_seconds(self.worker_lost_timeout)


class MultiClusterConfig(ApiObject):
    """Members and plugin weights for dispatch, named by a kuota.dev/multicluster check."""

    plural = "multiclusterconfigs"
    short_names = ("mcc",)

    kind: Literal["MultiClusterConfig"] = Field(default="MultiClusterConfig",
                                                description="MultiClusterConfig.")
    spec: MultiClusterConfigSpec = Field(description="Members and plugin settings.")
