"""YAML from users, read within bounds: every place kuota loads a user's YAML comes here.

Two attacks on a YAML reader take no skill (issue 42):

* **A file that never ends.** ``kuota submit -f /dev/zero`` read until memory
  ran out. Files are read up to :data:`MAX_FILE_BYTES`, 3 MiB — the
  Kubernetes API server's limit on a request body — and refused past it
  without reading more.
* **Alias expansion.** A 630-byte "billion laughs" document (nine anchors,
  each a list of nine aliases of the one before) stands for 10^9 nodes. PyYAML
  builds it as shared references in no time, but everything after it —
  validation, conversion, JSON — walks it as a tree: it took 81 s of CPU
  before it was refused. Kubernetes' YAML library refuses such documents for
  the same reason ("excessive aliasing").

So composition counts nodes as it goes, an alias counting as every node it
stands for (known once its anchor's node is composed), and stops as soon as
the stream passes :data:`MAX_NODES`: the bomb is refused after composing a
few dozen nodes, in milliseconds, before anything is built from it. The same
count bounds plain documents, whose nodes cost memory too (PyYAML keeps about
400 bytes per node while composing). An alias inside its own anchor (a
recursive structure, which no manifest needs and every tree walk would
follow forever) is refused too.

Errors are :class:`InputLimitError` (a :class:`ValueError`) with a one-line
message; callers add the file and object. YAML syntax errors stay
:class:`yaml.YAMLError`, as from :func:`yaml.safe_load`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

#: Largest YAML file read: the Kubernetes API server's limit on a request body (3 MiB).
MAX_FILE_BYTES: Final = 3 * 1024 * 1024
#: Most nodes in one stream, an alias counting as the nodes it stands for. A Workload
#: has a few dozen to a few hundred, a ClusterQueue a few dozen: 100,000 is thousands
#: of objects, and about 2 s and 50 MB of composing (a 3 MiB file may hold 800,000).
MAX_NODES: Final = 100_000


class InputLimitError(ValueError):
    """Input past one of this module's bounds; the message names the bound."""


def read_file(path: str | Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of ``path``, reading at most ``limit`` + 1 bytes of it.

    :class:`OSError` as :func:`open` raises it; :class:`InputLimitError` for a file
    larger than ``limit`` (or endless, like ``/dev/zero``) and for one not UTF-8.
    """
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise InputLimitError(f"larger than {limit:,} bytes, the most a file may hold "
                              "(the Kubernetes API server's request limit)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputLimitError(f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def safe_load_all(text: str, max_nodes: int = MAX_NODES) -> list[Any]:
    """Every document of ``text`` (``None`` for empty ones), as :func:`yaml.safe_load_all`."""
    loader = _BoundedLoader(text, max_nodes)
    try:
        documents = []
        while loader.check_node():
            documents.append(loader.construct_document(loader.get_node()))
        return documents
    except RecursionError:
        raise InputLimitError("not valid YAML: nested too deeply") from None
    finally:
        loader.dispose()


def safe_load(text: str, max_nodes: int = MAX_NODES) -> Any:
    """The single document of ``text``, as :func:`yaml.safe_load`."""
    loader = _BoundedLoader(text, max_nodes)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_document(node)
    except RecursionError:
        raise InputLimitError("not valid YAML: nested too deeply") from None
    finally:
        loader.dispose()


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting composed nodes with aliases expanded."""

    def __init__(self, text: str, max_nodes: int) -> None:
        super().__init__(text)
        self._max_nodes = max_nodes
        self._nodes = 0
        self._sizes: dict[int, int] = {}  # id(node) -> nodes it stands for, once composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:  # else PyYAML reports the undefined alias
                size = self._sizes.get(id(target))
                if size is None:
                    raise InputLimitError(f"alias *{event.anchor} at line {_line(event)} is "
                                          "inside its own anchor (a recursive structure)")
                self._count(size, event)
            return super().compose_node(parent, index)
        before = self._nodes
        self._count(1, event)
        node = super().compose_node(parent, index)
        self._sizes[id(node)] = self._nodes - before
        return node

    def _count(self, nodes: int, event: yaml.Event) -> None:
        self._nodes += nodes
        if self._nodes > self._max_nodes:
            raise InputLimitError(f"more than {self._max_nodes:,} YAML nodes (aliases counted "
                                  f"as the nodes they stand for), at line {_line(event)}")

    def compose_document(self) -> yaml.Node | None:
        node = super().compose_document()
        self._sizes.clear()  # anchors do not cross documents; their nodes may be freed
        return node


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0
