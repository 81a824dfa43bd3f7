"""Kubernetes name syntax: DNS-1123 labels and subdomains, label keys and values.

Kubernetes names most objects with a DNS-1123 *subdomain* (lower-case
alphanumerics, ``-`` and ``.``, at most 253 characters); a few things that end
up inside labels or DNS names (namespaces, podSet names) must be a DNS-1123
*label* (no dots, at most 63). Label keys are *qualified names*: an optional
subdomain prefix and ``/``, then up to 63 alphanumerics, ``-``, ``_`` or ``.``.

Each check returns an error message or ``None``; the ``Annotated`` types below
attach the check to a field and publish the same pattern in the CRD schema.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Final

from pydantic import AfterValidator, WithJsonSchema

LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_NAME_PART: Final = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
QUALIFIED_NAME_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?" + _NAME_PART + "$"
)

_LABEL_RE: Final = re.compile(LABEL_PATTERN)
_SUBDOMAIN_RE: Final = re.compile(SUBDOMAIN_PATTERN)
_NAME_PART_RE: Final = re.compile(f"^{_NAME_PART}$")


def dns_label_error(value: str) -> str | None:
    if not value:
        return "must not be empty"
    if len(value) > 63:
        return f"{value!r} is longer than 63 characters"
    if not _LABEL_RE.match(value):
        return (
            f"{value!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending with a letter or digit)"
        )
    return None


def dns_subdomain_error(value: str) -> str | None:
    if not value:
        return "must not be empty"
    if len(value) > 253:
        return f"{value!r} is longer than 253 characters"
    if not _SUBDOMAIN_RE.match(value):
        return (
            f"{value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and "
            "'.', starting and ending with a letter or digit)"
        )
    return None


def qualified_name_error(value: str) -> str | None:
    """Label keys, taint keys and resource names, e.g. ``nvidia.com/gpu``."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or dns_subdomain_error(prefix)):
        return f"{value!r} has an invalid prefix {prefix!r} (must be a DNS-1123 subdomain)"
    if not name:
        return f"{value!r} has an empty name part"
    if len(name) > 63:
        return f"{value!r} has a name part longer than 63 characters"
    if not _NAME_PART_RE.match(name):
        return (
            f"{value!r} is not a qualified name (letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit, optionally after 'prefix/')"
        )
    return None


def label_value_error(value: str) -> str | None:
    if not value:
        return None
    if len(value) > 63:
        return f"label value {value!r} is longer than 63 characters"
    if not _NAME_PART_RE.match(value):
        return f"label value {value!r} may hold only letters, digits, '-', '_' and '.'"
    return None


def labels_errors(labels: dict[str, str]) -> list[tuple[str, str]]:
    """Problems in a label map, keyed by the label they concern."""
    problems: list[tuple[str, str]] = []
    for key, value in labels.items():
        for error in (qualified_name_error(key), label_value_error(value)):
            if error:
                problems.append((key, error))
    return problems


def _checker(check: Callable[[str], str | None]) -> AfterValidator:
    def validate(value: str) -> str:
        error = check(value)
        if error:
            raise ValueError(error)
        return value

    return AfterValidator(validate)


#: A reference to or name of an object named by a DNS-1123 subdomain.
SubdomainName = Annotated[
    str,
    _checker(dns_subdomain_error),
    WithJsonSchema({"type": "string", "maxLength": 253, "pattern": SUBDOMAIN_PATTERN}),
]
#: A DNS-1123 label (namespaces, podSet names).
LabelName = Annotated[
    str,
    _checker(dns_label_error),
    WithJsonSchema({"type": "string", "maxLength": 63, "pattern": LABEL_PATTERN}),
]
#: A qualified name: label keys, taint keys, resource names.
QualifiedName = Annotated[
    str,
    _checker(qualified_name_error),
    WithJsonSchema({"type": "string", "maxLength": 317, "pattern": QUALIFIED_NAME_PATTERN}),
]
