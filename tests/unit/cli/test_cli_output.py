"""The listing commands' shared output: selectors, durations, times, tables that fit."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kuota.commands import output


@dataclass(frozen=True)
class SelectorCase:
    selector: str
    labels: dict[str, str]
    want_match: bool


SELECTORS = {
    "equal": SelectorCase("team=x", {"team": "x"}, True),
    "double equal": SelectorCase("team==x", {"team": "x"}, True),
    "equal, other value": SelectorCase("team=x", {"team": "y"}, False),
    "not equal, absent": SelectorCase("team!=x", {}, True),
    "not equal, same": SelectorCase("team!=x", {"team": "x"}, False),
    "exists": SelectorCase("team", {"team": ""}, True),
    "not exists": SelectorCase("!team", {"team": "x"}, False),
    "all must match": SelectorCase("team=x, tier=gold", {"team": "x", "tier": "iron"}, False),
    "empty matches all": SelectorCase("", {}, True),
}


@pytest.mark.parametrize("case", SELECTORS.values(), ids=SELECTORS.keys())
def test_label_selectors(case: SelectorCase) -> None:
    assert output.matches(case.labels, output.parse_selector(case.selector)) is case.want_match


@pytest.mark.parametrize("text", ["=x", "!=x", "!", "a,=b"])
def test_a_selector_without_a_key_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="has no label key"):
        output.parse_selector(text)


@pytest.mark.parametrize(("seconds", "want"), [
    (None, "-"), (0, "0s"), (59.6, "1m00s"), (61, "1m01s"), (3723, "1h02m03s"),
])
def test_durations(seconds: float | None, want: str) -> None:
    assert output.duration(seconds) == want


@pytest.mark.parametrize(("ago", "want"), [(5, "5s"), (119, "119s"), (600, "10m"),
                                           (3 * 3600, "3h"), (5 * 86400, "5d")])
def test_ages(ago: float, want: str) -> None:
    assert output.age(1_000_000.0 - ago, now=1_000_000.0) == want


def test_times_are_rfc3339_utc() -> None:
    assert output.rfc3339(0) is None
    assert output.rfc3339(1_700_000_000.4) == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize("width", [50, 80, 140])
def test_a_table_fits_the_terminal_cutting_only_the_long_columns(
        width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    rows = [{"name": "default/training-run-42", "state": "Pending",
             "message": "couldn't assign flavors to pod set main: " + "insufficient quota " * 9}]
    output.print_table(rows, ("name", "state", "message"), shrink=("message",), terminal=True)
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= width
    assert "default/training-run-42" in lines[1] and lines[1].rstrip().endswith("…")


def test_wide_output_cuts_nothing(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    message = "a message longer than the terminal is wide, kept whole"
    output.print_table([{"name": "x", "message": message}], ("name", "message"))
    assert message in capsys.readouterr().out
