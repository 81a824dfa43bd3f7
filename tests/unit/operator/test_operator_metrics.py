"""The queue gauges (Kueue's names): what a ClusterQueue exports, and that a queue, a
cell or a cohort label that is gone leaves no series behind."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from admission.engine import Engine
from kuota.operator.metrics import Metrics
from quota.config import AdmissionCheckConfig, CohortConfig, EngineConfig, PreemptionConfig
from tests.builders import ClusterQueueBuilder, WorkloadBuilder, flavor, local_queue


@dataclass
class Controller:
    engine: Engine | None


def engine(**cq_fields: object) -> Engine:
    e = Engine(config=EngineConfig(), rng=random.Random(1))
    e.apply(flavor("f"))
    e.apply(CohortConfig("co"))
    e.apply(queue(**cq_fields))
    e.apply(local_queue("cq", name="lq"))
    return e


def queue(cohort: str = "co", borrowing: int | None = 2, lending: int | None = None,
          **fields: object) -> ClusterQueueBuilder:
    return ClusterQueueBuilder("cq").cohort(cohort).flavor(
        "f", {"cpu": 4}, borrowing=None if borrowing is None else {"cpu": borrowing},
        lending=None if lending is None else {"cpu": lending}).set(**fields).obj()


def submit(e: Engine, name: str, cpu: int) -> None:
    e.submit(WorkloadBuilder(name).pod_set(count=cpu, cpu=1).obj())


def sample(m: Metrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def series(m: Metrics, cluster_queue: str = "cq") -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """Every sample naming ``cluster_queue``: (metric, labels)."""
    return {(s.name, tuple(sorted(s.labels.items())))
            for family in m.registry.collect() for s in family.samples
            if s.labels.get("cluster_queue") == cluster_queue}


CELL = {"cohort": "co", "cluster_queue": "cq", "flavor": "f", "resource": "cpu"}


class TestFigures:
    def test_a_queue_exports_its_waiting_holding_and_quota(self) -> None:
        e = engine()
        for name in ("a", "b", "c"):
            submit(e, name, 3)  # 4 cpu + 2 borrowable: one fits
        e.run_until_idle(0)
        m = Metrics()
        m.observe_queues(Controller(e))
        got = {
            "active": sample(m, "kueue_pending_workloads", cluster_queue="cq", status="active"),
            "inadmissible": sample(m, "kueue_pending_workloads", cluster_queue="cq",
                                   status="inadmissible"),
            "reserving": sample(m, "kueue_reserving_active_workloads", cluster_queue="cq"),
            "admitted": sample(m, "kueue_admitted_active_workloads", cluster_queue="cq"),
            "status": sample(m, "kueue_cluster_queue_status", cluster_queue="cq",
                             status="active"),
            "usage": sample(m, "kueue_cluster_queue_resource_usage", **CELL),
            "nominal": sample(m, "kueue_cluster_queue_nominal_quota", **CELL),
            "borrowing": sample(m, "kueue_cluster_queue_borrowing_limit", **CELL),
            "lending": sample(m, "kueue_cluster_queue_lending_limit", **CELL),
        }
        assert got == {"active": 0.0, "inadmissible": 2.0, "reserving": 1.0, "admitted": 1.0,
                       "status": 1.0, "usage": 3.0, "nominal": 4.0, "borrowing": 2.0,
                       "lending": None}

    def test_reserved_but_not_admitted_counts_as_reserving_only(self) -> None:
        e = engine(admission_checks=(("gate", ()),))
        e.apply(AdmissionCheckConfig("gate", "example.com/gate"))
        submit(e, "w", 2)
        e.run_until_idle(0)
        m = Metrics()
        m.observe_queues(Controller(e))
        assert (sample(m, "kueue_reserving_active_workloads", cluster_queue="cq"),
                sample(m, "kueue_admitted_active_workloads", cluster_queue="cq"),
                sample(m, "kueue_cluster_queue_resource_reservation", **CELL),
                sample(m, "kueue_cluster_queue_resource_usage", **CELL)) == (1, 0, 2, 0)
        e.set_check("ns/w", "gate", "Ready", 1)
        m.observe_queues(Controller(e))
        assert (sample(m, "kueue_admitted_active_workloads", cluster_queue="cq"),
                sample(m, "kueue_cluster_queue_resource_usage", **CELL)) == (1, 2)

    def test_a_change_after_an_unchanged_export_is_seen(self) -> None:
        e = engine()
        m = Metrics()
        m.observe_queues(Controller(e))
        m.observe_queues(Controller(e))
        submit(e, "late", 1)
        m.observe_queues(Controller(e))
        assert sample(m, "kueue_pending_workloads", cluster_queue="cq", status="active") == 1


class TestSeriesThatGo:
    @pytest.mark.parametrize(("change", "want_cell"), [
        ("delete", None),
        ("new cohort", {**CELL, "cohort": "other"}),
        ("no borrowing limit", CELL),
    ])
    def test_no_series_is_left_behind(self, change: str,
                                      want_cell: dict[str, str] | None) -> None:
        e = engine()
        submit(e, "w", 1)
        e.run_until_idle(0)
        m = Metrics()
        for event in e.drain_outbox():  # the admission counted, its wait observed
            m.observe_event(event, Controller(e))
        m.observe_queues(Controller(e))
        e.finish("ns/w", 1)
        if change == "delete":
            e.delete("ClusterQueue", "cq")
        elif change == "new cohort":
            e.apply(CohortConfig("other"))
            e.apply(queue(cohort="other"))
        else:
            e.apply(queue(borrowing=None))
        m.observe_queues(Controller(e))
        cells = {dict(labels).get("cohort") for _, labels in series(m) if "cohort" in
                 dict(labels)}
        assert cells == ({want_cell["cohort"]} if want_cell else set())
        limits = {name for name, _ in series(m) if name.endswith("borrowing_limit")}
        assert limits == ({"kueue_cluster_queue_borrowing_limit"}
                          if change == "new cohort" else set())
        if want_cell is None:
            assert series(m) == set()
        else:
            assert sample(m, "kueue_cluster_queue_nominal_quota", **want_cell) == 4.0

    def test_a_scheduler_that_stops_leading_clears_every_queue(self) -> None:
        e = engine()
        m = Metrics()
        m.observe_queues(Controller(e))
        m.clear_queues()
        assert series(m) == set()
        m.observe_queues(Controller(e))
        assert sample(m, "kueue_cluster_queue_nominal_quota", **CELL) == 4.0


class TestEvictedRunTime:
    """kuota_evicted_run_seconds_total: the run time evictions throw away (issue 43)."""

    def test_an_eviction_counts_what_ran_since_the_admission_once(self) -> None:
        e = Engine(config=EngineConfig(), rng=random.Random(1), wait_for_stop=True)
        e.apply(flavor("f"))
        e.apply(ClusterQueueBuilder("cq").flavor("f", {"cpu": 4}).set(
            preemption=PreemptionConfig(within_cluster_queue="LowerPriority")).obj())
        e.apply(local_queue("cq", name="lq"))
        low = e.submit(WorkloadBuilder("low").pod_set(count=4, cpu=1).created(0).obj())
        e.run_until_idle(0)
        e.submit(WorkloadBuilder("high").pod_set(count=4, cpu=1).priority(5).created(90)
                 .obj())
        e.run_until_idle(90)
        m = Metrics()
        for event in e.drain_outbox():  # (the operator observes each round's events)
            m.observe_event(event, Controller(e))
        e.stopped(low.info.key, 95)  # its pods gone: Evicted now, counted already
        for event in e.drain_outbox():
            m.observe_event(event, Controller(e))
        assert sample(m, "kuota_evicted_run_seconds_total", cluster_queue="cq",
                      reason="Preempted") == 90.0
        assert sample(m, "kueue_evicted_workloads_total", cluster_queue="cq",
                      reason="Preempted") == 1.0
