"""Dispatch annotations: the cluster selector and datasets syntaxes, and their errors."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from multicluster.hints import (
    HintError,
    Hints,
    describe,
    hints_from_annotations,
    parse_datasets,
    parse_selector,
)
from quota.workload import NodeRequirement as Req


@dataclass(frozen=True)
class SelectorCase:
    text: str
    want: tuple[Req, ...]


SELECTORS = [
    SelectorCase("region=eu", (Req("region", "In", ("eu",)),)),
    SelectorCase("region == eu", (Req("region", "In", ("eu",)),)),
    SelectorCase("tier!=batch", (Req("tier", "NotIn", ("batch",)),)),
    SelectorCase("gpu.example.com/model in (a100, h100)",
                 (Req("gpu.example.com/model", "In", ("a100", "h100")),)),
    SelectorCase("env notin (dev,test)", (Req("env", "NotIn", ("dev", "test")),)),
    SelectorCase("nvlink", (Req("nvlink", "Exists"),)),
    SelectorCase("!spot", (Req("spot", "DoesNotExist"),)),
    SelectorCase("gpus>3", (Req("gpus", "Gt", ("3",)),)),
    SelectorCase("gpus<16", (Req("gpus", "Lt", ("16",)),)),
    SelectorCase("region in (eu, us), !spot, tier=gold", (
        Req("region", "In", ("eu", "us")), Req("spot", "DoesNotExist"),
        Req("tier", "In", ("gold",)))),
]


@pytest.mark.parametrize("case", SELECTORS, ids=[c.text for c in SELECTORS])
def test_selector_syntax(case: SelectorCase) -> None:
    assert parse_selector(case.text) == case.want


@pytest.mark.parametrize(("text", "want_error"), [
    ("region=eu,", "empty requirement"),
    ("region in (eu", "unbalanced '('"),
    ("region in eu)", "unbalanced ')'"),
    ("region in (eu,)", "has an empty value"),
    ("gpus>three", "not an integer"),
    ("region=e u", "cannot read"),
    ("Bad Key=1", "cannot read"),
    ("-bad=1", "is not a qualified name"),
    ("region=eu!", "cannot read"),
    ("region in (eu west)", "may hold only letters"),
])
def test_selector_errors_name_the_annotation(text: str, want_error: str) -> None:
    with pytest.raises(HintError) as info:
        parse_selector(text)
    assert "kuota.dev/cluster-selector" in str(info.value)
    assert want_error in str(info.value)


@pytest.mark.parametrize("text", [c.text for c in SELECTORS])
def test_describe_reads_back_as_the_same_requirement(text: str) -> None:
    for requirement in parse_selector(text):
        assert parse_selector(describe(requirement)) == (requirement,)


@pytest.mark.parametrize(("text", "want_required", "want_preferred"), [
    ("", (), ()),
    ("imagenet-2012", ("imagenet-2012",), ()),
    ("imagenet-2012, coco", ("imagenet-2012", "coco"), ()),
    ("required: imagenet-2012; preferred: laion/5b", ("imagenet-2012",), ("laion/5b",)),
    ("imagenet-2012; preferred: laion/5b, cc12m", ("imagenet-2012",), ("laion/5b", "cc12m")),
    ("preferred: laion/5b", (), ("laion/5b",)),
    (" preferred : a ; required : b ;", ("b",), ("a",)),
])
def test_datasets_syntax(text: str, want_required: tuple[str, ...],
                         want_preferred: tuple[str, ...]) -> None:
    assert parse_datasets(text) == (want_required, want_preferred)


@pytest.mark.parametrize(("text", "want_error"), [
    ("a,,b", "empty dataset name"),
    ("optional: a", "unknown section 'optional'"),
    ("a; preferred: a", "a is listed twice"),
    ("s3 bucket", "is not a dataset name"),
])
def test_dataset_errors_name_the_annotation(text: str, want_error: str) -> None:
    with pytest.raises(HintError) as info:
        parse_datasets(text)
    assert "kuota.dev/datasets" in str(info.value)
    assert want_error in str(info.value)


def test_hints_from_annotations() -> None:
    hints = hints_from_annotations({
        "kuota.dev/cluster-selector": " region=eu ",
        "kuota.dev/datasets": "imagenet; preferred: laion",
        "unrelated": "x",
    })
    assert hints == Hints((Req("region", "In", ("eu",)),), "region=eu", ("imagenet",),
                          ("laion",))


def test_no_annotations_mean_no_selector() -> None:
    hints = hints_from_annotations({"kuota.dev/cluster-selector": "  "})
    assert hints.selector is None
    assert (hints.required_datasets, hints.preferred_datasets) == ((), ())
