"""The client's retry rules as values: pauses, Retry-After, which failures are transient."""

from __future__ import annotations

import datetime
import email.utils
import random
from typing import Any

import pytest

from kuota.operator.client import ApiError, retry_after
from kuota.operator.retries import RetryPolicy, backoff


class TestBackoff:
    @pytest.mark.parametrize(("attempt", "want_low", "want_high"), [
        (1, 0.125, 0.25),
        (2, 0.25, 0.5),
        (3, 0.5, 1.0),
        (6, 4.0, 8.0),
        (7, 4.0, 8.0),     # capped at max_pause
        (30, 4.0, 8.0),
    ])
    def test_pauses_double_up_to_the_cap_with_jitter(self, attempt: int, want_low: float,
                                                     want_high: float) -> None:
        policy = RetryPolicy(pause=0.25, max_pause=8.0)
        rng = random.Random(3)
        pauses = [policy.backoff(attempt, rng) for _ in range(200)]
        assert all(want_low <= p <= want_high for p in pauses)
        assert len({round(p, 6) for p in pauses}) > 100  # spread, not one value


    @pytest.mark.parametrize(("retry_after", "want"), [
        (None, (0.05, 0.1)),
        (3.0, (3.0, 3.0)),    # the server asks for longer: believed
        (0.01, (0.05, 0.1)),  # for shorter: the backoff still applies
    ])
    def test_retry_after_is_a_floor(self, retry_after: float | None,
                                    want: tuple[float, float]) -> None:
        got = backoff(1, base=0.1, cap=1.0, rng=random.Random(5), retry_after=retry_after)
        assert want[0] <= got <= want[1]


class TestRetryAfter:
    @pytest.mark.parametrize(("headers", "payload", "want"), [
        ({"Retry-After": "3"}, {}, 3.0),
        ({"Retry-After": "0"}, {}, 0.0),
        ({"Retry-After": "1.5"}, {}, 1.5),
        ({}, {"details": {"retryAfterSeconds": 2}}, 2.0),
        ({}, {"details": {"retryAfterSeconds": 0}}, None),
        ({}, {"details": {}}, None),
        ({}, {}, None),
        ({}, ["not", "a", "status"], None),
        ({"Retry-After": "soon"}, {}, None),
        ({"Retry-After": "4"}, {"details": {"retryAfterSeconds": 9}}, 4.0),
    ])
    def test_seconds_from_header_or_status(self, headers: dict[str, str], payload: Any,
                                           want: float | None) -> None:
        assert retry_after(headers, payload) == want

    @pytest.mark.parametrize(("offset", "want_low", "want_high"), [
        (10, 8.0, 10.0),
        (-10, 0.0, 0.0),   # a date in the past: retry now
    ])
    def test_an_http_date(self, offset: int, want_low: float, want_high: float) -> None:
        when = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(seconds=offset)
        got = retry_after({"Retry-After": email.utils.format_datetime(when, usegmt=True)}, {})
        assert got is not None and want_low <= got <= want_high


class TestTransient:
    @pytest.mark.parametrize(("status", "want"), [
        (0, True), (401, True), (408, True), (429, True), (500, True), (502, True),
        (503, True), (504, True),
        (400, False), (403, False), (404, False), (409, False), (410, False), (422, False),
    ])
    def test_which_failures_may_pass_by_themselves(self, status: int, want: bool) -> None:
        assert ApiError(status, "", "").transient is want

    def test_giving_up_says_how_long_it_tried(self) -> None:
        error = ApiError(503, "ServiceUnavailable", "etcd is down", retry_after=2.0)
        final = error.gave_up(4, 12.34)
        assert final.attempts == 4 and final.retry_after == 2.0 and final.status == 503
        assert str(final) == ("503 ServiceUnavailable: etcd is down "
                              "(gave up after 4 attempts in 12.3s)")
        assert error.gave_up(1, 0.1) is error
