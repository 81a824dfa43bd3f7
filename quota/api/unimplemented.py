"""Kueue fields kuota does not implement yet: refused by name, never accepted and ignored.

kuota's kinds carry Kueue v1beta2's schema, so a manifest written for Kueue
loads field for field. A few of those fields ask for behaviour kuota does not
have yet (admission fair sharing, concurrent admission, the slice and
sub-group parts of a topology request). Accepting such a field and doing
nothing would make a workload behave differently from what its author asked,
silently; so each one stays in the schema (an API server serving these CRDs
stores it, and the error comes from kuota, not from a pruned field) and is
refused by the model's rules with a message that names the field and says it
is not implemented. Every entry point parses with the models — ``kuota
validate``, Redis ``apply`` and ``submit``, the operator's reading of its
objects — so all of them refuse alike.

The list of every Kueue v1beta2 spec field, and whether kuota implements or
refuses it, is checked by ``tests/unit/api/test_kueue_fields.py``;
docs/concepts.md ("Kueue fields") is the user's copy of it.
"""

from __future__ import annotations

from typing import Final

from quota.api.base import Rules

#: What each refused feature is called in messages, by the field that asks for it.
ADMISSION_FAIR_SHARING: Final = "admission fair sharing (Kueue's AdmissionFairSharing)"
CONCURRENT_ADMISSION: Final = "concurrent admission (Kueue's ConcurrentAdmission)"
TOPOLOGY_SLICES: Final = "topology slices, sub-groups and pod indexes"
UNCONSTRAINED_TOPOLOGY: Final = "unconstrained topology-aware placement"


def message(feature: str) -> str:
    """The refusal text for a field that asks for ``feature``."""
    return (f"kuota does not implement {feature} yet; remove the field "
            f"(docs/concepts.md, 'Kueue fields')")


def refuse(rules: Rules, path: str, given: object, feature: str) -> None:
    """Record a refusal of ``path`` when it was given (not None, not False)."""
    if given is not None and given is not False:
        rules.add(path, message(feature))
