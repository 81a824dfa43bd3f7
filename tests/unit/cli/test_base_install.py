"""The base install (``pip install .``, ``make demo``) has no kopf: the demo, Redis mode
and the kubectl plugin run without it, and a command of the operator's half says which
extra to install instead of a traceback.

Each case runs in a fresh interpreter where ``kopf`` cannot be imported, as in a
virtualenv without the ``kubernetes`` extra."""

from __future__ import annotations

import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

_WITHOUT_EXTRA = """
import sys
sys.modules["kopf"] = None  # import kopf raises ImportError(name="kopf")
from kuota import cli
sys.exit(cli.main(sys.argv[1:]))
"""

_KUBECTL_WITHOUT_EXTRA = _WITHOUT_EXTRA.replace("from kuota import cli",
                                                "from kuota import kubectl as cli")


def run(script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True,
                          text=True, timeout=120, check=False, cwd=REPO)


def test_the_demo_runs_without_the_kubernetes_extra() -> None:
    done = run(_WITHOUT_EXTRA, "demo", "--redis", "embedded")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ExceedsMaxQuota" in done.stdout
    assert "Succeeded" in done.stdout


@pytest.mark.parametrize(("argv", "started"), [
    (("scheduler",), "leading as"),
    (("worker", "--pool", "lab", "--node", "box-1", "--resources", "cpu=1"), "registered"),
])
def test_a_redis_pool_runs_without_the_kubernetes_extra(argv: tuple[str, ...],
                                                         started: str) -> None:
    with subprocess.Popen([sys.executable, "-c", _WITHOUT_EXTRA, *argv, "--redis", "embedded"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          cwd=REPO) as proc:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # until it says it runs (or ends: then the loop ends too)
            lines.append(line)
            if started in line:
                break
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    assert any(started in line for line in lines), "".join(lines) + rest
    assert "Traceback" not in "".join(lines) + rest


@pytest.mark.parametrize(("script", "argv", "command"), [
    (_WITHOUT_EXTRA, ("operator", "--help"), "kuota operator"),
])
def test_an_operator_command_names_the_extra_to_install(
        script: str, argv: tuple[str, ...], command: str) -> None:
    done = run(script, *argv)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{command} needs kuota's Kubernetes half" in done.stderr
    assert "pip install '.[kubernetes]'" in done.stderr


def test_the_kubectl_plugin_runs_without_the_extra() -> None:
    done = run(_KUBECTL_WITHOUT_EXTRA, "--help")
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_base_dependencies_leave_the_kubernetes_half_to_its_extra() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {d.split("==")[0].lower() for d in project["dependencies"]}
    assert "kubernetes" in names and "kopf" not in names  # parse_quantity is the client's
    extra = {d.split("==")[0].lower() for d in project["optional-dependencies"]["kubernetes"]}
    assert extra == {"kopf"}
    assert "kuota[kubernetes]" in project["optional-dependencies"]["dev"]
