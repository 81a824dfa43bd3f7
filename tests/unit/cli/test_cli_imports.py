"""CLI start-up: a command loads only what it uses (issue 12: every call took 1.5–5 s).

Each case runs ``kuota ...`` in a fresh interpreter (``--redis embedded``, so no
server is needed and the command really runs) and lists the modules it has loaded
at exit. The Kubernetes client, kopf, aiohttp, the simulator, the operator and the
admission engine must stay out of the commands a user types in a loop. Timing is
measured by benchmarks/cli_startup.py, not here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

#: Loaded by no command listed below: each is a tenth of a second or more.
HEAVY = ("kubernetes", "kopf", "aiohttp", "kuota.simulator", "kuota.operator", "kuota.render",
         "admission.engine", "kuota.service.leader")

#: What the commands that show the engine's view (``get cq``, ``pending``) leave out.
ENGINE_VIEWS = tuple(m for m in (*HEAVY, "rq", "rich") if m != "admission.engine")

#: What ``submit`` leaves out: it checks the workload against the queues with the engine's
#: own flavor assignment (admission.inadmissible), which imports with the engine.
NEVER_FITS_CHECK = tuple(m for m in HEAVY if m != "admission.engine")

_PROBE = """
import json, sys
from kuota import cli
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    want_absent: tuple[str, ...] = HEAVY
    want_present: tuple[str, ...] = ()


CASES = {
    "--version": Case(("--version",), want_absent=(*HEAVY, "redis", "pydantic", "rich")),
    "--help": Case(("--help",), want_absent=(*HEAVY, "redis", "pydantic", "kuota.commands.get")),
    "get --help": Case(("get", "--help"), want_present=("kuota.commands.get",)),
    "get workloads": Case(("get", "workloads", "--redis", "embedded"),
                          want_absent=(*HEAVY, "pydantic", "rq", "quota.api", "rich")),
    # usage and positions come from the engine the scheduler runs: it may load, no more
    "get cq": Case(("get", "cq", "--redis", "embedded"), want_absent=ENGINE_VIEWS),
    "pending": Case(("pending", "cq", "--redis", "embedded"), want_absent=ENGINE_VIEWS),
    # explained from the engine the scheduler runs (issue 41): it may load once there is a
    # workload to explain, no more; the multi-cluster models only for a dispatched one
    "describe": Case(("describe", "workload", "default/nope", "--redis", "embedded"),
                     want_absent=(*ENGINE_VIEWS, "multicluster", "quota.api.membercluster")),
    "why": Case(("why", "default/nope", "--redis", "embedded"),
                want_absent=(*ENGINE_VIEWS, "multicluster", "quota.api.membercluster")),
    "get -o json": Case(("get", "workloads", "-o", "json", "--redis", "embedded"),
                        want_absent=(*HEAVY, "pydantic", "rq", "rich")),
    # submit tells a workload that can never fit with the core's own rule (issue 41): the
    # admission engine's modules may load (the parsed queue objects' models too), no more
    "submit": Case(("submit", "-q", "default/lq", "--requests", "cpu=1", "--redis", "embedded",
                    "--", "true"), want_absent=NEVER_FITS_CHECK, want_present=("quota.api",)),
    "cancel": Case(("cancel", "nope", "--redis", "embedded")),
    "history": Case(("history", "--redis", "embedded"), want_absent=(*HEAVY, "rq")),
    "status": Case(("status", "--redis", "embedded"),
                   want_absent=(*HEAVY, "rq", "pydantic", "rich")),
    "logs": Case(("logs", "nope", "--redis", "embedded"), want_absent=(*HEAVY, "pydantic")),
    "submit (the Workload models only)": Case(
        ("submit", "-q", "default/lq", "--requests", "cpu=1", "--redis", "embedded", "--",
         "true"), want_absent=(*NEVER_FITS_CHECK, "yaml", "quota.api.clusterqueue",
                               "quota.api.loader")),
    "dashboard --help": Case(("dashboard", "--help"), want_absent=HEAVY),
    "acl": Case(("acl", "submitter", "team-a", "--user", "u"),
                want_absent=(*HEAVY, "redis", "pydantic")),
}


def loaded_modules(argv: tuple[str, ...]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                          text=True, timeout=60, check=False)
    last = done.stderr.strip().splitlines()[-1]
    return set(json.loads(last))


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_command_loads_only_what_it_uses(case: Case) -> None:
    modules = loaded_modules(case.argv)
    heavy = sorted(m for m in modules for name in case.want_absent
                   if m == name or m.startswith(name + "."))
    assert heavy == [], f"kuota {' '.join(case.argv)} loaded {heavy}"
    assert set(case.want_present) <= modules


def test_help_lists_every_command_without_importing_them() -> None:
    from kuota import cli

    done = subprocess.run([sys.executable, "-m", "kuota.cli", "--help"], capture_output=True,
                          text=True, timeout=60, check=True)
    for name, (_, help_line) in cli.COMMANDS.items():
        assert name in done.stdout
        assert help_line.split()[0] in done.stdout


def test_a_named_command_gets_its_full_parser() -> None:
    """The help table and the modules agree: each name in it parses as its own command."""
    from kuota import cli

    for name in cli.COMMANDS:
        parser = cli.build_parser([name])
        [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert action.choices[name].get_default("func") is not None, name
