"""Digests of a stored Workload manifest: its exact text, and its *shape*.

A scheduler that takes over must know every stored workload it will queue, and checking
a manifest (the models, every rule) is most of what that costs. The workloads of a job
array, a sweep or a benchmark class differ only in their names, so the submission stores
beside the manifest two digests:

* ``shape`` — of the manifest with ``metadata.name`` and ``metadata.namespace`` blanked:
  equal for workloads that ask for the same thing in the same way;
* ``spec_sum`` — of the stored manifest text itself.

A reader that has checked one manifest of a shape need not parse another whose text still
has the ``spec_sum`` it was submitted with: the text is the one kuota stored, so its shape
is the one the submission computed. A manifest rewritten around kuota no longer matches
its ``spec_sum`` and is read and checked in full.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical(doc: Mapping[str, Any]) -> str:
    """The text the store keeps for a manifest: sorted keys, no spaces."""
    return json.dumps(dict(doc), sort_keys=True, separators=(",", ":"))


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def shape(doc: Mapping[str, Any]) -> str:
    """The digest of ``doc``'s canonical text without its name and namespace."""
    meta = doc.get("metadata")
    meta = {**meta, "name": "", "namespace": ""} if isinstance(meta, dict) else meta
    return digest(canonical({**doc, "metadata": meta}))
