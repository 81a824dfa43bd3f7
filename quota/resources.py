"""Resource amounts and resource vectors: the arithmetic every quota decision uses.

Kubernetes writes quantities as strings ("500m", "1Gi", "2"). The core never
works on strings: every amount is parsed once, at the edge, into an integer
count of *milli-units* (1 cpu = 1000, 1 byte of memory = 1000, 1 GPU = 1000).
One unit for every resource keeps the arithmetic exact (no floats), makes
fractional CPUs and whole bytes equally representable, and lets one vector type
hold any mix of resources.

A *flavor-resource* ``(flavor, resource)`` names one quota cell, e.g.
``("a100", "nvidia.com/gpu")``. A :class:`FRVector` maps cells to amounts; a
missing cell is zero.

Limits may be absent: Kueue's nil ``borrowingLimit`` means "no cap". The core
spells that explicitly as :data:`UNLIMITED` (``None``) and every helper that
combines limits handles it, so no sentinel number can overflow or leak into a
sum.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import cache
from types import ModuleType
from typing import Any, Final, NamedTuple, TypeAlias

#: An amount of one resource, in milli-units.
Amount: TypeAlias = int
#: An optional limit: ``None`` means no limit.
Limit: TypeAlias = int | None
#: Absent limit, spelled out.
UNLIMITED: Final[Limit] = None

MILLI: Final = 1000
#: The largest amount a quantity may have: what Kubernetes itself can hold as milli-units
#: (an int64, ``Quantity.MilliValue``), about 9.2e15 units. Larger, infinite or NaN values
#: are refused where they are read, so no sum, float conversion or rendering downstream can
#: overflow — one absurd number must not break every process that reads it.
MAX_AMOUNT: Final = 2**63 - 1


class FlavorResource(NamedTuple):
    """One quota cell: a resource of one flavor."""

    flavor: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource} in flavor {self.flavor}"


#: Amounts per flavor-resource cell; missing cells are zero.
FRVector: TypeAlias = dict[FlavorResource, Amount]
#: Amounts per resource name (a pod's or a podSet's requests).
ResourceVector: TypeAlias = dict[str, Amount]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_amount(value: str | int | float | Decimal) -> Amount:
    """Parse a Kubernetes quantity into milli-units, rounding up like Kubernetes.

    Refuses (:class:`QuantityError`) anything that is not a finite quantity between 0 and
    :data:`MAX_AMOUNT` milli-units.

    >>> parse_amount("500m"), parse_amount("2"), parse_amount("1Ki")
    (500, 2000, 1024000)
    """
    units = _parse_units(value, Decimal(MAX_AMOUNT) / MILLI)
    return math.ceil(units * MILLI)


def parse_request(value: str | int | float | Decimal) -> Amount:
    """Parse a pod's request: as :func:`parse_amount`, except that a quantity Kubernetes
    holds (at most :data:`MAX_AMOUNT` units) but kuota cannot count in milli-units is
    saturated at :data:`MAX_AMOUNT`, as Kueue saturates such a request. No quota is that
    large (:func:`parse_amount` refuses it), so the workload is refused with
    ``ExceedsMaxQuota`` rather than its whole manifest with a parse error. Larger
    quantities are refused as absurd.

    >>> parse_request("9223372036854776") == MAX_AMOUNT
    True
    """
    units = _parse_units(value, Decimal(MAX_AMOUNT))
    if units > Decimal(MAX_AMOUNT) / MILLI:
        return MAX_AMOUNT
    return math.ceil(units * MILLI)


def _parse_units(value: str | int | float | Decimal, most: Decimal) -> Decimal:
    """The quantity ``value`` in units, refused unless finite and within ``[0, most]``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    shown = short_repr(value)
    if isinstance(value, int) and abs(value) > most:  # before any text conversion
        raise QuantityError(f"{shown} is too large (at most {int(most)})")
    try:
        parsed = Decimal(_parse_quantity()(value))
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise QuantityError(f"{shown} is not a quantity") from exc
    if not parsed.is_finite():
        raise QuantityError(f"{shown} is not a finite quantity")
    if parsed < 0:
        raise QuantityError(f"{shown} must not be negative")
    if parsed > most:
        raise QuantityError(f"{shown} is too large (at most {int(most)})")
    return parsed


@cache
def _parse_quantity() -> Callable[[Any], Decimal]:
    """The kubernetes client's quantity parser (pure string arithmetic), loaded alone.

    ``import kubernetes.utils`` would first run the package's ``__init__``, which loads the
    whole API client and its configuration code (a quarter of a second), and every ``kuota``
    command parses quantities: so the one module is loaded from the installed package's
    files without its parents.
    """
    spec = importlib.util.find_spec("kubernetes")  # finds the package, runs none of it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the kubernetes client package is not installed")
    path = f"{next(iter(spec.submodule_search_locations))}/utils/quantity.py"
    loaded = importlib.util.spec_from_file_location("kuota._kubernetes_quantity", path)
    if loaded is None or loaded.loader is None:
        raise ImportError(f"cannot load {path}")
    module: ModuleType = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    parse: Callable[[Any], Decimal] = module.parse_quantity
    return parse


def short_repr(value: object) -> str:
    """A value for a message, cut short: a pathological input must not make the message
    itself fail (Python refuses to render ints of more than 4,300 digits) or flood a log."""
    if isinstance(value, int) and abs(value) > 10**30:
        return "a number of more than 30 digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_BINARY_SUFFIXES: Final = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30),
                           ("Mi", 2**20), ("Ki", 2**10))


def format_amount(amount: Amount, resource: str = "") -> str:
    """Render milli-units as the shortest exact Kubernetes quantity.

    Memory-like resources use binary suffixes when the value is a whole
    multiple; everything else prints whole units or ``m``.
    """
    if amount % MILLI:
        return f"{amount}m"
    units = amount // MILLI
    if resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-"):
        for suffix, size in _BINARY_SUFFIXES:
            if units and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


def format_vector(vector: Mapping[str, Amount]) -> str:
    """``cpu=2,memory=1Gi`` — for messages and tables."""
    return ",".join(f"{name}={format_amount(v, name)}" for name, v in sorted(vector.items()))


def parse_vector(text: str) -> ResourceVector:
    """Parse ``cpu=1,memory=2Gi,nvidia.com/gpu=1`` (the CLI's spelling)."""
    vector: ResourceVector = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise QuantityError(f"{part!r} is not NAME=QUANTITY")
        vector[name.strip()] = parse_amount(value.strip())
    return vector


def add_vectors(vectors: Iterable[Mapping[str, Amount]]) -> ResourceVector:
    total: ResourceVector = {}
    for vector in vectors:
        for name, amount in vector.items():
            total[name] = total.get(name, 0) + amount
    return total


def scale(vector: Mapping[str, Amount], factor: int) -> ResourceVector:
    return {name: amount * factor for name, amount in vector.items()}


def min_limit(a: Limit, b: Limit) -> Limit:
    """The tighter of two limits, where ``None`` is no limit."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def add_limit(a: Limit, b: Amount) -> Limit:
    return None if a is None else a + b


def fits(request: Amount, limit: Limit) -> bool:
    return limit is None or request <= limit
