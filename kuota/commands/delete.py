"""``kuota delete KIND NAME`` / ``kuota delete -f FILE`` — remove queue objects (Redis mode)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kuota.service import cli
from quota import api


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "delete",
        description="Remove queue objects from the Redis store, by kind and name or by the "
                    f"objects of a file. Kinds: {cli.kinds_help()}. Workloads are not deleted: "
                    "cancel them with `kuota cancel`.")
    parser.add_argument("kind", nargs="?", help="object kind")
    parser.add_argument("name", nargs="?", help="object name (NAMESPACE/NAME for LocalQueues)")
    parser.add_argument("-f", "--filename", action="append", metavar="FILE",
                        help="delete the objects of this YAML file (repeatable)")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    targets: list[tuple[str, str]] = []
    if args.filename:
        for path in args.filename:
            for obj in api.load_objects(path):
                name = obj.metadata.name
                if obj.kind == "LocalQueue":
                    name = f"{obj.metadata.namespace or 'default'}/{name}"
                targets.append((obj.kind, name))
    elif args.kind and args.name:
        targets.append((args.kind, args.name))
    else:
        print("error: give KIND NAME or -f FILE", file=sys.stderr)
        return 2
    client = cli.client(args)
    for kind, name in targets:
        client.delete(kind, name)
        print(f"{kind}/{name} deleted")
    return 0
