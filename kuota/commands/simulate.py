"""``kuota simulate SCENARIO.yaml`` — run a scenario in virtual time."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kuota import gctuning, render
from kuota.expect import check
from kuota.scenario import ScenarioError, load_scenario
from kuota.simulator import simulate


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        description="Run a scenario (queue objects + a stream of workloads) through the same "
                    "admission engine the operator uses, in virtual time, and print what was "
                    "admitted when, with which flavors, and why the rest waits. "
                    "Exit status: 0 ran, 1 expectations failed (--check), 2 invalid input.")
    parser.add_argument("scenario", help="scenario YAML file (see docs/simulator.md)")
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table",
                        help="table: a readable timeline (default); json: the result document")
    parser.add_argument("--until", type=float, metavar="SECONDS",
                        help="stop at this virtual time (for open-ended scenarios)")
    parser.add_argument("--html", metavar="FILE",
                        help="also write a self-contained HTML report: per ClusterQueue, "
                             "admitted/pending bands and usage against nominal and borrowing "
                             "limit over time, evictions marked (see docs/dashboard.md)")
    parser.add_argument("--check", action="store_true",
                        help="compare the result with the scenario's expect: block")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    gctuning.tune()
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    if args.html:
        result = _with_report(scenario, args)
        if result is None:
            return 1
    else:
        result = simulate(scenario, until=args.until)
    if args.output == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        render.timeline(result)
    if args.check:
        if scenario.expect is None:
            print(f"{args.scenario}: no expect: block to check", file=sys.stderr)
            return 2
        problems = check(scenario.expect, result.to_json())
        for line in problems:
            print(f"{args.scenario}: {line}", file=sys.stderr)
        return 1 if problems else 0
    return 0


def _with_report(scenario: Any, args: argparse.Namespace) -> Any:
    """Simulate while tracing the queues, and write the report (the same result)."""
    from pathlib import Path

    from kuota.dashboard import report, trace

    traced = trace.trace(scenario, until=args.until)
    try:
        Path(args.html).write_text(report.html(traced, title=Path(args.scenario).name))
    except OSError as exc:
        print(f"--html {args.html}: cannot write the report: {exc.strerror or exc}",
              file=sys.stderr)
        return None
    return traced.result
