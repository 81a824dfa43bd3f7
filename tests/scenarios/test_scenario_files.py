"""Every scenario file under tests/scenarios/ runs and matches its expect: block."""

from __future__ import annotations

from pathlib import Path

import pytest

from kuota.expect import check
from kuota.scenario import load_scenario
from kuota.simulator import simulate

SCENARIOS = sorted(Path(__file__).parent.glob("*.yaml"))


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 15


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.expect, f"{path.name} has no expect: block"
    result = simulate(scenario).to_json()
    assert check(scenario.expect, result) == []
    # Every workload is accounted for: admitted, or waiting with a reason.
    for key, outcome in result["workloads"].items():
        assert outcome["admissions"] or outcome["pendingReason"], key
