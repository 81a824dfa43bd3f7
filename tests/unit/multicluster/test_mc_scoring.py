"""Score plugins (raw figures), normalisers, weights and the plugin registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from multicluster_builders import (
    GPU,
    gpu_member,
    member,
    node,
    pod_set,
    prices,
    request,
    workload,
)

from multicluster import scorers
from multicluster.framework import (
    Registry,
    RegistryError,
    ScorePlugin,
    cheapest_best,
    keep_range,
    min_max,
)
from multicluster.hints import NO_HINTS, Hints
from multicluster.model import ClusterInfo, CostTable
from multicluster.settings import SettingsError, build_config, default_registry
from quota.workload import WorkloadInfo


@dataclass(frozen=True)
class Case:
    name: str
    plugin: ScorePlugin
    cluster: ClusterInfo
    want_raw: float
    wl: WorkloadInfo = field(default_factory=lambda: workload(pod_set(count=2,
                                                                       requests=f"{GPU}=2")))
    flavor: str = "a100"
    hints: Hints = NO_HINTS


CPU_HALF_USED = member("c", (node("c0", "cpu=10,memory=40Gi", "cpu=5,memory=10Gi"),))

CASES = [
    # --- Cost: count * request / per * price, per hour ---------------------------------------
    Case("gpu price", scorers.Cost(), gpu_member("a", cost=prices(nvidia_com_gpu=2.5)), 10.0),
    Case("unpriced resources are free", scorers.Cost(), gpu_member("a", cost=prices(cpu=1.0)),
         0.0),
    Case("flavor price wins over the default", scorers.Cost(), gpu_member("a", cost=CostTable({
        (GPU, None): 0.002, (GPU, "a100"): 0.004, (GPU, "t4"): 0.001})), 16.0),
    Case("every resource of every podSet", scorers.Cost(),
         gpu_member("a", cost=prices(cpu=0.5, nvidia_com_gpu=3.0)), 3 * 1.0 + 2 * (4 * 0.5),
         wl=workload(pod_set("launcher", 2, "cpu=4"), pod_set("worker", 1, f"{GPU}=1"))),
    # --- LoadBalance: least allocated over the flavor's nodes, with the gang added --------
    Case("empty member", scorers.LoadBalance(), gpu_member("a", (8, 8)), 75.0),
    Case("half used member", scorers.LoadBalance(), gpu_member("a", (4, 4)), 25.0),
    Case("member too full", scorers.LoadBalance(), gpu_member("a", (2, 0)), 0.0),
    Case("only requested resources count", scorers.LoadBalance(), CPU_HALF_USED,
         (10 - 5 - 2) * 100 // 10, wl=workload(pod_set(count=1, requests="cpu=2")),
         flavor="default"),
    Case("no requests: cpu and memory", scorers.LoadBalance(), CPU_HALF_USED,
         (50 + 75) / 2, wl=workload(pod_set(count=1, requests="")), flavor="default"),
    Case("other flavors' nodes do not count", scorers.LoadBalance(),
         member("m", gpu_member("a", (8, 8)).nodes + gpu_member("b", (0, 0), model="t4").nodes),
         75.0),
    # --- Binpack: most allocated ------------------------------------------------------------
    Case("binpack empty member", scorers.Binpack(), gpu_member("a", (8, 8)), 25.0),
    Case("binpack half used member", scorers.Binpack(), gpu_member("a", (4, 4)), 75.0),
    Case("binpack capped at full", scorers.Binpack(), gpu_member("a", (2, 0)), 100.0),
    # --- DataLocality: share of preferred datasets held -------------------------------------
    Case("no preferences", scorers.DataLocality(), gpu_member("a", datasets=("x",)), 0.0),
    Case("holds half", scorers.DataLocality(), gpu_member("a", datasets=("x", "z")), 50.0,
         hints=Hints(preferred_datasets=("x", "y"))),
    Case("holds all", scorers.DataLocality(), gpu_member("a", datasets=("x", "y")), 100.0,
         hints=Hints(preferred_datasets=("x", "y"))),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_raw_score(case: Case) -> None:
    raw = case.plugin.score(request(case.wl, case.flavor, hints=case.hints), case.cluster)
    assert raw == pytest.approx(case.want_raw)


@pytest.mark.parametrize(("normalize", "raw", "want"), [
    (keep_range, [0.0, 49.5, 100.0, 130.0, -3.0], [0, 50, 100, 100, 0]),
    (cheapest_best, [10.0, 20.0, 40.0, 12.5], [100, 50, 25, 80]),
    (cheapest_best, [0.0, 0.0, 5.0], [100, 100, 0]),
    (cheapest_best, [7.0, 7.0], [100, 100]),
    (min_max, [1.0, 2.0, 3.0], [0, 50, 100]),
    (min_max, [4.0, 4.0], [100, 100]),
    (cheapest_best, [], []),
    (min_max, [], []),
])
def test_normalisers(normalize: Any, raw: list[float], want: list[int]) -> None:
    assert normalize(raw) == want


def test_negative_costs_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        cheapest_best([1.0, -1.0])


def test_each_scorer_normalises_into_range() -> None:
    raw = [0.0, 3.5, 50.0, 100.0]
    for plugin in scorers.BUILTIN:
        scores = plugin.normalize(raw)
        assert len(scores) == len(raw)
        assert all(0 <= s <= 100 for s in scores), plugin.name


# --- settings: weights and names ----------------------------------------------------------------


@pytest.mark.parametrize(("weights", "disabled", "want_scorers", "want_filters"), [
    (None, (), [("Cost", 1), ("LoadBalance", 1), ("DataLocality", 1)],
     ["Health", "ClusterAffinity", "TaintToleration", "DataLocality", "Hardware",
      "CapacityEstimate"]),
    ({"Binpack": 2, "LoadBalance": 0}, ("Health", "DataLocality"),
     [("Cost", 1), ("Binpack", 2), ("DataLocality", 1)],
     ["ClusterAffinity", "TaintToleration", "Hardware", "CapacityEstimate"]),
    ({"Cost": 100}, (), [("Cost", 100), ("LoadBalance", 1), ("DataLocality", 1)], None),
])
def test_weights_and_disabled_filters(weights: dict[str, int] | None, disabled: tuple[str, ...],
                                      want_scorers: list[tuple[str, int]],
                                      want_filters: list[str] | None) -> None:
    cfg = build_config(default_registry(), weights=weights, disabled_filters=disabled)
    assert [(p.name, w) for p, w in cfg.scorers] == want_scorers
    assert cfg.max_total == 100 * sum(w for _, w in want_scorers)
    if want_filters is not None:
        assert [f.name for f in cfg.filters] == want_filters


@pytest.mark.parametrize(("kwargs", "want_error"), [
    ({"disabled_filters": ("Helth",)},
     "MultiClusterConfig fleet: spec.disabledFilters: no filter plugin named Helth"),
    ({"weights": {"Price": 1}}, "spec.scoreWeights: no score plugin named Price"),
    ({"weights": {"Cost": 101}}, "weight 101 of Cost is not in 0..100"),
])
def test_settings_errors_name_object_and_field(kwargs: dict[str, Any], want_error: str) -> None:
    with pytest.raises(SettingsError, match=want_error):
        build_config(default_registry(), name="fleet", **kwargs)


@dataclass(frozen=True)
class GpuCount:
    """A plugin added in code: prefers members with more GPU nodes."""

    name: str = "GpuNodes"
    default_weight: int = 5

    def score(self, request: Any, cluster: ClusterInfo) -> float:
        return float(len(cluster.nodes))

    def normalize(self, raw: Any) -> list[int]:
        return min_max(raw)


def test_registry_takes_new_plugins_and_refuses_duplicates() -> None:
    registry = default_registry().copy()
    registry.register_scorer(GpuCount())
    cfg = build_config(registry, weights={"GpuNodes": 3})
    assert ("GpuNodes", 3) in [(p.name, w) for p, w in cfg.scorers]
    assert "GpuNodes" not in default_registry().scorers
    with pytest.raises(RegistryError, match="score plugin GpuNodes is already registered"):
        registry.register_scorer(GpuCount())
    with pytest.raises(RegistryError, match="default weight 500"):
        Registry().register_scorer(GpuCount(default_weight=500))
    with pytest.raises(RegistryError, match="no filter plugin named 'Nope'"):
        registry.filter("Nope")
    assert registry.scorer("GpuNodes") == GpuCount()
