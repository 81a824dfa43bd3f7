"""How the listing commands print: ``-o table|wide|json|yaml``, filters and ``--watch``.

Two audiences, two shapes. People read *tables*: a few columns chosen to fit
the terminal (``-o wide`` adds the rest). As kubectl's, a table is cut only on a
terminal, and then only its free text (MESSAGE): names, labels and REASON stay
whole; printed to a pipe or a CI log it cuts nothing (docs/cli-conventions.md). Programs
read *objects*: ``-o json|yaml`` print each item as the API object it is —
counts as numbers, resources as Kubernetes quantities, times in RFC 3339 —
one object for a named item, a ``List`` otherwise, as
``kubectl get`` does. A command builds :class:`Item` values (the object, its
row, its labels) and this module does the rest, so every listing filters,
prints and watches the same way. Tables are written without rich, and yaml is
imported only when YAML is printed: a listing typed in a loop stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

OUTPUTS = ("table", "wide", "json", "yaml")


@dataclass(frozen=True)
class Item:
    """One listed thing: its API object (json/yaml) and its table row."""

    obj: dict[str, Any]
    row: dict[str, Any]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Columns:
    """Column names of the table; ``wide`` adds to ``narrow``; ``shrink`` may be cut short
    on a terminal (never one of :data:`kuota.conventions.NEVER_CUT`)."""

    narrow: Sequence[str]
    wide: Sequence[str] = ()
    shrink: Sequence[str] = ("message",)


def add_output_args(parser: argparse.ArgumentParser, *, watch: bool = True,
                    choices: Sequence[str] = OUTPUTS) -> None:
    parser.add_argument("-o", "--output", choices=choices, default="table",
                        help="table (on a terminal, long messages are cut to fit it; "
                             "piped, nothing is cut), wide (every column), json or yaml "
                             "(the objects: numbers, quantities, RFC 3339 times)")
    if watch:
        parser.add_argument("-w", "--watch", action="store_true",
                            help="print again every --interval seconds until Ctrl-C")
        parser.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                            help="with --watch: seconds between refreshes (default 2)")


def add_selector_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-l", "--selector", default="", metavar="SELECTOR",
                        help="label selector: key=value, key!=value, key or !key, "
                             "comma-separated (all must match)")


def rfc3339(seconds: float | None) -> str | None:
    """``2026-11-24T02:33:05Z`` (UTC), or None for an unknown time."""
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="seconds") \
        .replace("+00:00", "Z")


def age(since: float | None, now: float | None = None) -> str:
    """A short age for tables: ``45s``, ``12m``, ``5h``, ``3d``."""
    if not since:
        return "-"
    seconds = max(0, int((now if now is not None else time.time()) - since))
    for limit, unit, size in ((120, "s", 1), (7200, "m", 60), (172800, "h", 3600)):
        if seconds < limit:
            return f"{seconds // size}{unit}"
    return f"{seconds // 86400}d"


def duration(seconds: float | None) -> str:
    """``1h02m03s`` style, or ``-``."""
    if seconds is None:
        return "-"
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


# -- label selectors ------------------------------------------------------------------------

Requirement = tuple[str, str, str]  # (key, op, value); op one of = != exists !exists


def parse_selector(text: str) -> list[Requirement]:
    """Kubernetes' equality-based selector syntax; ValueError naming the bad part."""
    out: list[Requirement] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "!=" in part:
            key, _, value = part.partition("!=")
            out.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, _, value = part.partition("==" if "==" in part else "=")
            out.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            out.append((part[1:].strip(), "!exists", ""))
        else:
            out.append((part, "exists", ""))
        if not out[-1][0]:
            raise ValueError(f"-l: {part!r} has no label key")
    return out


def matches(labels: Mapping[str, str], selector: Sequence[Requirement]) -> bool:
    for key, op, value in selector:
        have = labels.get(key)
        ok = {"=": have == value, "!=": have != value, "exists": have is not None,
              "!exists": have is None}[op]
        if not ok:
            return False
    return True


# -- printing -------------------------------------------------------------------------------

def emit(items: Sequence[Item], columns: Columns, args: argparse.Namespace, *,
         single: bool = False) -> None:
    """Print ``items`` as ``args.output`` asks; ``single``: a NAME was given (one object)."""
    if args.output in ("json", "yaml"):
        doc: Any = items[0].obj if single and items else {
            "apiVersion": "v1", "kind": "List", "items": [i.obj for i in items]}
        if args.output == "json":
            sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False) + "\n")
        else:
            import yaml

            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        return
    names = list(columns.narrow) + (list(columns.wide) if args.output == "wide" else [])
    print_table([i.row for i in items], names,
                shrink=() if args.output == "wide" else columns.shrink)


def print_table(rows: Sequence[Mapping[str, Any]], names: Sequence[str], *,
                shrink: Sequence[str] = (), terminal: bool | None = None) -> None:
    """A borderless table. On a terminal (``terminal``, default: is stdout one?) it is
    made as wide as the terminal: the other columns keep their whole values, the
    ``shrink`` ones share what width is left and are cut with an ellipsis (squeezing every
    column would fold names over two lines, which cannot be copied). Names, labels and
    reasons (:data:`~kuota.conventions.NEVER_CUT`) are never cut, and nothing is when
    stdout is not a terminal: a CI log or a pipe gets every value whole, as from kubectl.

    The rows are padded here and written as they are, the header in bold on a terminal:
    no rich (its table layout costs about a millisecond a row, 150 s for the 300,000
    finished workloads of a week's retention, and importing it a sixth of a ``kuota get``),
    and values are never read as markup. The width is the terminal's (``$COLUMNS`` first,
    80 for a pipe), as rich and kubectl take it."""
    from kuota.conventions import NEVER_CUT

    cells = [[_cell(row.get(name)) for name in names] for row in rows]
    widths = [max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(names)]
    tty = sys.stdout.isatty()
    room = shutil.get_terminal_size().columns
    cut = [i for i, name in enumerate(names) if name in shrink and name not in NEVER_CUT]
    if not (tty if terminal is None else terminal):
        cut = []  # every value whole, even past the terminal's edge
    _fit(cells, widths, cut, room - sum(w for i, w in enumerate(widths) if i not in cut)
         - 2 * (len(names) - 1))

    def line(texts: Sequence[str]) -> str:
        return "  ".join(t.ljust(w) for t, w in zip(texts, widths, strict=True)).rstrip()

    header = line([_shorten(n.upper(), w) for n, w in zip(names, widths, strict=True)])
    if tty and os.environ.get("TERM") != "dumb":
        header = f"\x1b[1m{header}\x1b[0m"
    sys.stdout.write("".join([header + "\n", *(line(row_cells) + "\n" for row_cells in cells)]))
    sys.stdout.flush()


def _fit(cells: list[list[str]], widths: list[int], cut: Sequence[int], room: int) -> None:
    """Cut the ``cut`` columns of ``cells`` to share ``room``: earlier ones take their
    share, the last the rest (each keeps at least 8 characters)."""
    for n, i in enumerate(cut):
        limit = max(8, min(widths[i], room // (len(cut) - n)))
        room -= limit
        widths[i] = limit
        for row_cells in cells:
            row_cells[i] = _shorten(row_cells[i], limit)


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    text = str(value)
    return " ".join(text.split()) if "\n" in text or "\r" in text else text  # one row


def watch(render: Callable[[], None], args: argparse.Namespace) -> int:
    """Run ``render`` once, or — with ``--watch`` — every ``--interval`` seconds until
    Ctrl-C; a terminal is cleared between refreshes, a pipe gets them one after another."""
    if not getattr(args, "watch", False):
        render()
        return 0
    if args.interval <= 0:
        raise ValueError("--interval must be positive")
    clear = sys.stdout.isatty() and args.output in ("table", "wide")
    try:
        while True:
            if clear:
                sys.stdout.write("\x1b[H\x1b[2J")
            render()
            sys.stdout.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
