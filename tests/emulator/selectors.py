"""Label and field selectors, as list and watch requests send them in the query.

Label selectors (``labelSelector=``) are comma-separated requirements, all of
which must hold: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a)``,
``k`` (the key exists) and ``!k`` (it does not). ``!=`` and ``notin`` also
match objects without the key, as in Kubernetes.

Field selectors (``fieldSelector=``) are ``path=value``, ``path==value`` or
``path!=value`` over dotted paths such as ``metadata.name`` or
``status.phase``. The real server accepts only a few paths per kind; the
emulator accepts any path and compares the value's string form (a missing
field is the empty string).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

Matcher = Callable[[Mapping[str, Any]], bool]


class SelectorError(ValueError):
    """A selector that does not parse; the message quotes the bad part."""


@dataclasses.dataclass(frozen=True)
class _Requirement:
    key: str
    op: str  # one of: =, !=, in, notin, exists, !exists
    values: frozenset[str] = frozenset()

    def __call__(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.op:
            case "exists":
                return present
            case "!exists":
                return not present
            case "=" | "in":
                return present and value in self.values
            case _:  # "!=" | "notin"
                return not present or value not in self.values


_SET_RE = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*(?P<key>[^\s!=,()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=,()]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=,()]+)\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside the parentheses of a set."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def parse_labels(text: str | None) -> Matcher:
    """A predicate over an object that applies a label selector to its labels."""
    requirements: list[_Requirement] = []
    for part in _split_top_level(text or ""):
        if match := _SET_RE.match(part):
            values = frozenset(v.strip() for v in match["values"].split(",") if v.strip())
            requirements.append(_Requirement(match["key"], match["op"], values))
        elif match := _EQ_RE.match(part):
            op = "!=" if match["op"] == "!=" else "="
            requirements.append(_Requirement(match["key"], op, frozenset({match["value"]})))
        elif match := _EXISTS_RE.match(part):
            op = "!exists" if match["neg"] else "exists"
            requirements.append(_Requirement(match["key"], op))
        else:
            raise SelectorError(f"unable to parse requirement {part.strip()!r} "
                                f"in label selector {text!r}")

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string form of a dotted path's value; missing fields are ''."""
    value: Any = obj
    for step in path.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return ""
        value = value[step]
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def parse_fields(text: str | None) -> Matcher:
    """A predicate over an object that applies a field selector."""
    terms: list[tuple[str, bool, str]] = []
    for part in _split_top_level(text or ""):
        match = _EQ_RE.match(part)
        if match is None:
            raise SelectorError(f"invalid field selector {part.strip()!r} in {text!r}: "
                                "expected path=value or path!=value")
        terms.append((match["key"], match["op"] != "!=", match["value"]))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is equal for path, equal, value in terms)

    return matches


def label_selector(selector: Mapping[str, Any] | None) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over a labels dict from a ``LabelSelector`` object (matchLabels/-Expressions).

    An absent or empty selector matches everything, as in webhook configurations.
    """
    requirements = [_Requirement(key, "=", frozenset({value}))
                    for key, value in ((selector or {}).get("matchLabels") or {}).items()]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expression in (selector or {}).get("matchExpressions") or []:
        op = operators.get(expression.get("operator", ""))
        if op is None:
            raise SelectorError(f"unknown operator {expression.get('operator')!r} in "
                                f"label selector {selector!r}")
        requirements.append(_Requirement(expression["key"], op,
                                         frozenset(expression.get("values") or ())))
    return lambda labels: all(requirement(labels) for requirement in requirements)
