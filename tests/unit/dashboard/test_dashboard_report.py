"""``kuota simulate --html``: the trace the report draws, and the report itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kuota import cli
from kuota.dashboard import report, trace
from kuota.scenario import load_scenario
from kuota.simulator import simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize("name", ["borrow-within-cohort.yaml", "best-effort-fifo.yaml",
                                  "hierarchical-cohorts.yaml", "admission-checks.yaml"])
def test_tracing_changes_no_outcome(name: str) -> None:
    scenario = load_scenario(SCENARIOS / name)
    assert trace.trace(scenario).result.to_json() == simulate(scenario).to_json()


def test_trace_of_a_reclaim() -> None:
    """borrow-within-cohort: batch borrows, prod reclaims at 5s by evicting b/cheap."""
    got = trace.trace(load_scenario(SCENARIOS / "borrow-within-cohort.yaml"))
    batch, prod = got.queues["batch"], got.queues["prod"]
    assert [(s.at, s.pending, s.admitted, s.usage[0][1] // 1000) for s in batch.samples] == [
        (0.0, 0, 2, 6), (5.0, 1, 1, 3), (15.0, 0, 2, 6), (100.0, 0, 1, 3), (115.0, 0, 0, 0)]
    assert [(at, wl) for at, wl, _ in batch.evictions] == [(5.0, "b/cheap")]
    assert "InCohortReclaimWhileBorrowing" in batch.evictions[0][2]
    assert prod.evictions == []
    assert [(q.flavor, q.resource, q.nominal // 1000) for q in prod.quotas] == [
        ("default", "cpu", 2)]


@pytest.mark.parametrize(("end", "want"), [
    pytest.param(125.0, [0, 20, 40, 60, 80, 100, 120], id="125s"),
    pytest.param(10.0, [0, 2, 4, 6, 8, 10], id="10s"),
    pytest.param(0.5, [0, 0.1, 0.2, 0.3, 0.4, 0.5], id="sub-second"),
    pytest.param(0.0, [0], id="nothing happened"),
])
def test_ticks(end: float, want: list[float]) -> None:
    assert report.ticks(end) == pytest.approx(want)


@pytest.mark.parametrize(("points", "want"), [
    pytest.param([], "", id="no samples: no path"),
    pytest.param([(0.0, 2.0), (5.0, 1.0)], "M0.0,10H0.0V8.0H5.0V9.0H10.0V10Z",
                 id="steps held to the end"),
])
def test_step_path(points: list[tuple[float, float]], want: str) -> None:
    assert report.step_path(points, 10.0, lambda t: t, lambda v: 10 - v) == want


def test_report_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    status = cli.main(["simulate", str(SCENARIOS / "borrow-within-cohort.yaml"),
                       "--html", str(out), "-o", "json"])
    assert status == 0
    html = out.read_text()
    assert [m for m in re.findall(r'<section class="queue" data-name="([^"]+)"', html)] == [
        "batch", "prod", "spare"]
    assert html.count('class="eviction"') == 1
    assert "b/cheap evicted: Preempted InCohortReclaimWhileBorrowing" in html
    assert "<script" not in html and "<link" not in html and "src=" not in html
    assert "--used:" in html  # the dashboard's stylesheet, inline


def test_unwritable_report_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    status = cli.main(["simulate", str(SCENARIOS / "borrow-within-cohort.yaml"),
                       "--html", str(tmp_path / "missing" / "r.html"), "-o", "json"])
    assert status == 1
    assert "cannot write the report" in capsys.readouterr().err
