"""Waiting workloads on the dashboard: every one has a place, named whole (issue 41).

Why: a gang no node could hold was deactivated and vanished from every page; a
never-fitting workload was listed as if it blocked the others; the workload page showed
``ClusterQueue: -`` for a pending workload and neither what it asked for nor its logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from admission.engine import Engine
from kuota import explanation
from kuota.dashboard import model, render
from kuota.dashboard.model import Facts
from kuota.explanation import WorkloadView
from tests.builders import WorkloadBuilder, gpu_pool


def engine_with(*workloads: WorkloadBuilder, deactivate: str = "") -> Engine:
    engine = Engine()
    engine.apply_all(gpu_pool())
    for w in workloads:
        engine.submit(w.obj())
    if deactivate:
        engine.deactivate(deactivate, 1, "RequeuingLimitExceeded",
                          "pods were not ready within 20s, 2 times")
    return engine


@dataclass
class Case:
    engine: Engine
    want_pending: list[tuple[str, bool]] = field(default_factory=list)
    want_inactive: list[tuple[str, str, str]] = field(default_factory=list)
    want_html: list[str] = field(default_factory=list)


@pytest.mark.parametrize("case", [
    pytest.param(Case(engine_with(WorkloadBuilder("gang").pod_set(count=4, gpu=1),
                                  deactivate="ns/gang"),
                      want_inactive=[("ns/gang", "team-a", "RequeuingLimitExceeded")],
                      want_html=['<h2 id="inactive">Deactivated</h2>',
                                 '<td class="reason">RequeuingLimitExceeded</td>']),
                 id="deactivated: listed, with its reason"),
    pytest.param(Case(engine_with(WorkloadBuilder("huge").pod_set(gpu=8),
                                  WorkloadBuilder("small").pod_set(gpu=1).created(1)),
                      want_pending=[("ns/small", False), ("ns/huge", True)],
                      want_html=['<td class="state">Inadmissible (blocks no one)</td>']),
                 id="never fits: last, blocking no one"),
])
def test_every_waiting_workload_has_a_place(case: Case) -> None:
    ov = model.overview(case.engine, {}, source="test")
    assert [(r.key, r.inadmissible) for r in ov.pending.get("team-a", ())] == case.want_pending
    assert [(r.key, r.cluster_queue, r.reason) for r in ov.inactive] == case.want_inactive
    html = render.overview_page(ov)
    for want in case.want_html:
        assert want in html, html


MANIFEST = {"spec": {"podSets": [{"name": "main", "count": 4, "template": {"spec": {
    "containers": [{"name": "c", "command": ["python", "train.py"], "args": ["--lr", "0.1 x"],
                    "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}]}}}]}}


def test_workload_page_shows_requests_command_logs_and_its_cluster_queue() -> None:
    engine = engine_with(WorkloadBuilder("w").pod_set(gpu=1))
    view = WorkloadView("ns/w", "Pending", queue="lq",
                        details=explanation.pod_set_details(MANIFEST))
    ov = model.overview(engine, {}, source="test")
    page = model.workload_page(Facts(view), ov, logs_url="/workloads/ns/w/logs")
    html = render.workload_page(page)
    assert "<dt>Requests main</dt><dd>4 pods × cpu=2, nvidia.com/gpu=1</dd>" in html
    assert "<dt>Command main</dt><dd>python train.py --lr &#x27;0.1 x&#x27;</dd>" in html
    assert '<a class="logs" href="/workloads/ns/w/logs">' in html
    assert "<dt>ClusterQueue</dt><dd>team-a</dd>" in html
    assert page.why.startswith("Workload ns/w is Pending in ClusterQueue team-a")


def test_flavor_labels_are_never_cut() -> None:
    """``a100/nvidia.com/gpu`` was cut to ``a100/nvidia.com/gp`` by a 9em column."""
    css = render.stylesheet()
    rule = css[css.index(".cells {"):css.index("}", css.index(".cells {"))]
    assert "grid-template-columns: max-content" in rule, rule
    cell = model.Cell("a100", "nvidia.com/gpu", 4000, 1000)
    assert "<span>a100/nvidia.com/gpu</span>" in render.cells([cell])
