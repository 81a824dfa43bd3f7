"""One explanation of a waiting workload, from the engine's own state (issue 41).

Why: ``kuota why``, ``kubectl kuota why``, ``describe`` and the dashboard led with
multi-cluster dispatch ("no multi-cluster dispatch decision yet") even on a single
pool and for a job that would never get quota; a lender's priority-10 job waited
behind a borrower's job with only "1 more needed": nothing named the borrower, its
queue, or the ``reclaimWithinCohort`` setting that decides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from admission import explain
from admission.engine import Engine
from kuota import explanation
from kuota.explanation import WorkloadView
from quota.config import AdmissionCheckConfig
from tests.builders import WorkloadBuilder, gpu_pool


def lender_behind_borrower(reclaim: str, *, borrower_priority: int = 0) -> Engine:
    """team-a's ns/long borrows 1 of team-b's 2 GPUs; team-b's ns/lender-job (priority 10)
    then asks for its own 2."""
    engine = Engine()
    engine.apply_all(gpu_pool(reclaim=reclaim))
    engine.submit(WorkloadBuilder("long").pod_set(gpu=3).priority(borrower_priority).obj())
    engine.run_until_idle(0)
    engine.submit(WorkloadBuilder("lender-job", queue="lq-b").pod_set(gpu=2).priority(10)
                  .created(1).obj())
    engine.run_until_idle(1)
    return engine


def with_waiting(*workloads: WorkloadBuilder, cycles: bool = True) -> Engine:
    """Two GPU teams (:func:`gpu_pool`) with ``workloads`` submitted, tried when ``cycles``."""
    engine = Engine()
    engine.apply_all(gpu_pool())
    for w in workloads:
        engine.submit(w.obj())
    if cycles:
        engine.run_until_idle(0)
    return engine


#: A GPU request under a vendor prefix the ClusterQueue does not cover.
TYPO: dict[str, Any] = {"example.com/gpu": 1}


@dataclass
class Case:
    engine: Engine
    key: str
    want_lines: list[str] = field(default_factory=list)
    want_not: list[str] = field(default_factory=list)


CASES = [
    pytest.param(Case(lender_behind_borrower("Never"), "ns/lender-job", [
        "Workload ns/lender-job is Pending in ClusterQueue team-b (LocalQueue ns/lq-b).",
        "Position: 0 of 1 in ClusterQueue team-b, 0 in LocalQueue ns/lq-b (0 is next)",
        "  nvidia.com/gpu in flavor a100: needs 2, free 1, at most 4 ever",
        "    ClusterQueue team-b: uses 0 of 2",
        "    Cohort co: uses 3 of 4",
        "    borrowed by ClusterQueue team-a (1 above its nominal quota): ns/long (3, "
        "priority 0)",
        "    preemption: reclaimWithinCohort is Never on ClusterQueue team-b: it does not "
        "take back the quota it lent; it waits for the borrowers' workloads to end",
        "  - flavor a100: 1 more nvidia.com/gpu must be free: borrowers hold it (ns/long), "
        "free once they end or are preempted"]),
        id="the borrower, its queue and reclaimWithinCohort: Never are named"),
    pytest.param(Case(lender_behind_borrower("LowerPriority", borrower_priority=20),
                      "ns/lender-job", [
        "    preemption: reclaimWithinCohort is LowerPriority on ClusterQueue team-b, and no "
        "borrowing workload has a priority below 10"]),
        id="LowerPriority: why the borrower cannot be reclaimed"),
    pytest.param(Case(with_waiting(WorkloadBuilder("huge").pod_set(count=2, gpu=4)),
                      "ns/huge", [
        "It can never be admitted as the queues are configured: ExceedsMaxQuota: couldn't "
        "assign flavors to pod set main: nvidia.com/gpu in flavor a100: request 8 exceeds "
        "the most ClusterQueue team-a can ever get (4) by 4",
        "Pod set main: 2 pods",
        "  - flavor a100: ask for at most 4 nvidia.com/gpu in pod set main, or raise the "
        "quota (nominalQuota, borrowingLimit, the cohort's) by 4"],
        want_not=["Waiting:"]),
        id="never fits: said first, with what would make it fit"),
    pytest.param(Case(with_waiting(WorkloadBuilder("typo").pod_set(**TYPO)),
                      "ns/typo", [
        "  example.com/gpu: no resourceGroup of ClusterQueue team-a covers it",
        "  - request only resources ClusterQueue team-a covers (cpu, nvidia.com/gpu): "
        "example.com/gpu is not one (did you mean nvidia.com/gpu?)"]),
        id="a typo: the resource it meant"),
    pytest.param(Case(with_waiting(WorkloadBuilder("huge").pod_set(gpu=8),
                                   WorkloadBuilder("small").pod_set(gpu=1).created(1),
                                   cycles=False),
                      "ns/huge", [
        "Position: 1 of 2 in ClusterQueue team-a, 1 in LocalQueue ns/lq (0 is next); set "
        "aside as inadmissible: it blocks no one, and is tried again when a queue object "
        "changes"]),
        id="set aside: after the ones that can run, blocking no one"),
    pytest.param(Case(with_waiting(WorkloadBuilder("lost", queue="nope").pod_set(gpu=1)),
                      "ns/lost", [
        "It can never be admitted as the queues are configured: LocalQueueNotFound: "
        "LocalQueue nope doesn't exist in namespace ns",
        "  - create LocalQueue ns/nope, or submit to one that exists (in ns: ns/lq, ns/lq-b)"]),
        id="a LocalQueue that does not exist"),
]


@pytest.mark.parametrize("case", CASES)
def test_explanation(case: Case) -> None:
    text = explain.render(explain.explain(case.engine, case.key))
    lines = text.splitlines()
    for want in case.want_lines:
        assert want in lines, text
    for unwanted in case.want_not:
        assert unwanted not in text, text


def multicluster(engine: Engine) -> Engine:
    engine.apply(AdmissionCheckConfig("dispatch", "kuota.dev/multicluster"))
    cq = engine.cache.cluster_queues["team-b"]
    engine.apply(replace(cq, admission_checks=(("dispatch", ()),)))
    return engine


@pytest.mark.parametrize(("engine", "want_dispatch"), [
    pytest.param(lender_behind_borrower("Never"), False, id="a single pool: no dispatch text"),
    pytest.param(multicluster(lender_behind_borrower("Never")), True,
                 id="a multi-cluster ClusterQueue: the dispatch state follows"),
])
def test_dispatch_only_for_multicluster_workloads(engine: Engine, want_dispatch: bool) -> None:
    view = WorkloadView("ns/lender-job", "Pending", queue="lq-b")
    text = explanation.why(view, engine)
    assert text.startswith("Workload ns/lender-job is Pending in ClusterQueue team-b")
    assert ("Dispatch:\n  No decision yet: a member cluster is chosen once quota is reserved."
            in text) is want_dispatch, text
    assert "multi-cluster" not in text
    described = explanation.describe(view, engine)
    assert "ClusterQueue: team-b" in described.replace("  ", " "), described
