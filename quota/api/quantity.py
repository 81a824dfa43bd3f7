"""Quantities as written in manifests, checked on read and kept as spelled.

A field typed :data:`Quantity` accepts what Kubernetes accepts for a
``resource.Quantity`` in YAML — a string (``"500m"``, ``"1Gi"``) or a plain
number (``2``, ``0.5``) — checks it with :func:`quota.resources.parse_amount`,
and stores the original spelling as a string, so a manifest read and written
back is unchanged. The core never does arithmetic on the string: it calls
:func:`amount` once and works with integer milli-units from then on.

A pod's requests and limits are a :data:`RequestQuantity`: the same, except
that a quantity Kubernetes holds but kuota cannot count in milli-units (more
than an int64 of them) is kept and read as the largest amount
(:func:`quota.resources.parse_request`, Kueue's saturation): the workload
waits with ``ExceedsMaxQuota`` instead of its manifest being refused.
"""

from __future__ import annotations

from collections.abc import Callable
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


def _checker(parse: Callable[[str | int | float | Decimal], resources.Amount]
             ) -> Callable[[object], str]:
    def check(value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
            raise ValueError(
                f"{value!r} is not a quantity (expected a string like '500m' or a number)")
        try:
            # The value itself first: a huge int must be refused before it is turned into text.
            parse(value.strip() if isinstance(value, str) else value)
        except resources.QuantityError as exc:
            raise ValueError(str(exc)) from None
        return value.strip() if isinstance(value, str) else str(value)
    return check


_SCHEMA: Final = WithJsonSchema(
    {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
        "pattern": QUANTITY_PATTERN,
    }
)

#: A finite, non-negative Kubernetes quantity of at most
#: :data:`quota.resources.MAX_AMOUNT` milli-units, stored as written.
Quantity = Annotated[str, BeforeValidator(_checker(resources.parse_amount)), _SCHEMA]

#: A pod's request or limit: a :data:`Quantity` that may also be as large as Kubernetes
#: holds (:data:`quota.resources.MAX_AMOUNT` units); read with :func:`request_amounts`.
RequestQuantity = Annotated[str, BeforeValidator(_checker(resources.parse_request)), _SCHEMA]


@lru_cache(maxsize=8192)
def amount(quantity: str) -> resources.Amount:
    """Milli-units of a :data:`Quantity` (cached: specs repeat the same few strings)."""
    return resources.parse_amount(quantity)


def amounts(quantities: dict[str, str]) -> resources.ResourceVector:
    """Milli-units per resource name of a ``{resource: Quantity}`` map."""
    return {name: amount(q) for name, q in quantities.items()}


@lru_cache(maxsize=8192)
def request_amount(quantity: str) -> resources.Amount:
    """Milli-units of a :data:`RequestQuantity` (saturated at the largest amount)."""
    return resources.parse_request(quantity)


def request_amounts(quantities: dict[str, str]) -> resources.ResourceVector:
    """Milli-units per resource name of a ``{resource: RequestQuantity}`` map."""
    return {name: request_amount(q) for name, q in quantities.items()}
