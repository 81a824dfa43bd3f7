"""Reading objects from YAML: files or text with one or more documents.

This is the one place in :mod:`quota.api` that touches files; the edges
(``kuota validate``, the simulator, tests) call it, the core never does. Every
document of every file is checked and all problems are reported together,
each naming the file and the object. Files and YAML are read within the
bounds of :mod:`quota.api.yaml_input` (size, nodes with aliases expanded).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from quota.api import yaml_input
from quota.api.meta import ApiObject
from quota.api.problems import ObjectError, Problem
from quota.api.registry import parse_object


def read_documents(path_or_text: str | Path) -> tuple[str, list[Any]]:
    """``(source, documents)`` of a YAML file, or of YAML text (source ``<text>``).

    A ``str`` is taken as a path when it has no newline and names an existing
    file; one that ends in ``.yaml``, ``.yml`` or ``.json`` but names no file is
    refused as a missing file (not read as YAML text). A missing or unreadable
    :class:`~pathlib.Path` is refused too. Empty documents are skipped; ``kind:
    List`` documents are expanded.
    """
    if isinstance(path_or_text, str) and _names_a_missing_file(path_or_text):
        raise ObjectError([Problem(path_or_text, "", "", "", "no such file")])
    if isinstance(path_or_text, Path) or (
        "\n" not in path_or_text and Path(path_or_text).is_file()
    ):
        source = str(path_or_text)
        try:
            text = yaml_input.read_file(path_or_text)
        except OSError as exc:
            raise ObjectError(
                [Problem(source, "", "", "", f"cannot read: {exc.strerror}")]
            ) from None
        except yaml_input.InputLimitError as exc:
            raise ObjectError([Problem(source, "", "", "", str(exc))]) from None
    else:
        source, text = "<text>", path_or_text
    try:
        docs = [d for d in yaml_input.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ObjectError([Problem(source, "", "", "", _yaml_error(exc))]) from None
    except yaml_input.InputLimitError as exc:
        raise ObjectError([Problem(source, "", "", "", str(exc))]) from None
    return source, list(_expand_lists(docs))


def _names_a_missing_file(text: str) -> bool:
    """A one-line string ending like a manifest file's name that names no file: a path
    mistyped, not YAML text (which would be read as the scalar ``nope.yaml``)."""
    return "\n" not in text and text.strip().endswith((".yaml", ".yml", ".json")) \
        and not Path(text.strip()).is_file()


def _yaml_error(exc: yaml.YAMLError) -> str:
    """One line: where and what (PyYAML's own text spans several lines)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return f"not valid YAML{where}: {problem}"


def _expand_lists(docs: list[Any]) -> Iterator[Any]:
    for doc in docs:
        if (
            isinstance(doc, Mapping)
            and str(doc.get("kind", "")).endswith("List")
            and isinstance(doc.get("items"), list)
        ):
            yield from doc["items"]
        else:
            yield doc


def parse_documents(docs: list[Any], *, source: str) -> list[ApiObject]:
    """Parse every document, collecting all problems into one :class:`ObjectError`."""
    objects: list[ApiObject] = []
    problems: list[Problem] = []
    for doc in docs:
        try:
            objects.append(parse_object(doc, source=source))
        except ObjectError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ObjectError(problems)
    return objects


def load_objects(path_or_text: str | Path) -> list[ApiObject]:
    """Every object of a multi-document YAML file or text; raises :class:`ObjectError`."""
    source, docs = read_documents(path_or_text)
    return parse_documents(docs, source=source)
