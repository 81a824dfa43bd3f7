"""The systemd units shipped for Redis-mode machines (manifests/systemd) name commands and
flags kuota has, and read the settings files the examples beside them define."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kuota.cli import build_parser

UNITS = Path(__file__).resolve().parents[2] / "manifests" / "systemd"


def unit(name: str) -> dict[str, list[str]]:
    """The unit's ``key=value`` settings (continuations joined; keys may repeat)."""
    text = re.sub(r"\\\n\s*", " ", (UNITS / name).read_text())
    settings: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


@pytest.mark.parametrize(("name", "want_command"), [
    ("kuota-scheduler.service", "scheduler"),
    ("kuota-worker@.service", "worker"),
])
def test_a_unit_runs_a_kuota_command_with_flags_it_has(name: str, want_command: str) -> None:
    (exec_start,) = unit(name)["ExecStart"]
    argv = shlex.split(exec_start)
    assert argv[0].endswith("/kuota") and argv[1] == want_command
    # Unit specifiers (%H, %i) and ${VARS} stand for values: give argparse plain ones.
    words = [want_command, *(re.sub(r"%\w|\$\{\w+\}", "x", a) for a in argv[2:])]
    args = build_parser(words).parse_args(words)
    assert args.command == want_command


def test_every_settings_file_a_unit_reads_has_an_example() -> None:
    examples = {p.name.removesuffix(".example") for p in UNITS.glob("*.env.example")}
    for service in UNITS.glob("*.service"):
        for path in unit(service.name).get("EnvironmentFile", []):
            name = Path(path.replace("%i", "gpu-pool")).name
            assert name in examples, f"{service.name} reads {path}: add {name}.example"
    for example in UNITS.glob("*.env.example"):
        for line in example.read_text().splitlines():
            if line and not line.startswith("#"):
                assert re.fullmatch(r"[A-Z_]+=.*", line), (example.name, line)
