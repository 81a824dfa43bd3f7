"""Checking simulator output against a scenario's ``expect`` block.

``expect`` is a partial result document: mappings match when every expected
key matches (extra keys in the actual result are fine); lists match element
by element and must have the same length; numbers match within 1e-6. Each
mismatch is reported with its path, so a failing scenario says exactly which
workload and field differ.

One key is not part of the result but computed from it: ``runningAt``, a
list of ``{at: T, namespaces: {NS: N}}`` — how many workloads of each
namespace hold quota at the end of instant ``T``. It states outcomes such as
"the two queues share 8 and 8" without listing every workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check(expect: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """Every way ``result`` differs from ``expect``."""
    problems = mismatches({k: v for k, v in expect.items() if k != "runningAt"}, result)
    for i, point in enumerate(expect.get("runningAt") or []):
        at = float(point["at"])
        want = {str(k): v for k, v in (point.get("namespaces") or {}).items()}
        have = running_at(result, at)
        got = {ns: have.get(ns, 0) for ns in want}
        if got != want:
            problems.append(f"runningAt[{i}] (t={at:g}): expected {want}, got {got}")
    return problems


def running_at(result: Mapping[str, Any], at: float) -> dict[str, int]:
    """Workloads holding quota after everything at instant ``at``, per namespace."""
    counts: dict[str, int] = {}
    for key, outcome in result["workloads"].items():
        namespace = key.split("/", 1)[0]
        ends = sorted([e["at"] for e in outcome["evictions"]]
                      + ([outcome["finishedAt"]] if outcome["finishedAt"] is not None else []))
        for admission in outcome["admissions"]:
            start = admission["at"]
            end = next((t for t in ends if t >= start), None)
            if start <= at and (end is None or end > at):
                counts[namespace] = counts.get(namespace, 0) + 1
    return counts


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
