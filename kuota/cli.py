"""The ``kuota`` command line: a thin dispatcher over one module per sub-command.

Each module in :mod:`kuota.commands` has ``register(subparsers)``, which adds
its parser and sets ``func`` to a callable taking the parsed arguments and
returning the exit status. Exit status 2 means invalid input.

Start-up is part of the interface: a command typed in a loop (``get``,
``submit``) must answer in well under a second, so :func:`main` imports only
the module of the command being run. The other commands are listed from
:data:`COMMANDS` (name → one-line help) without importing them; their full
parsers exist only when they run. :func:`build_parser` without ``argv`` builds
every parser (tests and ``kuota completion`` use it).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from kuota import __version__, conventions

#: Sub-commands in the order ``kuota --help`` lists them: name → (module, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "run the bundled demo (no Kubernetes or Redis server needed)"),
    "simulate": ("simulate", "run a scenario through the admission engine in virtual time"),
    "validate": ("validate", "check object files and scenarios; one line per problem"),
    "crds": ("crds", "write or check the CustomResourceDefinitions generated from the models"),
    "extender": ("extender", "serve the kube-scheduler extender (binpack + topology scores)"),
    "apply": ("apply", "store queue objects (ResourceFlavors, ClusterQueues, ...) in Redis"),
    "delete": ("delete", "remove queue objects from Redis"),
    "scheduler": ("scheduler", "run the scheduler service (Redis mode)"),
    "worker": ("worker", "run a worker: one node of a pool (Redis mode)"),
    "submit": ("submit", "submit a workload: a command run by a gang of pods"),
    "get": ("get", "list workloads, clusterqueues, localqueues or nodes (Redis mode)"),
    "pending": ("pending", "list a ClusterQueue's pending workloads with their positions"),
    "status": ("status", "schedulers, leader, pools (free/total), workers and heartbeats"),
    "history": ("history", "finished workloads: outcome, exit codes, durations (like sacct)"),
    "logs": ("logs", "print the output of a workload's pods"),
    "cancel": ("cancel", "cancel workloads by name or selector (pods stopped, quota released)"),
    "queue": ("queue", "stop (Hold, HoldAndDrain) or resume a ClusterQueue or LocalQueue"),
    "node": ("node", "cordon, uncordon, drain or remove a worker node (Redis mode)"),
    "acl": ("acl", "print Redis ACL rules for a pool's users (per-namespace submitters)"),
    "dashboard": ("dashboard", "serve a read-only web dashboard of the queues (live updates)"),
    "why": ("why", "explain where a workload was dispatched and why (multi-cluster)"),
    "describe": ("why", "show a workload's status and its dispatch explanation"),
    "operator": ("operator", "run the Kubernetes operator (Jobs, Workloads, queues)"),
    "completion": ("completion", "print a shell completion script (bash or zsh)"),
}


class _Subparsers:
    """The ``add_subparsers`` action, seen by one command module: it adds parsers with
    the help line of :data:`COMMANDS`, so each line is written once."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("help", COMMANDS[name][1])
        parser: argparse.ArgumentParser = self.inner.add_parser(name, **kwargs)
        return parser


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command ``argv`` names gets its full parser
    (and its module imported), the others are one-line placeholders for ``--help``."""
    parser = argparse.ArgumentParser(
        prog="kuota",
        description="Job-level queueing and quota manager for Kubernetes and Redis worker pools.",
    )
    parser.add_argument("--version", action="version", version=f"kuota {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = None if argv is None else _command_of(argv)
    registered: set[str] = set()
    for name, (module_name, help_line) in COMMANDS.items():
        if wanted is None or COMMANDS.get(wanted, ("",))[0] == module_name:
            if module_name not in registered:
                module = importlib.import_module(f"kuota.commands.{module_name}")
                module.register(_Subparsers(subparsers))
                registered.add(module_name)
        else:
            subparsers.add_parser(name, help=help_line, add_help=False)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The sub-command ``argv`` names: its first word that is not an option ("" if none;
    the top-level parser has no option taking a value)."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(words)
        args = parser.parse_args(words)
        if not getattr(args, "func", None):
            parser.print_help()
            return conventions.BAD_INPUT
        status: int = args.func(args)
    except ImportError as exc:  # a command of the Kubernetes half, on the base install
        message = conventions.missing_extra(exc, f"kuota {_command_of(words)}")
        if message is None:
            raise
        print(message, file=sys.stderr)
        return conventions.FAILED
    return status


if __name__ == "__main__":
    sys.exit(main())
