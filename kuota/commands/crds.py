"""``kuota crds``: write or check the generated CRDs (and the API reference page)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kuota import crds, kueuecrds
from quota.api import GROUP


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "crds",
        description="Generate one CRD file per kind (<plural>.kuota.dev.yaml) from the API "
                    "models, or check that checked-in files match them.")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", type=Path, help="write the CRDs into DIR")
    mode.add_argument("--check", metavar="DIR", type=Path,
                      help="exit 1 if a CRD in DIR is missing or differs from the models")
    mode.add_argument("--print", action="store_true", dest="print_all",
                      help="print every CRD to stdout as one multi-document YAML")
    parser.add_argument("--kueue", action="store_true",
                        help="the CRDs of Kueue's group (<plural>.kueue.x-k8s.io.yaml, v1beta2 "
                             "stored and v1beta1 served through kuota's conversion webhook) "
                             "that `kuota operator --api kueue` serves, e.g. into manifests/kueue")
    parser.add_argument("--docs", metavar="FILE", type=Path,
                        help="also write (or check) the API reference page, e.g. "
                             "docs/reference/api.md")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.kueue and args.docs is not None:
        print("kuota crds: --docs documents kuota.dev's CRDs; not with --kueue",
              file=sys.stderr)
        return 2
    files = kueuecrds.rendered() if args.kueue else crds.rendered()
    if args.print_all:
        sys.stdout.write("---\n".join(files.values()))
        return 0
    if args.write is not None:
        for path in crds.write(args.write, files):
            print(f"wrote {path}")
        if args.docs is not None:
            text = crds.reference()
            if not args.docs.exists() or args.docs.read_text(encoding="utf-8") != text:
                args.docs.parent.mkdir(parents=True, exist_ok=True)
                args.docs.write_text(text, encoding="utf-8")
                print(f"wrote {args.docs}")
        return 0
    problems = crds.drift(args.check, files, group=kueuecrds.GROUP if args.kueue else GROUP,
                          command="kuota crds --kueue --write" if args.kueue
                          else "kuota crds --write")
    if args.docs is not None:
        if not args.docs.exists():
            problems.append(f"{args.docs}: missing (run `kuota crds --write DIR --docs "
                            f"{args.docs}`)")
        elif args.docs.read_text(encoding="utf-8") != crds.reference():
            problems.append(f"{args.docs}: differs from the models (run `kuota crds --write DIR "
                            f"--docs {args.docs}`)")
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"{len(files)} CRDs up to date in {args.check}")
    return 0
