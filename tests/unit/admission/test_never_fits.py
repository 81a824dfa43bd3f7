"""Never-fits, told at once (issue 41): a workload that can never be admitted as the
queues are configured is named as such when it is queued, with its reason, and is
listed after the workloads that can run, blocking none of them.

Why: ``kuota submit`` accepted ``nvidia.com/gpu=8`` on a queue whose maximum is 4, a typo
(``gpus=1``) and a LocalQueue that does not exist in silence, and a never-fitting
workload was listed as "position 0 (0 is next)" as if it blocked the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from admission import inadmissible
from admission.engine import Engine
from quota.cache import QuotaCache
from quota.workload import WorkloadInfo
from tests.builders import WorkloadBuilder, gpu_pool


def cache_of(objects: list[Any]) -> QuotaCache:
    engine = Engine()
    engine.apply_all(objects)
    return engine.cache


@dataclass
class VerdictCase:
    workload: WorkloadInfo
    objects: list[Any] = field(default_factory=gpu_pool)
    want_reason: str | None = None
    want_in_message: str = ""


@pytest.mark.parametrize("case", [
    pytest.param(VerdictCase(WorkloadBuilder("w").pod_set(gpu=8).obj(),
                             want_reason="ExceedsMaxQuota",
                             want_in_message="request 8 exceeds the most ClusterQueue team-a "
                                             "can ever get (4)"),
                 id="above nominal plus borrowingLimit"),
    pytest.param(VerdictCase(WorkloadBuilder("w").pod_set(count=3, gpu=2).obj(),
                             objects=gpu_pool(borrowing=None), want_reason="ExceedsMaxQuota",
                             want_in_message="can ever get (4)"),
                 id="a gang above everything the cohort tree holds"),
    pytest.param(VerdictCase(WorkloadBuilder("w").pod_set(gpu=4).obj()),
                 id="exactly the maximum: waits for quota, may fit"),
    pytest.param(VerdictCase(WorkloadBuilder("w").pod_set(count=8, min_count=2, gpu=1).obj()),
                 id="partial admission down to minCount fits"),
    pytest.param(VerdictCase(WorkloadBuilder("w").pod_set(gpus=1).obj(),
                             want_reason="NoMatchingFlavor",
                             want_in_message="resource gpus is not covered"),
                 id="a typo names a resource no resourceGroup covers"),
    pytest.param(VerdictCase(WorkloadBuilder("w", queue="nope").pod_set(gpu=1).obj(),
                             want_reason="LocalQueueNotFound",
                             want_in_message="LocalQueue nope doesn't exist in namespace ns"),
                 id="a LocalQueue that does not exist"),
])
def test_never_fits_verdict(case: VerdictCase) -> None:
    verdict = inadmissible.never_fits(case.workload, cache_of(case.objects))
    assert (verdict.reason if verdict else None) == case.want_reason
    assert case.want_in_message in (verdict.message if verdict else "")


@dataclass
class QueueCase:
    strategy: str
    want_order: list[str]
    want_set_aside: dict[str, str]


@pytest.mark.parametrize("case", [
    pytest.param(QueueCase("BestEffortFIFO", ["ns/small", "ns/later"],
                           {"ns/huge": "ExceedsMaxQuota"}),
                 id="BestEffortFIFO: never-fitting last, set aside before any cycle"),
    pytest.param(QueueCase("StrictFIFO", ["ns/huge", "ns/small", "ns/later"], {}),
                 id="StrictFIFO: its head holds the queue, so it stays in line"),
])
def test_never_fitting_workload_is_listed_last_and_blocks_no_one(case: QueueCase) -> None:
    engine = Engine()
    engine.apply_all(gpu_pool(strategy=case.strategy))
    huge = engine.submit(WorkloadBuilder("huge").pod_set(gpu=8).created(1).obj())
    engine.submit(WorkloadBuilder("small").pod_set(gpu=1).created(2).obj())
    engine.submit(WorkloadBuilder("later").pod_set(gpu=1).created(3).obj())
    # Told at once: the reason is there before any cycle ran.
    assert (huge.pending_reason, (huge.pending_message or "").startswith(
        "couldn't assign flavors")) == ("ExceedsMaxQuota", True)
    order = [info.key for info, _, _ in engine.queues.positions("team-a")]
    set_aside = {key: why[0] for key in order
                 if (why := engine.queues.set_aside(key)) is not None}
    if case.want_set_aside:
        assert order == [*case.want_order, "ns/huge"]
    else:
        assert order == case.want_order
    assert set_aside == case.want_set_aside
    # Blocking no one: the others are admitted in the first cycle.
    if case.strategy == "BestEffortFIFO":
        engine.run_until_idle(0)
        assert [k for k, r in engine.records.items() if r.admission] == ["ns/small", "ns/later"]


def test_set_aside_workload_is_tried_again_once_the_queue_grows() -> None:
    engine = Engine()
    engine.apply_all(gpu_pool())
    engine.submit(WorkloadBuilder("huge").pod_set(gpu=8).obj())
    engine.run_until_idle(0)
    engine.apply_all(gpu_pool(nominal=8))
    engine.run_until_idle(1)
    assert engine.records["ns/huge"].admission is not None
