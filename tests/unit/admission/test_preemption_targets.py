"""Classical preemption: candidates per policy, victim order, minimal victim sets."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from admission import preemption
from admission.preemption import classical_targets, fits, satisfies_policy, within_nominal
from quota.cache import QuotaCache
from quota.config import ClusterQueueConfig, CohortConfig
from quota.resources import FlavorResource
from quota.workload import Admission, PodSetAdmission, WorkloadInfo
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor

FR = FlavorResource("f", "cpu")


def running(name: str, cq: str, cpu: int, *, priority: int = 0, at: float = 0.0,
            created: float = 0.0) -> tuple[WorkloadInfo, Admission, float]:
    info = WorkloadBuilder(name, queue=cq).pod_set(count=cpu, cpu=1).priority(priority) \
        .created(created).obj()
    admission = Admission(cq, (PodSetAdmission("main", cpu, {"cpu": "f"}, {"cpu": cpu * 1000}),))
    return info, admission, at


@dataclass
class Case:
    name: str
    queues: list[ClusterQueueConfig]
    running: list[tuple[WorkloadInfo, Admission, float]]
    preemptor_cq: str
    cpu: int
    priority: int = 0
    created: float = 100.0
    want_victims: list[str] = field(default_factory=list)
    want_reasons: list[str] = field(default_factory=list)


def q(name: str, cpu: int, cohort: str | None = "co", **preemption: object) -> ClusterQueueConfig:
    b = ClusterQueueBuilder(name).flavor("f", {"cpu": cpu})
    if cohort:
        b.cohort(cohort)
    if preemption:
        b.preemption(**preemption)
    return b.obj()


CASES = [
    Case("within queue: lower priority, most recent first",
         [q("a", 4, None, within_cluster_queue="LowerPriority")],
         [running("old", "a", 2, at=1), running("new", "a", 2, at=2)],
         "a", 2, priority=5, want_victims=["new"], want_reasons=["InClusterQueue"]),
    Case("within queue: lowest priority before most recent",
         [q("a", 4, None, within_cluster_queue="LowerPriority")],
         [running("p1", "a", 2, priority=1, at=1), running("p2", "a", 2, priority=2, at=2)],
         "a", 2, priority=5, want_victims=["p1"]),
    Case("within queue: equal priority is safe under LowerPriority",
         [q("a", 4, None, within_cluster_queue="LowerPriority")],
         [running("eq", "a", 4, priority=5)], "a", 2, priority=5, want_victims=[]),
    Case("within queue: newer equal priority may go under LowerOrNewerEqualPriority",
         [q("a", 4, None, within_cluster_queue="LowerOrNewerEqualPriority")],
         [running("eq", "a", 4, priority=5, created=200)], "a", 2, priority=5,
         want_victims=["eq"]),
    Case("within queue: Never protects everyone",
         [q("a", 4, None)], [running("low", "a", 4, priority=0)], "a", 2, priority=5,
         want_victims=[]),
    Case("reclaim: a borrower gives back, other queues before own",
         [q("a", 4, reclaim_within_cohort="Any", within_cluster_queue="LowerPriority"),
          q("b", 4)],
         [running("own", "a", 2, priority=0, at=5), running("borrower", "b", 6, priority=9)],
         "a", 2, priority=1, want_victims=["borrower"], want_reasons=["InCohortReclamation"]),
    Case("reclaim without borrowWithinCohort: the preemptor must end within nominal",
         [q("a", 4, reclaim_within_cohort="Any", within_cluster_queue="LowerPriority"),
          q("b", 4)],
         [running("own", "a", 2, priority=0, at=5), running("borrower", "b", 6, priority=9)],
         "a", 4, priority=1, want_victims=["borrower", "own"]),
    Case("reclaim: a queue within its nominal quota is never a victim",
         [q("a", 4, reclaim_within_cohort="Any"), q("b", 4), q("c", 0)],
         [running("b-own", "b", 4), running("c-borrows", "c", 4)],
         "a", 4, want_victims=["c-borrows"]),
    Case("reclaim LowerPriority: higher-priority borrower stays",
         [q("a", 4, reclaim_within_cohort="LowerPriority"), q("b", 0)],
         [running("vip", "b", 8, priority=9)], "a", 4, priority=1, want_victims=[]),
    Case("minimal set: a large victim alone replaces two small ones",
         [q("a", 6, None, within_cluster_queue="LowerPriority")],
         [running("small-1", "a", 1, priority=0, at=3), running("small-2", "a", 1, priority=0,
                                                                  at=2),
          running("big", "a", 4, priority=1, at=1)],
         "a", 4, priority=5, want_victims=["big"]),
    Case("borrowWithinCohort: victims above the threshold stay",
         [q("a", 2, reclaim_within_cohort="LowerPriority", borrow_within_cohort="LowerPriority",
            max_priority_threshold=10), q("b", 4), q("spare", 2)],
         [running("cheap", "b", 3, priority=5), running("dear", "b", 3, priority=50)],
         "a", 5, priority=100, want_victims=["cheap"],
         want_reasons=["InCohortReclaimWhileBorrowing"]),
]


def setup(case: Case) -> tuple[QuotaCache, ClusterQueueConfig]:
    cache = QuotaCache()
    cache.flavors["f"] = flavor("f")
    for cq in case.queues:
        cache.cluster_queues[cq.name] = cq
    cache.rebuild()
    for info, admission, at in case.running:
        cache.assume(info, admission, at)
    return cache, cache.cluster_queues[case.preemptor_cq]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_targets(case: Case) -> None:
    cache, cq = setup(case)
    preemptor = WorkloadBuilder("p", queue=cq.name).pod_set(count=case.cpu, cpu=1) \
        .priority(case.priority).created(case.created).obj()
    snapshot = cache.snapshot()
    before = {n: dict(node.usage) for n, node in snapshot.tree.queues.items()}
    targets = classical_targets(snapshot, cq, preemptor, {FR: case.cpu * 1000}, {FR})
    assert sorted(t.victim.info.name for t in targets) == sorted(case.want_victims)
    if case.want_reasons:
        assert [t.reason for t in targets] == case.want_reasons
    # The snapshot is left exactly as it was.
    assert {n: dict(node.usage) for n, node in snapshot.tree.queues.items()} == before


@pytest.mark.parametrize(("policy", "preemptor", "candidate", "want"), [
    ("Never", (5, 0.0), (0, 1.0), False),
    ("LowerPriority", (5, 0.0), (4, 1.0), True),
    ("LowerPriority", (5, 0.0), (5, 1.0), False),
    ("LowerOrNewerEqualPriority", (5, 0.0), (5, 1.0), True),
    ("LowerOrNewerEqualPriority", (5, 2.0), (5, 1.0), False),
    ("Any", (0, 0.0), (9, 0.0), True),
])
def test_policy(policy: str, preemptor: tuple[int, float], candidate: tuple[int, float],
                want: bool) -> None:
    p = WorkloadBuilder("p").pod_set(cpu=1).priority(preemptor[0]).created(preemptor[1]).obj()
    c = WorkloadBuilder("c").pod_set(cpu=1).priority(candidate[0]).created(candidate[1]).obj()
    assert satisfies_policy(policy, p, c) is want


@settings(max_examples=150, deadline=None)
@given(nominals=st.lists(st.integers(0, 6), min_size=2, max_size=4),
       jobs=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 3)),
                     min_size=1, max_size=10),
       ask=st.integers(1, 6), priority=st.integers(0, 4),
       within=st.sampled_from(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
       reclaim=st.sampled_from(["Never", "LowerPriority", "Any"]))
def test_victims_are_allowed_and_minimal(nominals: list[int], jobs: list[tuple[int, int, int]],
                                         ask: int, priority: int, within: str,
                                         reclaim: str) -> None:
    queues = [q(f"q{i}", n, within_cluster_queue=within, reclaim_within_cohort=reclaim)
              for i, n in enumerate(nominals)]
    cache = QuotaCache()
    cache.flavors["f"] = flavor("f")
    for cq in queues:
        cache.cluster_queues[cq.name] = cq
    cache.rebuild()
    total = sum(nominals)
    used = 0
    for n, (qi, cpu, prio) in enumerate(jobs):
        if used + cpu > total:
            continue
        used += cpu
        info, admission, at = running(f"j{n}", queues[qi % len(queues)].name, cpu,
                                      priority=prio, at=float(n))
        cache.assume(info, admission, at)
    cq = queues[0]
    preemptor = WorkloadBuilder("p", queue=cq.name).pod_set(count=ask, cpu=1) \
        .priority(priority).created(50.0).obj()
    snapshot = cache.snapshot()
    usage = {FR: ask * 1000}
    node = snapshot.tree.queues[cq.name]
    if fits(node, usage, allow_borrowing=True):
        return  # preemption is only asked for when the workload does not fit
    targets = classical_targets(snapshot, cq, preemptor, usage, {FR})
    for t in targets:
        owner = t.cluster_queue
        if owner == cq.name:
            assert within != "Never" and satisfies_policy(within, preemptor, t.victim.info)
        else:
            # Never push another queue below its nominal quota.
            assert reclaim != "Never"
            owner_node = snapshot.tree.queues[owner]
            assert not within_nominal(owner_node, {FR}), owner
    if not targets:
        return
    removed = [t.victim for t in targets]
    for v in removed:
        snapshot.remove(v.admission.cluster_queue, v.admission)
    assert fits(node, usage, allow_borrowing=True), "the victims must make room"

    def each_needed(allow_borrowing: bool) -> bool:
        for v in removed:
            snapshot.add(v.admission.cluster_queue, v.admission)
            still = fits(node, usage, allow_borrowing=allow_borrowing)
            snapshot.remove(v.admission.cluster_queue, v.admission)
            if still:
                return False
        return True

    # Minimal under the rule the set was found with: with borrowing allowed, or,
    # when the preemptor must stay within its nominal quota, without.
    assert each_needed(True) or (fits(node, usage, allow_borrowing=False)
                                 and each_needed(False))


@settings(max_examples=200, deadline=None)
@given(nominals=st.lists(st.integers(0, 6), min_size=4, max_size=4),
       jobs=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 3)),
                     min_size=1, max_size=12),
       preemptor_queue=st.integers(0, 3), ask=st.integers(1, 6), priority=st.integers(0, 4),
       within=st.sampled_from(["Never", "LowerPriority"]),
       reclaim=st.sampled_from(["LowerPriority", "Any"]),
       borrow=st.sampled_from(["Never", "LowerPriority"]))
def test_leaving_out_reclaims_a_queue_over_nominal_cannot_use_changes_no_victim(
        nominals: list[int], jobs: list[tuple[int, int, int]], preemptor_queue: int, ask: int,
        priority: int, within: str, reclaim: str, borrow: str) -> None:
    """A queue over its nominal quota that may not borrow to preempt does not collect the
    candidates it could only reclaim without borrowing (most searches in a busy cohort):
    the victims are those of the search that collects every candidate. Two cohorts under
    a root, so that the advantage of a subtree can come at an upper level."""
    queues = [q(f"q{i}", n, "left" if i < 2 else "right", within_cluster_queue=within,
                reclaim_within_cohort=reclaim, borrow_within_cohort=borrow)
              for i, n in enumerate(nominals)]
    cache = QuotaCache()
    cache.flavors["f"] = flavor("f")
    cache.cohorts["left"] = CohortConfig("left", "root", {})
    cache.cohorts["right"] = CohortConfig("right", "root", {})
    for cq in queues:
        cache.cluster_queues[cq.name] = cq
    cache.rebuild()
    used, total = 0, sum(nominals)
    for n, (qi, cpu, prio) in enumerate(jobs):
        if used + cpu <= total:
            used += cpu
            cache.assume(*running(f"j{n}", queues[qi].name, cpu, priority=prio, at=float(n)))
    cq = queues[preemptor_queue]
    preemptor = WorkloadBuilder("p", queue=cq.name).pod_set(count=ask, cpu=1) \
        .priority(priority).created(50.0).obj()
    usage = {FR: ask * 1000}

    def victims() -> list[tuple[str, str]]:
        snapshot = cache.snapshot()
        return [(t.victim.info.key, t.reason)
                for t in classical_targets(snapshot, cq, preemptor, usage, {FR})]

    found = victims()
    every_candidate = preemption._cohort_candidates

    def collecting_all(*args: object, **kwargs: object) -> object:
        kwargs["reclaims_without_borrowing"] = True
        return every_candidate(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(preemption, "_cohort_candidates", collecting_all)
        assert found == victims()
