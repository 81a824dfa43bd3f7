"""The decision: which member runs an admitted workload, and why (filter → score → select).

:func:`select` is pure: the workload, its admission (flavors and counts per
podSet), the members (:class:`~multicluster.model.ClusterInfo` values), the
:class:`~multicluster.settings.DispatchConfig` and ``now`` go in; a
:class:`Decision` comes out. Steps:

1. **Request** — the admitted pods as a member will run them (flavor labels
   and tolerations applied), built once (:mod:`multicluster.request`).
2. **Candidates** — the members the config lists (all passed in, if it lists
   none); listed names with no member value are reported as ``NotFound``,
   names in ``exclude`` as ``Excluded`` with the caller's reason.
3. **Filter** — each enabled filter in order; the first refusal removes the
   member and is recorded with the plugin's name and reason.
4. **Score** — each weighted scorer rates every feasible member; raw figures
   are normalised to 0..100 over the feasible members and multiplied by the
   weight; a member's total is the sum.
5. **Select** — highest total; equal totals go to the member whose name
   sorts first, so the same inputs always give the same answer.

The :class:`Decision` lists every candidate: feasible ones best first with
each plugin's raw figure, normalised score and weight; filtered ones by name
with the refusing plugin and its reason. :meth:`Decision.to_dict` gives the
same as plain JSON values for the Workload's status, and
:mod:`multicluster.explain` renders it for people.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from multicluster.framework import SUCCESS
from multicluster.hints import NO_HINTS, Hints
from multicluster.model import ClusterInfo
from multicluster.request import build_request
from multicluster.settings import DispatchConfig
from quota.config import FlavorConfig
from quota.workload import Admission, WorkloadInfo

#: Pseudo-plugin names for candidates refused before any filter ran.
NOT_FOUND: Final = "NotFound"
EXCLUDED: Final = "Excluded"


@dataclass(frozen=True, slots=True)
class PluginScore:
    plugin: str
    #: The plugin's own figure (dollars per hour, percent...).
    raw: float
    #: Normalised, 0..100.
    score: int
    weight: int

    @property
    def weighted(self) -> int:
        return self.score * self.weight


@dataclass(frozen=True, slots=True)
class ClusterResult:
    """One candidate member: refused (``filtered_by`` and ``reason``) or scored."""

    cluster: str
    filtered_by: str | None = None
    reason: str = ""
    scores: tuple[PluginScore, ...] = ()
    total: int = 0

    @property
    def feasible(self) -> bool:
        return self.filtered_by is None


@dataclass(frozen=True, slots=True)
class Decision:
    workload: str
    #: The chosen member, or None when no candidate is feasible.
    cluster: str | None
    #: Feasible members best first, then refused ones by name.
    results: tuple[ClusterResult, ...]
    #: Highest total a member could reach (100 × the sum of weights).
    max_total: int = 0
    config: str = ""

    @property
    def feasible(self) -> tuple[ClusterResult, ...]:
        return tuple(r for r in self.results if r.feasible)

    @property
    def filtered(self) -> tuple[ClusterResult, ...]:
        return tuple(r for r in self.results if not r.feasible)

    def result(self, cluster: str) -> ClusterResult:
        for result in self.results:
            if result.cluster == cluster:
                return result
        raise KeyError(f"decision for {self.workload}: {cluster} was not a candidate")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (camelCase keys), for a status field."""
        out: dict[str, Any] = {"workload": self.workload, "cluster": self.cluster,
                               "maxTotal": self.max_total, "config": self.config}
        rows: list[dict[str, Any]] = []
        for r in self.results:
            if r.feasible:
                rows.append({"name": r.cluster, "total": r.total, "scores": [
                    {"plugin": s.plugin, "raw": s.raw, "score": s.score, "weight": s.weight}
                    for s in r.scores]})
            else:
                rows.append({"name": r.cluster, "filteredBy": r.filtered_by,
                             "reason": r.reason})
        out["clusters"] = rows
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """The inverse of :meth:`to_dict` (for ``kuota why`` reading a stored decision)."""
        try:
            results = tuple(
                ClusterResult(str(row["name"]), row.get("filteredBy"), str(row.get("reason", "")),
                              tuple(PluginScore(str(s["plugin"]), float(s["raw"]),
                                                int(s["score"]), int(s["weight"]))
                                    for s in row.get("scores", ())),
                              int(row.get("total", 0)))
                for row in data["clusters"])
            return cls(str(data["workload"]), data.get("cluster"), results,
                       int(data.get("maxTotal", 0)), str(data.get("config", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"stored dispatch decision is malformed: {exc!r}") from None


def select(workload: WorkloadInfo, admission: Admission, clusters: Iterable[ClusterInfo],
           config: DispatchConfig, *, now: float, flavors: Mapping[str, FlavorConfig],
           hints: Hints = NO_HINTS, exclude: Mapping[str, str] | None = None) -> Decision:
    """Choose the member for ``workload``; see the module docstring for the steps."""
    # 1. request
    request = build_request(workload, admission, flavors=flavors, hints=hints, now=now,
                            stale_after=config.stale_after)
    # 2. candidates
    members: dict[str, ClusterInfo] = {}
    for cluster in clusters:
        if cluster.name in members:
            raise ValueError(f"member cluster {cluster.name} is given twice")
        members[cluster.name] = cluster
    names = config.clusters or tuple(sorted(members))
    refused: list[ClusterResult] = []
    feasible: list[ClusterInfo] = []
    excluded = exclude or {}
    # 3. filter
    for name in names:
        member = members.get(name)
        if member is None:
            refused.append(ClusterResult(name, NOT_FOUND, "no MemberCluster value for this name "
                                                          "(not created or not observed yet)"))
            continue
        if name in excluded:
            refused.append(ClusterResult(name, EXCLUDED, excluded[name]))
            continue
        for plugin in config.filters:
            status = plugin.filter(request, member)
            if status is not SUCCESS and not status.ok:
                refused.append(ClusterResult(name, plugin.name, status.reason))
                break
        else:
            feasible.append(member)
    # 4. score
    per_member: list[list[PluginScore]] = [[] for _ in feasible]
    for scorer, weight in config.scorers:
        raw = [scorer.score(request, member) for member in feasible]
        for scores, figure, normal in zip(per_member, raw, scorer.normalize(raw), strict=True):
            scores.append(PluginScore(scorer.name, figure, normal, weight))
    scored = [ClusterResult(member.name, scores=tuple(scores),
                            total=sum(s.weighted for s in scores))
              for member, scores in zip(feasible, per_member, strict=True)]
    # 5. select
    scored.sort(key=lambda r: (-r.total, r.cluster))
    refused.sort(key=lambda r: r.cluster)
    return Decision(workload.key, scored[0].cluster if scored else None,
                    (*scored, *refused), config.max_total, config.name)
