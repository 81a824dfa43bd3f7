"""``kuota validate FILE...``: check object files and simulator scenarios.

Every problem is one line naming file, kind, object and field, as in
``examples/x.yaml: ClusterQueue cq-a: spec.resourceGroups[0].flavors[1].resources: ...``.
Exit status 2 when any file has a problem, 0 otherwise. A file whose single
document is a mapping with ``objects:`` or ``workloads:`` is a scenario and is
checked by :func:`kuota.scenario.load_scenario`; any other file holds
manifests (one or many documents; ``v1`` Namespaces are accepted alongside
kuota and Kueue kinds). A directory stands for the ``*.yaml`` and ``*.yml``
files under it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from quota.api import ObjectError, Problem, parse_documents, read_documents
from quota.api.names import dns_label_error

SCENARIO_KEYS = ("objects", "workloads")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        description="Check kuota (and Kueue v1beta1/v1beta2) manifests and simulator scenarios. "
                    "Prints one line per problem and exits 2 if there is any.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="YAML files, or directories holding them")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problems: list[Problem] = []
    count = 0
    for path in _expand(args.files):
        try:
            count += check_file(path)
        except ObjectError as exc:
            problems.extend(exc.problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 2
    print(f"{count} objects OK")
    return 0


def _expand(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        else:
            yield path


def check_file(path: Path) -> int:
    """Number of objects in ``path``; raises :class:`ObjectError` listing its problems."""
    if not path.is_file():
        raise ObjectError([Problem(str(path), "", "", "", "no such file")])
    source, docs = read_documents(path)
    if len(docs) == 1 and isinstance(docs[0], Mapping) and any(k in docs[0] for k in SCENARIO_KEYS):
        return _check_scenario(path)
    problems: list[Problem] = []
    kuota_docs = []
    namespaces = 0
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("apiVersion") == "v1" \
                and doc.get("kind") == "Namespace":
            problems.extend(_namespace_problems(doc, source))
            namespaces += 1
        else:
            kuota_docs.append(doc)
    try:
        objects = parse_documents(kuota_docs, source=source)
    except ObjectError as exc:
        problems.extend(exc.problems)
        objects = []
    if problems:
        raise ObjectError(problems)
    return len(objects) + namespaces


def _namespace_problems(doc: Mapping[str, Any], source: str) -> list[Problem]:
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    error = dns_label_error(name) if isinstance(name, str) else "is required"
    return [Problem(source, "Namespace", str(name or ""), "metadata.name", error)] if error else []


def _check_scenario(path: Path) -> int:
    from kuota import scenario  # lazily: the simulator is heavier than object checks

    try:
        loaded = scenario.load_scenario(path)
    except scenario.ScenarioError as exc:
        raise ObjectError(exc.problems) from None
    return len(loaded.objects) + len(loaded.workloads)
