"""The three PATCH formats a Kubernetes API server accepts.

* JSON patch (RFC 6902, ``application/json-patch+json``): a list of operations
  on JSON pointers. A failed ``test`` operation rejects the whole patch — the
  server answers 422, which is how kopf guards its finalizer patch with a
  ``test`` of ``/metadata/resourceVersion``.
* JSON merge patch (RFC 7386, ``application/merge-patch+json``): a partial
  document; ``null`` removes a key, lists are replaced whole.
* Strategic merge patch (``application/strategic-merge-patch+json``, built-in
  kinds only): a merge patch whose lists of named things (containers, env,
  volumes, conditions...) are merged element by element on a key, with the
  ``$patch`` / ``$setElementOrder`` / ``$retainKeys`` directives kubectl sends.
  The real server knows the merge key of every list from the Go types; the
  emulator keeps a short table of the common ones and replaces other lists.

All functions are pure: they return a new document and never change their
arguments.
"""

from __future__ import annotations

from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied; the server answers 422 with this message."""


def clone(value: Any) -> Any:
    """A deep copy of JSON data; ~4x faster than copy.deepcopy (no memo, no reflection)."""
    if type(value) is dict:
        return {key: clone(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return [clone(item) for item in value]
    return value


# --- RFC 6902 ---------------------------------------------------------------------------------

def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer {path!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, *, for_insert: bool) -> int:
    if for_insert and token == "-":
        return len(container)
    if not token.isdigit():
        raise PatchError(f"invalid array index {token!r} in path {path!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not for_insert):
        raise PatchError(f"array index {index} out of range in path {path!r}")
    return index


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("the whole document cannot be the target of this operation")
    node = doc
    for token in tokens[:-1]:
        node = _child(node, token, path)
    return node, tokens[-1]


def _child(node: Any, token: str, path: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"path {path!r} does not exist: missing key {token!r}")
        return node[token]
    if isinstance(node, list):
        return node[_index(node, token, path, for_insert=False)]
    raise PatchError(f"path {path!r} goes through a scalar at {token!r}")


def _get(doc: Any, path: str) -> Any:
    node = doc
    for token in _pointer(path):
        node = _child(node, token, path)
    return node


def _add(doc: Any, path: str, value: Any) -> Any:
    if path == "":
        return value
    parent, token = _parent(doc, path)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, path, for_insert=True), value)
    else:
        raise PatchError(f"cannot add at {path!r}: the parent is a scalar")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parent, token = _parent(doc, path)
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"cannot remove {path!r}: it does not exist")
        del parent[token]
    elif isinstance(parent, list):
        del parent[_index(parent, token, path, for_insert=False)]
    else:
        raise PatchError(f"cannot remove {path!r}: the parent is a scalar")
    return doc


def json_patch(doc: Any, operations: Any) -> Any:
    """Apply an RFC 6902 patch; raise :class:`PatchError` on any failed operation."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    result = clone(doc)
    for number, operation in enumerate(operations):
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise PatchError(f"JSON patch operation #{number} needs 'op' and 'path'")
        op, path = operation["op"], operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f"JSON patch operation #{number} ({op} {path}) needs 'value'")
        match op:
            case "add":
                result = _add(result, path, clone(operation["value"]))
            case "remove":
                result = _remove(result, path)
            case "replace":
                _get(result, path)  # must exist
                if path == "":
                    result = clone(operation["value"])
                else:
                    result = _add(_remove(result, path), path, clone(operation["value"]))
            case "move" | "copy":
                source = operation.get("from")
                if source is None:
                    raise PatchError(f"JSON patch operation #{number} ({op}) needs 'from'")
                value = clone(_get(result, source))
                if op == "move":
                    result = _remove(result, source)
                result = _add(result, path, value)
            case "test":
                actual = _get(result, path)
                if actual != operation["value"]:
                    raise PatchError(f"testing value {path} failed: "
                                     f"expected {operation['value']!r}, found {actual!r}")
            case _:
                raise PatchError(f"JSON patch operation #{number} has unknown op {op!r}")
    return result


# --- RFC 7386 ---------------------------------------------------------------------------------

def merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# --- strategic merge --------------------------------------------------------------------------

#: Lists merged element by element, by the key of their elements (from the Go API types).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "schedulingGates": "name",
}
#: Lists of scalars merged as sets.
MERGED_SCALAR_LISTS = {"finalizers"}


def _ports_key(items: list[Any]) -> str:
    return "containerPort" if any("containerPort" in i for i in items if isinstance(i, dict)) \
        else "port"


def strategic_merge_patch(doc: Any, patch: Any) -> Any:
    """Apply a strategic merge patch (the subset described in the module docstring)."""
    if not isinstance(patch, dict):
        return clone(patch)
    if patch.get("$patch") == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = clone(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _merge_list(field: str, existing: Any, patch: list[Any]) -> list[Any]:
    current: list[Any] = list(existing) if isinstance(existing, list) else []
    if field in MERGED_SCALAR_LISTS:
        return current + [v for v in patch if v not in current]
    key = MERGE_KEYS.get(field) or (_ports_key(current + patch) if field == "ports" else None)
    if key is None or not all(isinstance(item, dict) for item in patch):
        return [item for item in clone(patch) if item != {"$patch": "replace"}]
    result: list[Any] = clone(current)
    for item in patch:
        position = next((i for i, old in enumerate(result)
                         if isinstance(old, dict) and old.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if position is not None:
                del result[position]
        elif position is None:
            result.append({k: v for k, v in clone(item).items() if k != "$patch"})
        else:
            result[position] = strategic_merge_patch(result[position], item)
    return result
