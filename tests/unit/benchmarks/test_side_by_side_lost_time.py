"""benchmarks/side_by_side.py's run time lost to evictions, read from a Workload trace."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from benchmarks.side_by_side import lost_run_time


def event(name: str, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    """A trace line: the Workload's conditions as (type, status, lastTransitionTime)."""
    return {"t": 0, "type": "MODIFIED", "name": name, "uid": "u", "priority": 0,
            "status": {"conditions": [{"type": t, "status": s, "lastTransitionTime": at}
                                      for t, s, at in conditions]}}


ADMITTED = ("Admitted", "True", "2026-12-08T01:00:00Z")
EVICTED = ("Evicted", "True", "2026-12-08T01:00:07Z")


@pytest.mark.parametrize(("events", "want"), [
    pytest.param([event("ns/small-0-0-0", ADMITTED)], {}, id="admitted, never evicted"),
    pytest.param([event("ns/small-0-0-0", ADMITTED),
                  event("ns/small-0-0-0", ("Admitted", "False", "2026-12-08T01:00:07Z"),
                        EVICTED)], {"small": 7.0}, id="7 s run, then evicted"),
    pytest.param([event("ns/large-2-0-0", ADMITTED, EVICTED),
                  event("ns/large-2-0-0", ADMITTED, EVICTED)], {"large": 7.0},
                 id="the same eviction seen twice counts once"),
    pytest.param([event("ns/medium-1-0-0", ADMITTED, EVICTED),
                  event("ns/medium-1-0-0", ("Admitted", "True", "2026-12-08T01:00:10Z"),
                        EVICTED)], {"medium": 7.0},
                 id="an eviction older than the admission is not the new run's"),
    pytest.param([event("ns/medium-1-0-0", ADMITTED, EVICTED),
                  event("ns/medium-1-0-0", ("Admitted", "True", "2026-12-08T01:00:10Z"),
                        ("Evicted", "True", "2026-12-08T01:00:12Z"))], {"medium": 9.0},
                 id="two evictions, each of its own run"),
])
def test_lost_run_time_per_class(tmp_path: pathlib.Path, events: list[dict[str, Any]],
                                 want: dict[str, float]) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert lost_run_time(trace) == want
