"""The dashboard's HTML: bar geometry, escaping, links, pages, pagination."""

from __future__ import annotations

import re

import pytest

from kuota.dashboard import render
from kuota.dashboard.model import (
    Cell,
    Counts,
    Facts,
    HistoryRow,
    LocalQueueRow,
    Overview,
    PendingRow,
    RunningRow,
    TreeNode,
    WorkloadPage,
)
from kuota.explanation import WorkloadView


def segments(html: str) -> dict[str, tuple[float, float]]:
    """class -> (left %, width %) of each segment of a bar."""
    return {m[1]: (float(m[2]), float(m[3])) for m in re.finditer(
        r'class="seg (\w+)" style="left:([\d.]+)%;width:([\d.]+)%"', html)}


@pytest.mark.parametrize(("cell", "want_segments", "want_mark"), [
    pytest.param(Cell("f", "cpu", 4000, 2000), {"used": (0.0, 50.0)}, 100.0,
                 id="half used"),
    pytest.param(Cell("f", "cpu", 4000, 6000, 2000, 0, 4000),
                 {"used": (0.0, 50.0), "borrowed": (50.0, 25.0)}, 50.0,
                 id="borrowing: own part, then the borrowed part after the nominal mark"),
    pytest.param(Cell("f", "cpu", 4000, 1000, 0, 2000),
                 {"used": (0.0, 25.0), "lent": (25.0, 50.0)}, 100.0,
                 id="lending: drawn in the unused part of nominal"),
    pytest.param(Cell("f", "cpu", 4000, 0), {}, 100.0, id="idle: no segment, only the mark"),
])
def test_bar(cell: Cell, want_segments: dict[str, tuple[float, float]],
             want_mark: float) -> None:
    html = render.bar(cell)
    assert segments(html) == want_segments
    assert f'class="mark" style="left:{want_mark}%"' in html


@pytest.mark.parametrize(("cell", "want"), [
    pytest.param(Cell("f", "cpu", 4000, 2000), "2 / 4", id="plain"),
    pytest.param(Cell("f", "cpu", 4000, 6000, 2000, 0, 4000), "6 / 4, borrowed 2, limit +4",
                 id="borrowed with limit"),
    pytest.param(Cell("f", "memory", 2 * 1024**3 * 1000, 0, 0, 1024**3 * 1000), "0 / 2Gi, lent 1Gi",
                 id="memory in binary units"),
    pytest.param(Cell("f", "cpu", 1500, 500), "500m / 1500m", id="fractions in milli"),
])
def test_cell_text(cell: Cell, want: str) -> None:
    assert render.cell_text(cell) == want


def overview(pending: int = 3) -> Overview:
    cq = TreeNode("team<a>", "ClusterQueue", (Cell("f", "cpu", 4000, 2000),),
                  Counts(pending, 1, 1))
    rows = tuple(PendingRow(f"ns/w{i}", "team<a>", i, "ns/lq", i, 0, "Pending",
                            "insufficient quota <cpu>") for i in range(pending))
    running = (RunningRow("ns/r", "team<a>", "ns/lq", "Admitted", "main×1: f", "", ("n1",),
                          0.0),)
    return Overview("test", (TreeNode("co", "Cohort", (), Counts(pending, 1, 1), (cq,)),),
                    (LocalQueueRow("ns/lq", "team<a>", Counts(pending, 1, 1)),),
                    {"team<a>": rows}, running)


def test_overview_escapes_and_links() -> None:
    html = render.overview_page(overview())
    assert "team<a>" not in html and "team&lt;a&gt;" in html
    assert 'href="/clusterqueues/team%3Ca%3E"' in html
    assert 'href="/workloads/ns/w0"' in html and 'href="/localqueues/ns/lq"' in html
    assert "Pending: insufficient quota &lt;cpu&gt;" in html
    assert '<b id="total-pending">3</b>' in html


@pytest.mark.parametrize(("pending", "page", "want_rows", "want_pager"), [
    pytest.param(3, 0, 3, False, id="one page"),
    pytest.param(render.PAGE_ROWS + 1, 0, render.PAGE_ROWS, True, id="first of two"),
    pytest.param(render.PAGE_ROWS + 1, 1, 1, True, id="second of two"),
    pytest.param(render.PAGE_ROWS + 1, 9, 1, True, id="past the end: the last page"),
])
def test_cluster_queue_pages(pending: int, page: int, want_rows: int, want_pager: bool) -> None:
    html = render.cluster_queue_page(overview(pending), "team<a>", page)
    assert html is not None
    body = html.split('<table class="pending">')[1].split("</table>")[0]
    assert body.count("<tr data-key=") == want_rows
    assert ('class="pager"' in html) == want_pager


def test_unknown_queue_is_none() -> None:
    assert render.cluster_queue_page(overview(), "nope") is None
    assert render.local_queue_page(overview(), "ns/nope") is None


def test_workload_page() -> None:
    view = WorkloadView("ns/w0", "Pending", "Pending", "waits <here>", "ns/lq", "team<a>")
    page = WorkloadPage(Facts(view), "Workload ns/w0: still pending",
                        position=overview().pending["team<a>"][0],
                        history=(HistoryRow(0.0, "Submitted", ""),))
    html = render.workload_page(page)
    assert "waits &lt;here&gt;" in html
    assert "0 in ClusterQueue team&lt;a&gt;, 0 in its LocalQueue" in html
    assert '<td class="event">Submitted</td>' in html
    assert "1970-01-01 00:00:00" in html


def test_layout_wraps_the_fragment_with_its_version() -> None:
    html = render.layout("T", "<p>x</p>", version="7", source="Redis <x>")
    assert '<main data-version="7"><p>x</p></main>' in html
    assert "Redis &lt;x&gt;" in html
    assert 'src="/static/dashboard.js"' in html and "http" not in html  # nothing external
