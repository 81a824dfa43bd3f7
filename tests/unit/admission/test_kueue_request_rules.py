"""Kueue's rules for what a pod asks: a zero request of a covered resource gets a flavor,
and a request too large to count in milli-units saturates (the workload is then refused with
ExceedsMaxQuota, tests/scenarios/request-overflows-int64.yaml) instead of the manifest."""

from __future__ import annotations

import pytest

from quota import api, convert
from quota.resources import MAX_AMOUNT, QuantityError, parse_amount, parse_request


@pytest.mark.parametrize(("value", "want_amount", "want_error"), [
    ("500m", 500, ""),
    ("9223372036854775", 9223372036854775000, ""),
    ("9223372036854776", MAX_AMOUNT, ""),             # Kueue's case: saturated
    ("9223372036854775807", MAX_AMOUNT, ""),          # the most Kubernetes holds
    ("9223372036854775808", 0, "too large"),          # beyond any int64: absurd
    ("1e5000", 0, "too large"),
    ("-1", 0, "must not be negative"),
])
def test_a_request_saturates_where_a_quota_is_refused(
        value: str, want_amount: int, want_error: str) -> None:
    if want_error:
        with pytest.raises(QuantityError, match=want_error):
            parse_request(value)
        return
    assert parse_request(value) == want_amount
    if want_amount == MAX_AMOUNT:
        with pytest.raises(QuantityError, match="too large"):
            parse_amount(value)


@pytest.mark.parametrize(("requests", "want_requests", "want_zero"), [
    ({"cpu": "1"}, {"cpu": 1000}, ()),
    ({"cpu": "1", "nvidia.com/gpu": "0"}, {"cpu": 1000}, ("nvidia.com/gpu",)),
    ({"cpu": "0", "memory": "0"}, {}, ("cpu", "memory")),
    ({"cpu": "9223372036854776"}, {"cpu": MAX_AMOUNT}, ()),
])
def test_the_core_sees_zero_requests_apart_and_saturated_requests_whole(
        requests: dict[str, str], want_requests: dict[str, int],
        want_zero: tuple[str, ...]) -> None:
    info = convert.pod_set(api.PodSet.from_requests("main", 2, requests))
    assert dict(info.requests) == want_requests
    assert info.zero_requests == want_zero
