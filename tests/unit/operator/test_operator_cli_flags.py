"""``kuota operator`` flag validation: bad values are usage errors naming the flag."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kuota.cli import build_parser
from kuota.commands.operator import options_from


@dataclass
class Bad:
    argv: list[str]
    want_error: str


BAD = [
    Bad(["--create-backoff", "-1"], "--create-backoff: must be >= 0 seconds"),
    Bad(["--create-backoff", "soon"], "--create-backoff: expected a number of seconds"),
    Bad(["--create-attempts", "0"], "--create-attempts: must be at least 1"),
    Bad(["--create-attempts", "2.5"], "--create-attempts: expected a whole number"),
    Bad(["--member-interval", "0"], "--member-interval: must be > 0 seconds"),
    Bad(["--member-interval", "-3"], "--member-interval: must be > 0 seconds"),
    Bad(["--member-interval", "nan"], "--member-interval: must be > 0 seconds"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: " ".join(c.argv))
def test_bad_flags_are_usage_errors(case: Bad, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["operator", *case.argv])
    assert exited.value.code == 2
    assert case.want_error in capsys.readouterr().err


def test_good_flags_reach_the_options() -> None:
    args = build_parser().parse_args(["operator", "--create-backoff", "0",
                                      "--create-attempts", "1", "--member-interval", "0.5"])
    options = options_from(args)
    assert (options.create_backoff, options.create_attempts, options.member_interval) == (
        0.0, 1, 0.5)
