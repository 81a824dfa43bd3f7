"""Partial matching of simulator output against a scenario's ``expect`` block.

Mappings match when every expected key matches (extra keys in the actual
result are fine); lists match element by element and must have the same
length; numbers match within 1e-6. Each mismatch is reported with its path,
so a failing scenario says exactly which workload and field differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    where = path or "(root)"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where}: expected a mapping, got {actual!r}"]
        out: list[str] = []
        for key, want in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in actual:
                out.append(f"{sub}: missing (expected {want!r})")
            else:
                out += mismatches(want, actual[key], sub)
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r}"]
        if len(expected) != len(actual):
            return [f"{where}: expected {len(expected)} items, got {len(actual)}: {actual!r}"]
        out = []
        for i, (want, have) in enumerate(zip(expected, actual, strict=True)):
            out += mismatches(want, have, f"{path}[{i}]")
        return out
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]
    if isinstance(expected, int | float):
        if isinstance(actual, int | float) and not isinstance(actual, bool) and abs(
                expected - actual) <= 1e-6:
            return []
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]
