"""Compact JSON text, the same characters as the standard library's, written faster.

The store writes small JSON values on every placement and admission: a pod's requests
(``{"cpu":1000}``), a gang's nodes (``["n1","n2"]``), an admission. The standard
library's encoder costs 3–4 µs for each, orjson a tenth of that, which at a thousand
gangs a round is a few percent of the leader's time (``benchmarks/start_jobs.py`` times
both).

The text must not change with the encoder: the place script compares a gang's stored nodes
with a retried placement's, and older schedulers and workers read what newer ones write.
orjson writes the same characters as ``json.dumps(..., separators=(",", ":"),
ensure_ascii=True)`` for everything these values hold, except where it cannot or differs:

* text with a character outside ASCII, or DEL, which the standard library escapes
  (``\\u00e9``, ``\\u007f``) and orjson writes as they are;
* integers beyond 64 bits, which orjson refuses;
* floats, whose shortest form the two may spell differently (``1e-07`` against
  ``1e-7``);
* anything that is not a dict, list, tuple, str, int, bool or None.

Those go to the standard library. The property test in
``tests/unit/store/test_store_compact_json.py`` holds the two equal on generated values.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_SORTED = orjson.OPT_SORT_KEYS
_PLAIN = (str, int, bool, type(None))


def dumps(obj: Any, *, sort_keys: bool = False) -> str:
    """``json.dumps(obj, sort_keys=sort_keys, separators=(",", ":"))``, exactly."""
    text = _fast(obj, sort_keys) if _plain(obj) else None
    return text if text is not None else json.dumps(obj, sort_keys=sort_keys,
                                                    separators=(",", ":"))


def _fast(obj: Any, sort_keys: bool) -> str | None:
    """orjson's text, or None where it is not the standard library's (module doc)."""
    try:
        text = orjson.dumps(obj, option=_SORTED if sort_keys else 0)
    except TypeError:  # an integer beyond 64 bits
        return None
    return text.decode() if text.isascii() and b"\x7f" not in text else None


def _plain(obj: Any) -> bool:
    """Only str keys and plain scalars all the way down (no float: see the module doc)."""
    # (loops, not all(): a generator per container costs a third of what orjson saves)
    kind = type(obj)
    if kind is dict:
        for key, item in obj.items():  # noqa: SIM110
            if type(key) is not str or not _plain(item):
                return False
        return True
    if kind is list or kind is tuple:
        for item in obj:  # noqa: SIM110
            if not _plain(item):
                return False
        return True
    return kind in _PLAIN
