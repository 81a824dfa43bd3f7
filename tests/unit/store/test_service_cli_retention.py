"""``kuota scheduler --retain-finished``: durations and their errors."""

from __future__ import annotations

import argparse

import pytest

from kuota.service.cli import parse_retention


@pytest.mark.parametrize(("text", "want_seconds"), [
    ("7d", 7 * 86400.0), ("12h", 43200.0), ("30m", 1800.0), ("90s", 90.0), ("45", 45.0),
    ("0", 0.0), ("1.5h", 5400.0), ("forever", None), (" Forever ", None),
])
def test_durations(text: str, want_seconds: float | None) -> None:
    assert parse_retention(text) == want_seconds


@pytest.mark.parametrize(("text", "want_error"), [
    ("soon", "not a duration"), ("7w", "not a duration"), ("-1h", "not negative"),
    ("", "not a duration"), ("nan", "finite"), ("infd", "finite"),
])
def test_bad_durations_are_refused_with_the_value(text: str, want_error: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=want_error):
        parse_retention(text)
