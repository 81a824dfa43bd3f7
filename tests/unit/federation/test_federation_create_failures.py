"""The policy for creates that keep failing: a growing pause per (workload, member), then a
refusal after the allowed attempts."""

from __future__ import annotations

import pytest

from kuota.federation.create_failures import MAX_BACKOFF, CreateFailures, Refusal


@pytest.mark.parametrize(("backoff", "failures", "want_delay"), [
    (5.0, 1, 5.0),
    (5.0, 2, 10.0),
    (5.0, 4, 40.0),
    (5.0, 30, MAX_BACKOFF),  # capped
    (0.0, 3, 0.0),
])
def test_the_pause_doubles_with_each_failure(backoff: float, failures: int,
                                             want_delay: float) -> None:
    assert CreateFailures(backoff=backoff, attempts=5).delay(failures) == want_delay


def test_a_failing_pair_waits_then_is_refused_after_the_last_attempt() -> None:
    policy = CreateFailures(backoff=2.0, attempts=3)
    now = 100.0
    assert policy.failed("ns/w", "a", "403 Forbidden", now) is None
    assert not policy.may_try("ns/w", "a", now + 1.9)
    assert policy.may_try("ns/w", "a", now + 2.0)
    assert policy.may_try("ns/w", "b", now)  # other members and workloads are not held
    assert policy.may_try("ns/other", "a", now)
    assert policy.failed("ns/w", "a", "403 Forbidden", now + 2) is None
    assert not policy.may_try("ns/w", "a", now + 5.9)  # 2 + 4
    assert policy.may_try("ns/w", "a", now + 6.0)
    refusal = policy.failed("ns/w", "a", "403 Forbidden: quota exceeded", now + 6)
    assert refusal == Refusal("ns/w", "a", 3, "403 Forbidden: quota exceeded")
    assert "a failed to create the copy of workload ns/w 3 times" in refusal.message
    assert "quota exceeded" in refusal.message
    # given up on: the pair starts afresh should the workload ever come back
    assert policy.failures("ns/w", "a") == 0 and policy.may_try("ns/w", "a", now + 6)


@pytest.mark.parametrize(("then", "want_failures_a", "want_failures_b"), [
    ("succeeded", 0, 1),
    ("forget", 0, 0),
])
def test_success_and_forget_clear(then: str, want_failures_a: int,
                                  want_failures_b: int) -> None:
    policy = CreateFailures(backoff=1.0, attempts=5)
    policy.failed("ns/w", "a", "boom", 0.0)
    policy.failed("ns/w", "b", "boom", 0.0)
    if then == "succeeded":
        policy.succeeded("ns/w", "a")
    else:
        policy.forget("ns/w")
    assert policy.failures("ns/w", "a") == want_failures_a
    assert policy.failures("ns/w", "b") == want_failures_b
    assert policy.may_try("ns/w", "a", 0.0)


@pytest.mark.parametrize(("backoff", "attempts", "want_error"), [
    (-1.0, 5, "backoff"),
    (1.0, 0, "attempts"),
])
def test_bad_settings_are_refused(backoff: float, attempts: int, want_error: str) -> None:
    with pytest.raises(ValueError, match=want_error):
        CreateFailures(backoff=backoff, attempts=attempts)
