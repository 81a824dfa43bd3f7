"""The simulator report's per-workload timeline (issue 41).

Why: the report said "1 never admitted" but named no workload anywhere; nothing
showed when each workload waited, ran or was evicted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from kuota.dashboard import gantt, report, trace
from kuota.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "tests" / "scenarios"


@dataclass
class Case:
    scenario: Path
    key: str
    want_bars: list[tuple[float, float, str]]
    want_evictions: list[float]
    want_outcome: str


@pytest.mark.parametrize("case", [
    pytest.param(Case(SCENARIOS / "borrow-within-cohort.yaml", "b/cheap",
                      [(0.0, 5.0, "run"), (5.0, 15.0, "wait"), (15.0, 115.0, "run")], [5.0],
                      "finished at 115s"), id="evicted, waits, runs again"),
    pytest.param(Case(ROOT / "examples" / "demo.yaml", "team-b/too-big",
                      [(20.0, 215.0, "wait")], [],
                      "never admitted: ExceedsMaxQuota: couldn't assign flavors to pod set "
                      "main: nvidia.com/gpu in flavor a100: request 20 exceeds the most "
                      "ClusterQueue team-b can ever get (8) by 12"),
                 id="never admitted: named with its reason"),
])
def test_rows(case: Case) -> None:
    got = trace.trace(load_scenario(case.scenario)).result
    [row] = [r for r in gantt.rows(got) if r.key == case.key]
    assert [(b.start, b.end, b.kind) for b in row.bars] == case.want_bars
    assert [at for at, _ in row.evictions] == case.want_evictions
    assert row.outcome.startswith(case.want_outcome), row.outcome


def test_report_names_every_workload_and_the_never_admitted() -> None:
    traced = trace.trace(load_scenario(ROOT / "examples" / "demo.yaml"))
    html = report.html(traced, title="demo")
    for key in traced.result.workloads:
        assert f'<tr data-key="{key}"><td class="name">{key}</td>' in html
    assert '<h2 id="never-admitted">Never admitted (1)</h2>' in html
    assert '<a href="#never-admitted">never admitted</a>' in html
    assert "never admitted: ExceedsMaxQuota (see below)" in html
    # Labels whole, above their panel (they were cut to the 130-unit margin).
    assert '<text class="label" x="130" y="' in html and ">a100/nvidia.com/gpu</text>" in html
