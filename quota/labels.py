"""Label-selector requirements, evaluated the way Kubernetes does.

One function serves every place a ``matchExpressions`` entry is checked: a
ClusterQueue's namespaceSelector, a pod's required node affinity against a
flavor's labels, and node affinity against real nodes in placement.

``In``/``NotIn`` compare the label's value with ``values``; ``Exists`` and
``DoesNotExist`` look only at presence; ``Gt``/``Lt`` (node affinity only)
need the label present and both sides integers, and otherwise do not match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def requirement_matches(key: str, operator: str, values: Sequence[str],
                        labels: Mapping[str, str]) -> bool:
    value = labels.get(key)
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and values:
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False
