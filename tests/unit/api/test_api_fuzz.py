"""Malformed input never crashes the parser: it either parses or raises ObjectError.

The operator feeds whatever the API server holds into ``parse_object``; a
``TypeError`` or ``KeyError`` from a strange value would take it down. These
properties put arbitrary JSON values at arbitrary places of valid manifests,
and check that everything that parses also survives a round trip.
"""

from __future__ import annotations

from typing import Any

from api_builders import kinds, valid
from hypothesis import given, settings
from hypothesis import strategies as st

from quota import api

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = valid(draw(st.sampled_from(kinds())))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        node: Any = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = draw(json_values)
    return doc


@settings(max_examples=300, deadline=None)
@given(mutated())
def test_parse_object_either_parses_or_reports_problems(doc: dict[str, Any]) -> None:
    try:
        obj = api.parse_object(doc, source="fuzz.yaml")
    except api.ObjectError as exc:
        assert exc.problems
        assert all(p.source == "fuzz.yaml" and p.message for p in exc.problems)
        assert all("\n" not in str(p) for p in exc.problems)
        return
    assert api.parse_object(obj.to_dict()) == obj
