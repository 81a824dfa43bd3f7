"""Kubernetes matching semantics: label selectors, tolerations against taints, node selectors."""

from __future__ import annotations

from typing import Any

import pytest

from quota import api
from quota.api.podtemplate import NodeSelectorRequirement, NodeSelectorTerm


def selector(
    match_labels: dict[str, str] | None = None, *expressions: tuple[str, ...]
) -> api.LabelSelector:
    """``selector({"env": "prod"}, ("team", "In", "a", "b"))``."""
    return api.LabelSelector.model_validate(
        {
            "matchLabels": match_labels or {},
            "matchExpressions": [
                {"key": e[0], "operator": e[1], "values": list(e[2:])} for e in expressions
            ],
        }
    )


SELECTOR_CASES = [
    # (name, selector, labels, want)
    ("empty selector matches everything", selector(), {"team": "a"}, True),
    ("empty selector matches no labels", selector(), {}, True),
    ("matchLabels equal", selector({"team": "a"}), {"team": "a", "x": "y"}, True),
    ("matchLabels differ", selector({"team": "a"}), {"team": "b"}, False),
    ("matchLabels missing", selector({"team": "a"}), {}, False),
    ("In hit", selector(None, ("team", "In", "a", "b")), {"team": "b"}, True),
    ("In miss", selector(None, ("team", "In", "a")), {"team": "c"}, False),
    ("In absent", selector(None, ("team", "In", "a")), {}, False),
    ("NotIn absent matches", selector(None, ("team", "NotIn", "a")), {}, True),
    ("NotIn other value", selector(None, ("team", "NotIn", "a")), {"team": "b"}, True),
    ("NotIn listed value", selector(None, ("team", "NotIn", "a")), {"team": "a"}, False),
    ("Exists", selector(None, ("team", "Exists")), {"team": ""}, True),
    ("Exists absent", selector(None, ("team", "Exists")), {}, False),
    ("DoesNotExist", selector(None, ("team", "DoesNotExist")), {}, True),
    ("DoesNotExist present", selector(None, ("team", "DoesNotExist")), {"team": "a"}, False),
    (
        "labels and expressions must all hold",
        selector({"env": "prod"}, ("team", "In", "a")),
        {"env": "prod", "team": "b"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "sel", "labels", "want"), SELECTOR_CASES, ids=[c[0] for c in SELECTOR_CASES]
)
def test_label_selector_matches(
    name: str, sel: api.LabelSelector, labels: dict[str, str], want: bool
) -> None:
    assert sel.matches(labels) is want


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> api.Taint:
    return api.Taint.model_validate({"key": key, "value": value, "effect": effect})


def toleration(**fields: Any) -> api.Toleration:
    return api.Toleration.model_validate(fields)


TOLERATION_CASES = [
    # (name, toleration, taint, want)
    (
        "Equal with same key, value, effect",
        toleration(key="gpu", value="a100", effect="NoSchedule"),
        taint("gpu", "a100"),
        True,
    ),
    (
        "Equal is the default operator",
        toleration(key="gpu", value="a100"),
        taint("gpu", "a100"),
        True,
    ),
    ("Equal with another value", toleration(key="gpu", value="t4"), taint("gpu", "a100"), False),
    (
        "Equal with empty value matches only an empty taint value",
        toleration(key="gpu"),
        taint("gpu", ""),
        True,
    ),
    (
        "Equal with empty value does not match a valued taint",
        toleration(key="gpu"),
        taint("gpu", "a100"),
        False,
    ),
    ("Exists ignores the value", toleration(key="gpu", operator="Exists"), taint("gpu", "x"), True),
    ("Exists with another key", toleration(key="spot", operator="Exists"), taint("gpu"), False),
    (
        "empty key with Exists tolerates everything",
        toleration(operator="Exists"),
        taint("anything", "v", "NoExecute"),
        True,
    ),
    (
        "empty effect matches every effect",
        toleration(key="gpu", operator="Exists"),
        taint("gpu", effect="NoExecute"),
        True,
    ),
    (
        "another effect does not match",
        toleration(key="gpu", operator="Exists", effect="NoExecute"),
        taint("gpu"),
        False,
    ),
    (
        "PreferNoSchedule is matched by effect too",
        toleration(key="gpu", operator="Exists", effect="PreferNoSchedule"),
        taint("gpu", effect="PreferNoSchedule"),
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "tol", "tnt", "want"), TOLERATION_CASES, ids=[c[0] for c in TOLERATION_CASES]
)
def test_toleration_tolerates(name: str, tol: api.Toleration, tnt: api.Taint, want: bool) -> None:
    assert tol.tolerates(tnt) is want


def test_tolerates_all_reports_the_first_untolerated_hard_taint() -> None:
    taints = (
        taint("soft", effect="PreferNoSchedule"),
        taint("gpu", "a100"),
        taint("spot", effect="NoExecute"),
    )
    gpu_only = (toleration(key="gpu", operator="Exists"),)
    assert api.tolerates_all(gpu_only, taints) == taints[2]
    assert api.tolerates_all((*gpu_only, toleration(key="spot", operator="Exists")), taints) is None
    assert api.tolerates_all((), (taint("soft", effect="PreferNoSchedule"),)) is None


NODE_SELECTOR_CASES = [
    ("In", ("zone", "In", ["a", "b"]), {"zone": "a"}, True),
    ("NotIn absent", ("zone", "NotIn", ["a"]), {}, True),
    ("Gt", ("gpus", "Gt", ["4"]), {"gpus": "8"}, True),
    ("Gt equal", ("gpus", "Gt", ["8"]), {"gpus": "8"}, False),
    ("Lt", ("gpus", "Lt", ["4"]), {"gpus": "2"}, True),
    ("Gt not a number", ("gpus", "Gt", ["4"]), {"gpus": "many"}, False),
    ("Gt absent", ("gpus", "Gt", ["4"]), {}, False),
    ("Exists", ("gpus", "Exists", []), {"gpus": "1"}, True),
    ("DoesNotExist", ("gpus", "DoesNotExist", []), {"gpus": "1"}, False),
]


@pytest.mark.parametrize(
    ("name", "expr", "labels", "want"), NODE_SELECTOR_CASES, ids=[c[0] for c in NODE_SELECTOR_CASES]
)
def test_node_selector_requirement(
    name: str, expr: tuple[str, str, list[str]], labels: dict[str, str], want: bool
) -> None:
    key, operator, values = expr
    requirement = NodeSelectorRequirement.model_validate(
        {"key": key, "operator": operator, "values": values}
    )
    assert requirement.matches(labels) is want


def test_empty_node_selector_term_matches_no_node() -> None:
    assert not NodeSelectorTerm().matches({"any": "label"})
    only_fields = NodeSelectorTerm.model_validate(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    )
    assert only_fields.matches({})
