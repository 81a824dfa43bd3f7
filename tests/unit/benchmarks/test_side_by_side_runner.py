"""The Python port of Kueue's performance runner (benchmarks/side_by_side.py): each
admission runs its Workload for its run time from that admission; evictions are counted
as Kueue's recorder counts them. A runner that finished a re-admitted Workload on its
first admission's clock freed quota early and favoured kuota (issue 43)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from benchmarks.side_by_side import CLASS_LABEL, RUNTIME_LABEL, KuotaRunner

Body = dict[str, Any]
RUNTIME = 0.2


class _Answer:
    status = 200

    async def __aenter__(self) -> _Answer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def text(self) -> str:
        return ""


class FakeHttp:
    """Records each status patch (the runner marking a Workload Finished) and when."""

    def __init__(self) -> None:
        self.patched: list[tuple[str, float]] = []

    def patch(self, path: str, **_: Any) -> _Answer:
        self.patched.append((path, time.monotonic()))
        return _Answer()


def workload(*, admitted: bool = False, evicted: bool = False,
             finished: bool = False) -> Body:
    conditions = [{"type": t, "status": "True" if on else "False"}
                  for t, on in (("Admitted", admitted), ("Evicted", evicted),
                                ("Finished", finished))]
    return {"metadata": {"name": "small-0-0-0", "namespace": "cq-1",
                         "labels": {CLASS_LABEL: "small",
                                    RUNTIME_LABEL: str(int(RUNTIME * 1000))}},
            "status": {"conditions": conditions}}


def run(steps: list[tuple[float, Body]], *, then: float) -> tuple[KuotaRunner, FakeHttp,
                                                                    dict[int, float]]:
    """Observe each Workload state after its delay; wait ``then``. Returns the runner, the
    fake API and when each step was observed."""
    runner = KuotaRunner(url="https://127.0.0.1:1", token="", ca=None,  # type: ignore[arg-type]
                         config=[])
    http = FakeHttp()
    runner.http = http  # type: ignore[assignment]
    at: dict[int, float] = {}

    async def main() -> None:
        for i, (delay, body) in enumerate(steps):
            await asyncio.sleep(delay)
            at[i] = time.monotonic()
            runner._observe(body)
        await asyncio.sleep(then)

    asyncio.run(main())
    return runner, http, at


def test_a_workload_runs_its_run_time_from_its_admission() -> None:
    runner, http, at = run([(0, workload()), (0, workload(admitted=True))], then=RUNTIME * 2)
    assert [path for path, _ in http.patched] == [
        "/apis/kuota.dev/v1alpha1/namespaces/cq-1/workloads/small-0-0-0/status"]
    assert http.patched[0][1] - at[1] >= RUNTIME * 0.95
    assert runner.evictions == 0


def test_a_readmitted_workload_runs_its_run_time_again_from_its_last_admission() -> None:
    runner, http, at = run([(0, workload(admitted=True)),
                            (RUNTIME / 4, workload(evicted=True)),
                            (RUNTIME / 4, workload(admitted=True))], then=RUNTIME * 2)
    # One finish, on the second admission's clock (before the fix: at the first's + runtime).
    assert len(http.patched) == 1
    assert http.patched[0][1] - at[2] >= RUNTIME * 0.95
    assert runner.evictions == 1
    seen = runner.seen["cq-1/small-0-0-0"]
    assert seen.admissions == 2 and seen.admitted == pytest.approx(at[2])


@pytest.mark.parametrize("after", [
    workload(evicted=True),            # evicted and not admitted again: nothing to finish
    workload(admitted=True, finished=True),  # finished by someone else meanwhile
])
def test_no_finish_for_a_workload_that_no_longer_runs_under_its_admission(after: Body) -> None:
    _, http, _ = run([(0, workload(admitted=True)), (RUNTIME / 4, after)], then=RUNTIME * 2)
    assert http.patched == []
