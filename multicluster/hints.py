"""Workload hints for dispatch, read from Job (or Workload) annotations.

Two annotations steer where a workload goes; both are optional.

``kuota.dev/cluster-selector`` — which members may run it, in the label
selector syntax of ``kubectl get -l`` (requirements separated by commas, all
must hold), matched against a member's selector labels (its metadata and
spec labels plus ``topology.kubernetes.io/region``, ``…/zone`` and
``kuota.dev/provider``)::

    region=eu                                  the label equals the value (also ==)
    tier!=batch                                absent, or another value
    gpu.example.com/model in (a100, h100)      one of the values
    env notin (dev)                            absent, or none of the values
    nvlink                                     present (any value)
    !spot                                      absent
    gpu.example.com/count>3                    an integer label above 3 (also <)

``kuota.dev/datasets`` — data the workload reads. Dataset names separated by
commas are *required*: a member must hold all of them (filter DataLocality).
A section starting ``preferred:`` lists data that is only *preferred*: members
holding more of it score higher (score DataLocality). Sections are separated
by ``;`` and may be labelled ``required:`` explicitly::

    imagenet-2012                              required
    imagenet-2012, coco; preferred: laion/5b   two required, one preferred
    preferred: laion/5b, cc12m                 only preferences

A name may not be both required and preferred. Any malformed annotation is an
error naming the annotation, so a typo never silently widens the choice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from quota.api.membercluster import DATASET_PATTERN
from quota.api.names import label_value_error, qualified_name_error
from quota.workload import NodeRequirement

CLUSTER_SELECTOR: Final = "kuota.dev/cluster-selector"
DATASETS: Final = "kuota.dev/datasets"

_KEY: Final = r"[^\s!=<>(),]+"
_SET_RE: Final = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_CMP_RE: Final = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s!=<>(),]*)$")
_NOT_RE: Final = re.compile(rf"^!\s*(?P<key>{_KEY})$")
_HAS_RE: Final = re.compile(rf"^(?P<key>{_KEY})$")
_DATASET_RE: Final = re.compile(DATASET_PATTERN)
_OPERATORS: Final = {"=": "In", "==": "In", "!=": "NotIn", ">": "Gt", "<": "Lt", "in": "In",
                     "notin": "NotIn"}


class HintError(ValueError):
    """A malformed dispatch annotation (the message names it)."""


@dataclass(frozen=True, slots=True)
class Hints:
    """What a workload asks of its member cluster beyond its admitted flavors."""

    #: Requirements on a member's selector labels; ``None`` = no selector (any member).
    selector: tuple[NodeRequirement, ...] | None = None
    #: The selector as written, for explanations.
    selector_text: str = ""
    required_datasets: tuple[str, ...] = ()
    preferred_datasets: tuple[str, ...] = ()


NO_HINTS: Final = Hints()


def hints_from_annotations(annotations: Mapping[str, str]) -> Hints:
    """The hints in a Job's (or Workload's) annotations; raise :class:`HintError` if malformed."""
    selector_text = annotations.get(CLUSTER_SELECTOR, "").strip()
    selector = parse_selector(selector_text) if selector_text else None
    required, preferred = parse_datasets(annotations.get(DATASETS, ""))
    return Hints(selector, selector_text, required, preferred)


def parse_selector(text: str) -> tuple[NodeRequirement, ...]:
    """A label selector string → requirements (all must match)."""
    requirements = []
    for part in _split_top_level(text):
        requirements.append(_requirement(part.strip(), text))
    return tuple(requirements)


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside parentheses (``a in (x, y), b`` has two parts)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise _selector_error(text, "unbalanced ')'")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise _selector_error(text, "unbalanced '('")
    parts.append(text[start:])
    return parts


def _requirement(part: str, text: str) -> NodeRequirement:
    if not part:
        raise _selector_error(text, "empty requirement (stray comma?)")
    if match := _SET_RE.match(part):
        values = tuple(v.strip() for v in match["values"].split(","))
        if not all(values):
            raise _selector_error(text, f"{part!r} has an empty value")
        return _checked(match["key"], _OPERATORS[match["op"]], values, text)
    if match := _CMP_RE.match(part):
        op = _OPERATORS[match["op"]]
        value = match["value"]
        if op in ("Gt", "Lt") and not re.fullmatch(r"-?[0-9]+", value):
            raise _selector_error(text, f"{part!r} compares with {value!r}, not an integer")
        return _checked(match["key"], op, (value,), text)
    if match := _NOT_RE.match(part):
        return _checked(match["key"], "DoesNotExist", (), text)
    if match := _HAS_RE.match(part):
        return _checked(match["key"], "Exists", (), text)
    raise _selector_error(text, f"cannot read {part!r} (expected key=value, key!=value, "
                                "key in (a,b), key notin (a,b), key, !key, key>n or key<n)")


def _checked(key: str, operator: str, values: tuple[str, ...], text: str) -> NodeRequirement:
    error = qualified_name_error(key)
    if error:
        raise _selector_error(text, error)
    if operator in ("In", "NotIn"):
        for value in values:
            error = label_value_error(value)
            if error:
                raise _selector_error(text, error)
    return NodeRequirement(key, operator, values)


def _selector_error(text: str, message: str) -> HintError:
    return HintError(f"annotation {CLUSTER_SELECTOR}: {message} (in {text!r})")


def parse_datasets(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, preferred) dataset names from a ``kuota.dev/datasets`` value."""
    required: list[str] = []
    preferred: list[str] = []
    for section in text.split(";"):
        section = section.strip()
        if not section:
            continue
        target = required
        head, colon, rest = section.partition(":")
        if colon and head.strip() in ("required", "preferred"):
            target = required if head.strip() == "required" else preferred
            section = rest
        elif colon:
            raise _datasets_error(text, f"unknown section {head.strip()!r} (expected required: "
                                        "or preferred:)")
        for name in section.split(","):
            name = name.strip()
            if not name:
                raise _datasets_error(text, "empty dataset name (stray comma?)")
            if not _DATASET_RE.match(name) or len(name) > 253:
                raise _datasets_error(text, f"{name!r} is not a dataset name")
            if name in required or name in preferred:
                raise _datasets_error(text, f"{name} is listed twice")
            target.append(name)
    return tuple(required), tuple(preferred)


def _datasets_error(text: str, message: str) -> HintError:
    return HintError(f"annotation {DATASETS}: {message} (in {text!r})")


def describe(requirement: NodeRequirement) -> str:
    """A requirement back in selector syntax, for explanations."""
    key, values = requirement.key, requirement.values
    spelled = {"Exists": key, "DoesNotExist": f"!{key}"}
    if requirement.operator in spelled:
        return spelled[requirement.operator]
    if requirement.operator in ("Gt", "Lt"):
        return f"{key}{'>' if requirement.operator == 'Gt' else '<'}{values[0]}"
    if len(values) == 1:
        return f"{key}{'=' if requirement.operator == 'In' else '!='}{values[0]}"
    return f"{key} {requirement.operator.lower()} ({', '.join(values)})"
