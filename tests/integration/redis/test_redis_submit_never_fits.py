"""Never-fits, told at once, in Redis mode (issue 41).

Why: ``kuota submit`` exited 0 in silence for ``nvidia.com/gpu=8`` on a queue whose
maximum is 4, for a typo (``--requests gpu=1``) and for a LocalQueue that does not
exist; ``submit --wait`` then blocked forever although the reason was known, and the
workload was listed first in ``kuota pending`` as if it blocked the others.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness import CQ, Kuota, queues

from kuota.client import Client, NeverFits, NeverFitsWarning
from kuota.service.connection import connect

pytestmark = pytest.mark.redis

GPU = "nvidia.com/gpu"


@pytest.fixture
def kuota(redis_server_url: str, redis_prefix: str, capsys: pytest.CaptureFixture[str],
          tmp_path: Path) -> Kuota:
    """A store with ClusterQueue ``gpu``: at most 4 GPUs (LocalQueue ``default/lq-gpu``)."""
    (tmp_path / "q.yaml").write_text(queues(CQ("gpu", {"cpu": 8, GPU: 4})))
    runner = Kuota(redis_server_url, redis_prefix, capsys)
    assert runner("apply", "-f", str(tmp_path / "q.yaml"))[0] == 0
    return runner


@dataclass
class Case:
    requests: str
    queue: str = "default/lq-gpu"
    #: None: it may fit, no warning.
    want_reason: str | None = None
    want_in_message: str = ""


CASES = [
    pytest.param(Case(f"{GPU}=8", want_reason="ExceedsMaxQuota",
                      want_in_message="request 8 exceeds the most ClusterQueue gpu can ever "
                                      "get (4)"), id="more than the queue's maximum"),
    pytest.param(Case("gpu=1", want_reason="NoMatchingFlavor",
                      want_in_message="resource gpu is not covered by any resourceGroup of "
                                      "ClusterQueue gpu"), id="a typo in a resource name"),
    pytest.param(Case(f"{GPU}=1", queue="default/nope", want_reason="LocalQueueNotFound",
                      want_in_message="LocalQueue nope doesn't exist in namespace default"),
                 id="a LocalQueue that does not exist"),
    pytest.param(Case(f"{GPU}=4"), id="at most the maximum: no warning"),
]


@pytest.mark.parametrize("case", CASES)
def test_submit_warns_at_once_and_wait_ends(kuota: Kuota, case: Case) -> None:
    status, _, err = kuota("submit", "--queue", case.queue, "--name", "first", "--requests",
                           case.requests, "--", "true")
    assert status == 0, err
    warned = [line for line in err.splitlines() if line.startswith("warning:")]
    if case.want_reason is None:
        assert warned == []
        return
    assert len(warned) == 1 and f"{case.want_reason}: " in warned[0], err
    assert case.want_in_message in warned[0]
    started = time.monotonic()
    status, _, err = kuota("submit", "--queue", case.queue, "--name", "second", "--requests",
                           case.requests, "--wait", "--timeout", "8", "--", "true")
    assert (status, time.monotonic() - started < 5) == (1, True), err
    assert f"can never be admitted as the queues are configured: {case.want_reason}" in err
    assert "it stays queued" in err


@pytest.mark.parametrize("case", CASES)
def test_client_submit_warns_and_wait_raises(redis_server_url: str, redis_prefix: str,
                                            kuota: Kuota, case: Case) -> None:
    client = Client(connection=connect(redis_server_url, prefix=redis_prefix))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = client.submit(["true"], queue=case.queue, name="py",
                               requests=dict([case.requests.split("=")]))
    never = [w for w in caught if issubclass(w.category, NeverFitsWarning)]
    if case.want_reason is None:
        assert (never, handle.never_fits) == ([], None)
        return
    assert handle.never_fits is not None and handle.never_fits[0] == case.want_reason
    assert len(never) == 1 and case.want_in_message in str(never[0].message)
    with pytest.raises(NeverFits) as raised:
        handle.wait(timeout=5)
    assert raised.value.reason == case.want_reason


def test_pending_lists_never_fitting_last_blocking_no_one(kuota: Kuota) -> None:
    for name, gpus in (("huge", 8), ("small", 1), ("later", 2)):
        assert kuota("submit", "--queue", "default/lq-gpu", "--name", name, "--requests",
                     f"{GPU}={gpus}", "--", "true")[0] == 0
    pending = kuota.json("pending", "gpu")
    assert [(p["positionInClusterQueue"], p["metadata"]["name"], p["inadmissible"],
             p["reason"]) for p in pending] == [
        (0, "small", False, "Pending"), (1, "later", False, "Pending"),
        (2, "huge", True, "ExceedsMaxQuota")]
    status, out, _ = kuota("pending", "gpu")
    assert status == 0
    [huge] = [line for line in out.splitlines() if "default/huge" in line]
    assert "Inadmissible (blocks no one)" in huge and "ExceedsMaxQuota" in huge


def test_why_and_describe_say_it_can_never_fit(kuota: Kuota) -> None:
    assert kuota("submit", "--queue", "default/lq-gpu", "--name", "huge", "--requests",
                 f"{GPU}=8", "--", "true")[0] == 0
    status, out, err = kuota("why", "default/huge")
    assert status == 0, err
    assert "It can never be admitted as the queues are configured: ExceedsMaxQuota" in out
    assert "ask for at most 4 nvidia.com/gpu in pod set main" in out
    assert "dispatch" not in out.lower()  # a single pool: no multi-cluster text
    status, out, err = kuota("describe", "workload", "default/huge")
    assert status == 0, err
    assert "ClusterQueue: gpu" in out.replace("  ", " ") and "Requests main" in out
