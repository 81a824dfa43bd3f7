"""The ``kuota`` command line: a thin dispatcher over one module per sub-command.

Each module in :mod:`kuota.commands` has ``register(subparsers)``, which adds
its parser and sets ``func`` to a callable taking the parsed arguments and
returning the exit status. Exit status 2 means invalid input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from kuota import __version__

#: Sub-command modules, in the order ``kuota --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "demo",
    "simulate",
    "validate",
    "crds",
    "extender",
    "apply",
    "delete",
    "scheduler",
    "worker",
    "submit",
    "get",
    "pending",
    "logs",
    "cancel",
    "node",
    "why",
    "operator",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kuota",
        description="Job-level queueing and quota manager for Kubernetes and Redis worker pools.",
    )
    parser.add_argument("--version", action="version", version=f"kuota {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"kuota.commands.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
