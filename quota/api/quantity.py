"""Quantities as written in manifests, checked on read and kept as spelled.

A field typed :data:`Quantity` accepts what Kubernetes accepts for a
``resource.Quantity`` in YAML — a string (``"500m"``, ``"1Gi"``) or a plain
number (``2``, ``0.5``) — checks it with :func:`quota.resources.parse_amount`,
and stores the original spelling as a string, so a manifest read and written
back is unchanged. The core never does arithmetic on the string: it calls
:func:`amount` once and works with integer milli-units from then on.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Annotated, Final

from pydantic import BeforeValidator, WithJsonSchema

from quota import resources

#: Kubernetes' own pattern for a quantity string (from the CRD of any built-in).
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def _check_quantity(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError(f"{value!r} is not a quantity (expected a string like '500m' or a number)")
    try:
        # The value itself first: a huge int must be refused before it is turned into text.
        resources.parse_amount(value.strip() if isinstance(value, str) else value)
    except resources.QuantityError as exc:
        raise ValueError(str(exc)) from None
    return value.strip() if isinstance(value, str) else str(value)


#: A finite, non-negative Kubernetes quantity of at most
#: :data:`quota.resources.MAX_AMOUNT` milli-units, stored as written.
Quantity = Annotated[
    str,
    BeforeValidator(_check_quantity),
    WithJsonSchema(
        {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": True,
            "pattern": QUANTITY_PATTERN,
        }
    ),
]


@lru_cache(maxsize=8192)
def amount(quantity: str) -> resources.Amount:
    """Milli-units of a :data:`Quantity` (cached: specs repeat the same few strings)."""
    return resources.parse_amount(quantity)


def amounts(quantities: dict[str, str]) -> resources.ResourceVector:
    """Milli-units per resource name of a ``{resource: Quantity}`` map."""
    return {name: amount(q) for name, q in quantities.items()}
