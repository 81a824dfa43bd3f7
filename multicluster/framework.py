"""The plugin framework: filter and score plugins over member clusters, by name.

The shape is kube-scheduler's (and Karmada's, one level up): a decision runs
every enabled **filter** on every member, and the first that answers
*Unschedulable* removes the member, its reason kept for the explanation;
then every enabled **score** plugin rates the members left.

A score plugin works in two steps, like kube-scheduler's Score and
NormalizeScore: :meth:`ScorePlugin.score` gives a *raw* figure for one
member in the plugin's own unit (dollars per hour, percent free), and
:meth:`ScorePlugin.normalize` maps the raw figures of all feasible members
to integers 0..100, higher better. The normalisers below cover the usual
cases: figures already in 0..100 are kept; for costs, the cheapest member
gets 100 and the others ``100 * cheapest / cost`` (a member twice as
expensive gets 50), which keeps the proportions — min-max scaling would turn a
1 % price difference into 0 against 100. A member's total is the sum of
``weight * normalised score``; weights come from the MultiClusterConfig.

Plugins are small frozen values with a ``name``; a :class:`Registry` maps
names to plugins, so a new plugin is one class and one ``register`` call.
Filters run in registration order (cheap first), which is also the order
their reasons are found in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, Protocol

from multicluster.model import ClusterInfo
from multicluster.request import DispatchRequest

MAX_SCORE: Final = 100


class Code(StrEnum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"


@dataclass(frozen=True, slots=True)
class Status:
    """A filter's answer; ``reason`` says why a member was refused."""

    code: Code
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS


SUCCESS: Final = Status(Code.SUCCESS)


def unschedulable(reason: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reason)


class FilterPlugin(Protocol):
    @property
    def name(self) -> str: ...

    def filter(self, request: DispatchRequest, cluster: ClusterInfo) -> Status:
        """SUCCESS if ``cluster`` may run the request, else why not."""
        ...


class ScorePlugin(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def default_weight(self) -> int: ...

    def score(self, request: DispatchRequest, cluster: ClusterInfo) -> float:
        """A raw figure for one feasible member, in the plugin's own unit."""
        ...

    def normalize(self, raw: Sequence[float]) -> list[int]:
        """The raw figures of all feasible members → 0..100 each, higher better."""
        ...


# --- normalisers ------------------------------------------------------------------------------


def keep_range(raw: Sequence[float]) -> list[int]:
    """Figures already meant as 0..100: rounded and clamped."""
    return [min(MAX_SCORE, max(0, round(x))) for x in raw]


def cheapest_best(raw: Sequence[float]) -> list[int]:
    """Costs: the cheapest gets 100, others ``100 * cheapest / cost`` (floored).

    When the cheapest is free, every member that is not free gets 0."""
    if not raw:
        return []
    low = min(raw)
    if low < 0:
        raise ValueError(f"costs must not be negative (got {low})")
    return [MAX_SCORE if x == low else int(MAX_SCORE * low / x) for x in raw]


def min_max(raw: Sequence[float]) -> list[int]:
    """Any higher-is-better figure: the lowest gets 0, the highest 100; all equal → 100."""
    if not raw:
        return []
    low, high = min(raw), max(raw)
    if high == low:
        return [MAX_SCORE] * len(raw)
    return [int(MAX_SCORE * (x - low) / (high - low)) for x in raw]


# --- registry ---------------------------------------------------------------------------------


class RegistryError(ValueError):
    """A plugin registered twice, or a name no plugin has."""


@dataclass(eq=False)
class Registry:
    """Plugins by name; filters and scorers are separate namespaces (DataLocality is both)."""

    filters: dict[str, FilterPlugin] = field(default_factory=dict)
    scorers: dict[str, ScorePlugin] = field(default_factory=dict)

    def register_filter(self, plugin: FilterPlugin) -> None:
        if plugin.name in self.filters:
            raise RegistryError(f"filter plugin {plugin.name} is already registered")
        self.filters[plugin.name] = plugin

    def register_scorer(self, plugin: ScorePlugin) -> None:
        if plugin.name in self.scorers:
            raise RegistryError(f"score plugin {plugin.name} is already registered")
        if not 0 <= plugin.default_weight <= MAX_SCORE:
            raise RegistryError(f"score plugin {plugin.name}: default weight "
                                f"{plugin.default_weight} is not in 0..{MAX_SCORE}")
        self.scorers[plugin.name] = plugin

    def filter(self, name: str) -> FilterPlugin:
        try:
            return self.filters[name]
        except KeyError:
            raise RegistryError(f"no filter plugin named {name!r} (known: "
                                f"{', '.join(self.filters)})") from None

    def scorer(self, name: str) -> ScorePlugin:
        try:
            return self.scorers[name]
        except KeyError:
            raise RegistryError(f"no score plugin named {name!r} (known: "
                                f"{', '.join(self.scorers)})") from None

    def copy(self) -> Registry:
        """A registry with the same plugins, to extend without touching this one."""
        return Registry(dict(self.filters), dict(self.scorers))
