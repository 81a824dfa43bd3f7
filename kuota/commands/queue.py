"""``kuota queue stop|resume KIND NAME`` — hold a queue, or let it admit again.

Kueue's ``spec.stopPolicy`` on a ClusterQueue or LocalQueue, set from the
command line as ``kueuectl stop|resume clusterqueue|localqueue`` and ``kubectl
kuota`` do, with the same default:

* ``stop`` (``HoldAndDrain``): admit nothing new and evict what is admitted —
  evicted workloads go back to waiting, and run again on resume;
* ``stop --keep-already-running`` (``Hold``): admit nothing new; admitted
  workloads run on;
* ``resume`` (``None``): admit again.

``--drain`` (from when ``stop`` held by default) is still accepted, with a warning.

The stored manifest is changed and applied again, so the same validation
runs as for ``kuota apply`` and the scheduler takes the change up at once.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any

from kuota.conventions import stop_policy
from kuota.service import cli
from queueing.store import NotFound

_KINDS = {"clusterqueue": "ClusterQueue", "cq": "ClusterQueue",
          "localqueue": "LocalQueue", "lq": "LocalQueue"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "queue",
        description="Stop a ClusterQueue or LocalQueue (spec.stopPolicy HoldAndDrain, as "
                    "kueuectl: admit nothing new and evict what is admitted; "
                    "--keep-already-running: Hold, admitted workloads run on) or resume it "
                    "(stopPolicy None).")
    parser.add_argument("action", choices=("stop", "resume"))
    parser.add_argument("kind", choices=sorted(_KINDS), metavar="KIND",
                        help="clusterqueue (cq) or localqueue (lq)")
    parser.add_argument("name", help="ClusterQueue name, or LocalQueue NAMESPACE/NAME")
    parser.add_argument("--keep-already-running", action="store_true",
                        help="stop: Hold (admit nothing new, admitted workloads run on) "
                             "instead of HoldAndDrain")
    parser.add_argument("--drain", action="store_true",
                        help="deprecated: HoldAndDrain is what stop does by default now")
    cli.add_store_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    kind = _KINDS[args.kind]
    if (args.drain or args.keep_already_running) and args.action != "stop":
        raise ValueError("--keep-already-running and --drain go with stop")
    if args.drain and args.keep_already_running:
        raise ValueError("--drain and --keep-already-running contradict each other")
    if args.drain:
        print("warning: --drain is deprecated: stop drains by default (HoldAndDrain, as "
              "kueuectl); --keep-already-running holds only", file=sys.stderr)
    name = args.name if kind == "ClusterQueue" or "/" in args.name else f"default/{args.name}"
    policy = "None" if args.action == "resume" else stop_policy(args.keep_already_running)
    client = cli.client(args)
    manifest = client.store.objects.manifests(kind).get(name)
    if manifest is None:
        raise NotFound(f"{kind} {name}: not found")
    changed = copy.deepcopy(manifest)
    changed.setdefault("spec", {})["stopPolicy"] = policy
    client.apply([changed])
    print(f"{kind} {name} {'resumed' if policy == 'None' else 'stopped'} "
          f"(stopPolicy {policy})")
    return 0
