"""The image and the wheel it is built from.

No Docker engine runs where the suite runs, so the image is checked in two halves: the
Dockerfile's shape (multi-stage, runtime wheels only, the unprivileged UID the manifests
expect, ``kuota`` as entrypoint), and the wheel its build stage makes — built here the
same way, installed alone into an empty directory and run from outside the repository,
so a module or data file missing from the package fails here and not in a cluster."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("quota", "queueing", "admission", "placement", "multicluster", "kuota")


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of every Dockerfile line, continuations joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1])
            for line in lines if line and not line.startswith("#")]


def test_the_dockerfile_builds_wheels_then_installs_only_them_as_an_unprivileged_user() -> None:
    steps = dockerfile()
    stages = [args for op, args in steps if op == "FROM"]
    assert len(stages) == 2 and stages[0].endswith("AS build"), stages
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM"):]
    runs = " ".join(args for op, args in final if op == "RUN")
    # the image runs the operator, so it carries the `kubernetes` extra (not in the base install)
    assert "--no-index --find-links /wheels 'kuota[kubernetes]'" in runs
    build = " ".join(args for op, args in steps[:len(steps) - len(final)] if op == "RUN")
    assert "--wheel-dir /wheels '.[kubernetes]'" in build
    assert "[dev]" not in runs and "pytest" not in runs
    copied = {args.split()[0] for op, args in steps if op == "COPY" and "--from" not in args}
    assert set(PACKAGES) <= copied, f"the build stage must copy every package: {copied}"
    assert dict(final)["ENTRYPOINT"] == '["kuota"]'
    assert dict(final)["USER"] == "65532:65532"


def test_the_manifests_run_the_image_as_the_dockerfile_user() -> None:
    deployment = yaml.safe_load((REPO / "manifests/operator/deployment.yaml").read_text())
    security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] == 65532
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].split(":")[0] == "kuota"


def test_every_package_the_image_copies_is_one_the_wheel_ships() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    included = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in included) == sorted(PACKAGES)


def test_the_wheel_installed_alone_runs_outside_the_repository(tmp_path: Path) -> None:
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(wheels), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("kuota-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(site), str(wheel)], check=True, capture_output=True,
                   timeout=300)
    # The dependencies come from this interpreter; kuota itself only from the wheel.
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONSAFEPATH": "1"}
    probe = ("import kuota, sys, pathlib; "
             "assert pathlib.Path(kuota.__file__).is_relative_to(sys.argv[1]), kuota.__file__; "
             "from importlib import resources; "
             "assert any(f.name.endswith('.yaml') for f in "
             "resources.files('kuota').joinpath('examples').iterdir()); "
             "assert resources.files('kuota').joinpath('py.typed').is_file(); "
             + "; ".join(f"import {p}" for p in PACKAGES))
    done = subprocess.run([sys.executable, "-c", probe, str(site)], cwd=tmp_path, env=env,
                          text=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run([sys.executable, "-m", "kuota.cli", "--version"], cwd=tmp_path,
                          env=env, text=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert version in done.stdout
