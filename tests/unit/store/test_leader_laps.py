"""Where a leader step's time goes: the stages it is timed by, the slow-step warning that
names them, and the metric that sums them (kuota.service.laps)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from kuota.service.laps import StepLaps
from kuota.service.metrics import SchedulerMetrics
from tests.unit.store.store_builders import SteppedPool

STAGE_METRIC = "kuota_scheduler_step_stage_seconds_total"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class LapsCase:
    name: str
    #: (seconds the clock moves, then the stage lapped); "" for a step's start.
    script: list[tuple[float, str]]
    want_last: dict[str, float]
    want_line: str


LAPS_CASES = [
    LapsCase("each stage has the time since the lap before",
             [(0, ""), (0.5, "read"), (1.25, "follow"), (0.25, "persist")],
             {"read": 0.5, "follow": 1.25, "persist": 0.25},
             "follow 1.25 s, read 0.50 s, persist 0.25 s"),
    LapsCase("a stage lapped twice in a step adds up",
             [(0, ""), (0.5, "persist"), (0.25, "place"), (0.5, "persist")],
             {"persist": 1.0, "place": 0.25}, "persist 1.00 s, place 0.25 s"),
    LapsCase("time before the step's start is no stage's",
             [(9.0, "read"), (0, ""), (0.125, "read")], {"read": 0.125}, "read 0.12 s"),
    LapsCase("stages under 5 ms are left out of the line",
             [(0, ""), (0.001, "wait"), (0.5, "cycles")], {"wait": 0.001, "cycles": 0.5},
             "cycles 0.50 s"),
    LapsCase("a step of short stages says so",
             [(0, ""), (0.001, "read"), (0.002, "follow")], {"read": 0.001, "follow": 0.002},
             "every stage under 5 ms"),
]


@pytest.mark.parametrize("case", LAPS_CASES, ids=lambda c: c.name)
def test_a_steps_stages_are_timed_from_lap_to_lap(case: LapsCase) -> None:
    clock = FakeClock()
    laps = StepLaps(clock)
    for moved, stage in case.script:
        clock.now += moved
        if stage:
            laps.lap(stage)
        else:
            laps.start()
    assert laps.last == pytest.approx(case.want_last)
    assert laps.line() == case.want_line


def test_the_totals_sum_every_step_and_nothing_is_timed_after_the_end() -> None:
    clock = FakeClock()
    laps = StepLaps(clock)
    for follow in (1.0, 2.0):
        laps.start()
        clock.now += follow
        laps.end("follow")
        clock.now += 5.0  # (between steps: the service's own work, not the leader's)
        laps.lap("follow")
    assert laps.last == {"follow": 2.0}
    assert laps.total == {"follow": 3.0}


def test_a_leader_step_is_timed_by_its_stages() -> None:
    pool = SteppedPool()
    for i in range(3):
        pool.submit(f"w{i}")
    pool.run(steps=1)
    laps = pool.scheduler.leader.laps
    # The stages every step goes through; a workload admitted: decided, persisted, placed.
    assert {"wait", "lease and intake", "read", "follow", "cycles", "persist", "dispatch",
            "place"} <= laps.last.keys()
    assert all(seconds >= 0 for seconds in laps.last.values())
    pool.run(steps=1)
    assert all(laps.total[stage] >= laps.last[stage] for stage in laps.last)


def test_a_slow_step_is_logged_with_its_longest_stages(caplog: pytest.LogCaptureFixture) -> None:
    pool = SteppedPool()
    clock = FakeClock()
    laps = StepLaps(clock)
    laps.start()
    clock.now += 8.0
    laps.lap("follow")
    clock.now += 3.0
    laps.end("persist")
    with caplog.at_level(logging.WARNING, logger="kuota.service.scheduler"):
        pool.scheduler._stepped(11.0, laps)
    assert "slow step: 11.00 s, more than a third of the 30.0 s lease " \
           "(follow 8.00 s, persist 3.00 s)" in caplog.text


def test_the_stage_metric_adds_each_steps_stages_across_leaders() -> None:
    pool = SteppedPool()
    metrics = SchedulerMetrics(clock=lambda: pool.now)

    def exported(stage: str) -> float:
        return metrics.registry.get_sample_value(STAGE_METRIC, {"stage": stage}) or 0.0

    pool.submit("w0")
    pool.run(steps=1)
    metrics.observe(pool.scheduler)
    first = pool.scheduler.leader.laps.total["follow"]
    assert exported("follow") == pytest.approx(first)
    pool.run(steps=1)
    metrics.observe(pool.scheduler)
    assert exported("follow") == pytest.approx(pool.scheduler.leader.laps.total["follow"])
    # A new leader's laps start from zero: what the old one counted stays counted.
    before = exported("follow")
    pool.restart_scheduler()
    pool.run(steps=1)
    metrics.observe(pool.scheduler)
    assert exported("follow") == pytest.approx(
        before + pool.scheduler.leader.laps.total["follow"])
