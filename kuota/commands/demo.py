"""``kuota demo`` — the bundled scenario simulated and explained, then a live run on
embedded Redis-backed worker pools."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from typing import Any

from rich.panel import Panel

from kuota import render
from kuota.scenario import load_scenario
from kuota.service import cli, showcase
from kuota.simulator import simulate


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        description="Part 1 simulates the bundled scenario: two teams in a cohort borrowing "
                    "GPUs, a flavor fallback, a gang that waits whole, and a job that can never "
                    "fit. Part 2 runs real commands on Redis-backed worker pools (an embedded "
                    "in-process Redis unless --redis or REDIS_URL is given).")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL"), metavar="URL",
                        help="run part 2 against this Redis (default: $REDIS_URL, else embedded)")
    parser.add_argument("--skip-pools", action="store_true",
                        help="only run part 1, the simulated scenario")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = render.make_console()
    path = resources.files("kuota") / "examples" / "demo.yaml"
    with resources.as_file(path) as file:
        scenario = load_scenario(file)
    console.print(Panel.fit(
        "Two teams share a cohort [bold]research[/]: each owns 4 A100 and 4 T4 GPUs "
        "(nominalQuota) and may borrow what the other leaves idle.\n"
        "Scenario: examples/demo.yaml — simulated in virtual time by the same engine the "
        "operator runs.", title="kuota demo"))
    result = simulate(scenario)
    render.timeline(result, console, title="What happened")
    console.print(Panel.fit(
        "• [green]pretrain[/] borrows team-b's idle A100s (borrowing) — elastic quota.\n"
        "• [green]eval[/] finds the A100s taken and falls back to the next flavor, T4.\n"
        "• [green]a100-gang[/] (8 pods, A100 only) waits whole until 8 A100s are free: "
        "no partial start.\n"
        "• [yellow]too-big[/] asks for more GPUs than the cohort will ever have and is "
        "told at once with ExceedsMaxQuota and set aside, blocking no one, instead of "
        "waiting forever.",
        title="What to notice"))
    if args.skip_pools:
        return 0
    console.print(Panel.fit(
        "Part 2: the same engine, live, on Redis-backed worker pools — two pools (a GPU node, "
        "two CPU nodes) running real commands as rq jobs; watch a queue borrow, two jobs wait "
        "for quota and start as soon as it frees.", title="kuota on worker pools"))
    if args.redis is None:
        print(cli.EMBEDDED_NOTE, file=sys.stderr)
    return showcase.run(args.redis,
                        say=lambda line: console.print(line, markup=False, highlight=False))
