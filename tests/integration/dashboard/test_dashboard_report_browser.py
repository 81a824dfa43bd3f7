"""``kuota simulate --html`` opened in chromium from a file, offline: every ClusterQueue's
timeline is drawn, the eviction is marked where it happened, nothing is fetched.
Screenshot: simulate-report.png under $KUOTA_TEST_ARTIFACTS/dashboard."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kuota import cli
from tests.integration.dashboard import browser

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "borrow-within-cohort.yaml"


def test_the_report_draws_each_queue_and_marks_the_eviction(tmp_path: Path, page: Any) -> None:
    report = tmp_path / "report.html"
    assert cli.main(["simulate", str(SCENARIO), "--html", str(report), "-o", "json"]) == 0
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())
    assert page.locator("section.queue h2").all_inner_texts() == [
        "ClusterQueue batch cohort pool", "ClusterQueue prod cohort pool",
        "ClusterQueue spare cohort pool"]
    batch = page.locator('section.queue[data-name="batch"] svg')
    box = batch.bounding_box()
    eviction = batch.locator("line.eviction").bounding_box()
    assert box is not None and eviction is not None
    # Evicted at 5 s of 125 s: near the left of the plot (which starts 13 % in).
    assert 0.13 < (eviction["x"] - box["x"]) / box["width"] < 0.2
    assert batch.locator("path.area-borrowed").count() == 1
    assert requests == [report.as_uri()]  # self-contained: nothing else loaded
    path = browser.artifacts() / "simulate-report.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
