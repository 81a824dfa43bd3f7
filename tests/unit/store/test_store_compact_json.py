"""The store's compact JSON (requests, placements, admissions) is written by orjson where
that gives the standard library's characters, and by the standard library elsewhere: the
text is the same whichever wrote it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queueing.store import compact
from queueing.store.records import vector_to_json

scalars = st.one_of(st.none(), st.booleans(), st.text(),
                    st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
                    st.floats(allow_nan=False))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=12)


def _stdlib(obj: Any, sort_keys: bool) -> str:
    return json.dumps(obj, sort_keys=sort_keys, separators=(",", ":"))


@given(values, st.booleans())
def test_any_value_is_written_as_the_standard_library_writes_it(obj: Any,
                                                               sort_keys: bool) -> None:
    assert compact.dumps(obj, sort_keys=sort_keys) == _stdlib(obj, sort_keys)


@pytest.mark.parametrize(("obj", "want_text"), [
    ({"memory": 2 ** 30, "cpu": 1000}, '{"cpu":1000,"memory":1073741824}'),
    (["n1", "n2"], '["n1","n2"]'),
    # (where orjson would differ or refuse: the standard library writes these)
    (["nœud"], '["n\\u0153ud"]'),
    ({"cpu": 2 ** 64}, '{"cpu":18446744073709551616}'),
    ({"x": 1e-7}, '{"x":1e-07}'),
    ({"\x7f\n": "\t"}, '{"\\u007f\\n":"\\t"}'),
])
def test_values_the_store_writes(obj: Any, want_text: str) -> None:
    assert compact.dumps(obj, sort_keys=True) == want_text


def test_a_resource_vector_is_written_sorted_by_resource() -> None:
    assert vector_to_json({"nvidia.com/gpu": 1, "cpu": 500}) == '{"cpu":500,"nvidia.com/gpu":1}'
