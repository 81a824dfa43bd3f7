"""The dashboard's page model: numbers read from a real engine, per cell and per queue."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from admission.engine import Engine
from kuota.dashboard import model
from kuota.dashboard.model import Cell, Counts, Facts, TreeNode
from kuota.explanation import WorkloadView
from quota.lifecycle import State
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, cohort, flavor, local_queue


@dataclass(frozen=True)
class Job:
    name: str
    queue: str  # ClusterQueue name; its LocalQueue is ns/<name>
    cpu: int
    priority: int = 0
    at: float = 0.0


def engine_with(queues: dict[str, tuple[int, int | None]], *, lend: dict[str, int] | None = None,
                cohort_cpu: int = 0) -> Engine:
    """ClusterQueues in cohort ``co``: name -> (nominal cpu, borrowing limit)."""
    engine = Engine()
    engine.apply(flavor("default"))
    engine.apply(cohort("co", cpu=cohort_cpu))
    for name, (nominal, limit) in queues.items():
        b = ClusterQueueBuilder(name).cohort("co").flavor(
            "default", {"cpu": nominal}, borrowing=None if limit is None else {"cpu": limit},
            lending=None if not lend or name not in lend else {"cpu": lend[name]})
        engine.apply(b.obj())
        engine.apply(local_queue(name, name=name))
    return engine


def run(engine: Engine, jobs: list[Job]) -> None:
    for job in jobs:
        engine.submit(WorkloadBuilder(job.name, queue=job.queue).pod_set(count=job.cpu, cpu=1)
                      .priority(job.priority).created(job.at).obj())
    engine.run_until_idle(100.0)
    engine.drain_outbox()


def cell(node: TreeNode) -> Cell:
    (only,) = node.cells
    return only


def node_named(ov: model.Overview, name: str) -> TreeNode:
    found = next((n for n in model.walk(ov.roots) if n.name == name), None)
    assert found is not None, name
    return found


M = 1000  # milli-units per cpu


@dataclass(frozen=True)
class CellCase:
    id: str
    queues: dict[str, tuple[int, int | None]]
    jobs: list[Job]
    want: dict[str, tuple[int, int, int, int]]  # node -> (nominal, used, borrowed, lent) cpu
    lend: dict[str, int] = field(default_factory=dict)
    cohort_cpu: int = 0


CELL_CASES = [
    CellCase("idle tree: nominal only", {"a": (4, None), "b": (4, None)}, [],
             {"a": (4, 0, 0, 0), "b": (4, 0, 0, 0), "co": (8, 0, 0, 0)}),
    CellCase("within nominal: used, nothing borrowed or lent",
             {"a": (4, None), "b": (4, None)}, [Job("j", "a", 3)],
             {"a": (4, 3, 0, 0), "b": (4, 0, 0, 0), "co": (8, 3, 0, 0)}),
    CellCase("a borrows 2 from b's idle quota: b lends 2",
             {"a": (4, None), "b": (4, None)}, [Job("j", "a", 6)],
             {"a": (4, 6, 2, 0), "b": (4, 0, 0, 2), "co": (8, 6, 0, 0)}),
    CellCase("two lenders share the loan by what each could lend",
             {"a": (2, None), "b": (4, None), "c": (2, None)}, [Job("j", "a", 5)],
             {"a": (2, 5, 3, 0), "b": (4, 0, 0, 2), "c": (2, 0, 0, 1)}),
    CellCase("a lendingLimit caps what a lender is shown lending",
             {"a": (2, None), "b": (4, None), "c": (4, None)}, [Job("j", "a", 4)],
             {"a": (2, 4, 2, 0), "b": (4, 0, 0, 0), "c": (4, 0, 0, 2)}, lend={"b": 0}),
    CellCase("the cohort's own quota lends too", {"a": (2, None)}, [Job("j", "a", 3)],
             {"a": (2, 3, 1, 0), "co": (4, 3, 0, 1)}, cohort_cpu=2),
]


@pytest.mark.parametrize("case", CELL_CASES, ids=lambda c: c.id)
def test_cells(case: CellCase) -> None:
    engine = engine_with(case.queues, lend=case.lend, cohort_cpu=case.cohort_cpu)
    run(engine, case.jobs)
    ov = model.overview(engine, {}, source="test")
    got = {name: (c.nominal // M, c.used // M, c.borrowed // M, c.lent // M)
           for name in case.want for c in [cell(node_named(ov, name))]}
    assert got == case.want


@pytest.mark.parametrize(("nominal", "used", "limit", "want_scale", "want_used_percent"), [
    pytest.param(4, 2, None, 4, 50.0, id="no borrowing limit: the bar is nominal"),
    pytest.param(4, 6, 4, 8, 75.0, id="limit: the bar is nominal plus limit"),
    pytest.param(4, 6, None, 6, 100.0, id="used beyond nominal without limit: the bar grows"),
    pytest.param(0, 0, None, 1, 0.0, id="no quota at all: no division by zero"),
])
def test_cell_scale(nominal: int, used: int, limit: int | None, want_scale: int,
                    want_used_percent: float) -> None:
    c = Cell("f", "cpu", nominal, used, max(0, used - nominal), 0, limit)
    assert (c.scale, c.percent(c.used)) == (want_scale, want_used_percent)


def test_counts_positions_and_reasons() -> None:
    engine = engine_with({"a": (4, 0), "b": (4, 0)})
    run(engine, [Job("runs", "a", 4), Job("b1", "b", 1)])
    run(engine, [Job("old", "a", 2, at=1), Job("urgent", "a", 2, 5, at=2)])
    view = WorkloadView("ns/old", State.PENDING.value, "Pending", "couldn't assign flavors")
    ov = model.overview(engine, {"ns/old": Facts(view)}, source="test")
    assert node_named(ov, "a").counts == Counts(pending=2, reserving=1, admitted=1)
    assert node_named(ov, "co").counts == Counts(pending=2, reserving=2, admitted=2)
    assert [(p.key, p.position, p.local_position) for p in ov.pending["a"]] == [
        ("ns/urgent", 0, 0), ("ns/old", 1, 1)]
    assert ov.pending["a"][1].waits_because == "Pending: couldn't assign flavors"
    assert ov.pending["a"][0].waits_because == "not tried yet"
    assert [(r.key, r.counts) for r in ov.local_queues] == [
        ("ns/a", Counts(2, 1, 1)), ("ns/b", Counts(0, 1, 1))]
    assert [(r.key, r.state, r.flavors) for r in ov.running] == [
        ("ns/runs", "Admitted", "main×4: default"), ("ns/b1", "Admitted", "main×1: default")]
    assert ov.totals() == Counts(2, 2, 2)


def test_an_admission_changes_the_overview() -> None:
    """The server re-renders only when two overviews differ: an admission must differ."""
    engine = engine_with({"a": (4, None)})
    before = model.overview(engine, {}, source="test")
    assert before == model.overview(engine, {}, source="test")
    run(engine, [Job("j", "a", 1)])
    assert model.overview(engine, {}, source="test") != before


@pytest.mark.parametrize(("entries", "want"), [
    pytest.param([{"at": 10.0, "event": "Submitted"}], [(10.0, "Submitted", "")],
                 id="bare event"),
    pytest.param([{"at": 11, "event": "Placed", "attempt": 1, "nodes": ["n1", "n2"]}],
                 [(11.0, "Placed", "attempt=1, nodes=n1 n2")], id="fields as key=value"),
    pytest.param([{"event": "Evicted", "reason": "Preempted", "message": ""}],
                 [(None, "Evicted", "reason=Preempted")], id="no time, empty fields dropped"),
])
def test_history_rows(entries: list[dict[str, object]],
                      want: list[tuple[float | None, str, str]]) -> None:
    assert [(r.at, r.event, r.detail) for r in model.history_rows(entries)] == want
