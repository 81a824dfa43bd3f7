"""``kuota validate FILE...``: check object files and simulator scenarios.

Every problem is one line naming file, kind, object and field, as in
``examples/x.yaml: ClusterQueue cq-a: spec.resourceGroups[0].flavors[1].resources: ...``.
Exit status 2 when any file has a problem, 0 otherwise. A file whose single
document is a mapping with ``objects:`` or ``workloads:`` is a scenario and is
checked by :func:`kuota.scenario.load_scenario`; any other file holds
manifests (one or many documents; ``v1`` Namespaces are accepted alongside
kuota and Kueue kinds). A directory stands for the ``*.yaml`` and ``*.yml``
files under it.

``--to API_VERSION`` also converts: once every file is valid, their manifests
are written to stdout as one YAML stream in ``kuota.dev/v1alpha1``, Kueue's
``kueue.x-k8s.io/v1beta2`` (what ``kuota operator --api kueue`` serves) or
``v1beta1`` (:mod:`quota.api.kueue`); the count goes to stderr. Nothing is
written when a file has a problem.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from quota.api import API_VERSION, ObjectError, Problem, parse_documents, read_documents
from quota.api.kueue import KUEUE_V1BETA1, KUEUE_V1BETA2, to_kueue, to_kuota
from quota.api.names import dns_label_error

SCENARIO_KEYS = ("objects", "workloads")
TARGETS = (API_VERSION, KUEUE_V1BETA2, KUEUE_V1BETA1)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        description="Check kuota (and Kueue v1beta1/v1beta2) manifests and simulator scenarios. "
                    "Prints one line per problem and exits 2 if there is any.")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="YAML files, or directories holding them")
    parser.add_argument("--to", choices=TARGETS, metavar="API_VERSION",
                        help="also write the manifests to stdout converted to API_VERSION: "
                             f"{', '.join(TARGETS)} (Kueue's manifests to kuota's and back)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problems: list[Problem] = []
    count = 0
    paths = list(_expand(args.files))
    for path in paths:
        try:
            count += check_file(path, convertible=args.to is not None)
        except ObjectError as exc:
            problems.extend(exc.problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 2
    if args.to is None:
        print(f"{count} objects OK")
        return 0
    converted = [_converted(doc, args.to) for path in paths
                 for doc in read_documents(path)[1] if doc]
    sys.stdout.write(yaml.safe_dump_all(converted, sort_keys=False))
    print(f"{count} objects OK, written as {args.to}", file=sys.stderr)
    return 0


def _converted(doc: Mapping[str, Any], target: str) -> Any:
    """``doc`` (valid: its conversion has no problems) in ``target``'s API version."""
    if doc.get("apiVersion") == "v1":
        return dict(doc)
    return to_kuota(doc)[0] if target == API_VERSION else to_kueue(doc, target)[0]


def _expand(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
        else:
            yield path


def check_file(path: Path, *, convertible: bool = False) -> int:
    """Number of objects in ``path``; raises :class:`ObjectError` listing its problems
    (``convertible``: a scenario file is one, as only manifests are converted)."""
    if not path.is_file():
        raise ObjectError([Problem(str(path), "", "", "", "no such file")])
    source, docs = read_documents(path)
    if len(docs) == 1 and isinstance(docs[0], Mapping) and any(k in docs[0] for k in SCENARIO_KEYS):
        if convertible:
            raise ObjectError([Problem(source, "", "", "", "a simulator scenario: --to "
                                                           "converts manifests only")])
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
