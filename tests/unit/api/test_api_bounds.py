"""Absurd input is refused with a message, never a traceback: quantities are finite and
bounded, counts bounded, nesting bounded (issue 12: `1e5000`, `Infinity`, `NaN` and YAML
nested 5,000 deep broke `kuota validate` and every scheduler that read them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from api_builders import edit, valid

from kuota import cli
from quota import api
from quota.resources import MAX_AMOUNT, MILLI, QuantityError, parse_amount


@pytest.mark.parametrize(("value", "want_message"), [
    ("1e5000", "too large"),
    ("1e999999999", "too large"),
    pytest.param(10**5000, "too large", id="int-of-5000-digits"),
    (float("1e308"), "too large"),
    ("Infinity", "not a finite quantity"),
    ("inf", "not a finite quantity"),
    (float("inf"), "not a finite quantity"),
    ("NaN", "not a finite quantity"),
    (float("nan"), "not a finite quantity"),
    ("-1", "must not be negative"),
    ("x" * 500, "not a quantity"),
])
def test_absurd_quantities_are_refused(value: object, want_message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_amount(value)  # type: ignore[arg-type]
    assert want_message in str(caught.value)
    assert len(str(caught.value)) < 120, "the message quotes the input only briefly"


@pytest.mark.parametrize(("value", "want_amount"), [
    ("500m", 500),
    (str(MAX_AMOUNT // MILLI), MAX_AMOUNT // MILLI * MILLI),
    ("8Pi", 8 * 2**50 * MILLI),
])
def test_large_but_real_quantities_are_kept(value: str, want_amount: int) -> None:
    assert parse_amount(value) == want_amount


def _quota(amount: object) -> dict[str, object]:
    return edit(valid("ClusterQueue"),
                {"spec.resourceGroups[0].flavors[0].resources[0].nominalQuota": amount})


def _deep(depth: int) -> str:
    return "a: " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize(("document", "want_line"), [
    (_quota(".inf"), "nominalQuota: inf is not a finite quantity"),
    (_quota(".nan"), "nominalQuota: nan is not a finite quantity"),
    (_quota("Infinity"), "nominalQuota: 'Infinity' is not a finite quantity"),
    (_quota("1e999999999"), "nominalQuota: '1e999999999' is too large"),
    (_quota("1e5000"), "nominalQuota: '1e5000' is too large"),
    (_deep(5000), "not valid YAML: nested too deeply"),
])
def test_validate_reports_absurd_input_as_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], document: object,
        want_line: str) -> None:
    import yaml

    path = tmp_path / "x.yaml"
    text = document if isinstance(document, str) else yaml.safe_dump(document)
    # YAML's own spellings of infinity and NaN, unquoted.
    path.write_text(text.replace("'.inf'", ".inf").replace("'.nan'", ".nan"), encoding="utf-8")
    status = cli.main(["validate", str(path)])
    out = capsys.readouterr().out
    assert status == 2
    assert want_line in out


def test_a_manifest_nested_thousands_deep_is_a_problem_not_a_crash() -> None:
    nested: dict[str, object] = {}
    inner = nested
    for _ in range(5000):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    doc = {"apiVersion": "kuota.dev/v1alpha1", "kind": "Workload", "metadata": {"name": "w"},
           "spec": nested}
    with pytest.raises(api.ObjectError) as caught:
        api.parse_object(doc, source="raw")
    assert [p.message for p in caught.value.problems] == ["nested too deeply"]


def test_a_huge_count_is_named_without_printing_it() -> None:
    doc = edit(valid("Workload"), {"spec.podSets[0].count": 10**5000})
    with pytest.raises(api.ObjectError) as caught:
        api.parse_object(doc, source="raw")
    [problem] = caught.value.problems
    assert problem.field == "spec.podSets[0].count"
    assert "more than 30 digits" in problem.message
