"""``kuota operator`` flag validation: bad values are usage errors naming the flag.

Some flags can only be judged together or against a file (``--context`` against the
kubeconfig, ``--webhook-secret`` against ``--webhook-cert-dir``): those are judged
when the command starts, before anything connects, and exit 2 the same way.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

import pytest
import yaml

from kuota import cli
from kuota.cli import build_parser
from kuota.commands.operator import options_from


@dataclass
class Bad:
    argv: list[str]
    want_error: str


BAD = [
    Bad(["--create-backoff", "-1"], "--create-backoff: must be >= 0 seconds"),
    Bad(["--create-backoff", "soon"], "--create-backoff: expected a number of seconds"),
    Bad(["--create-attempts", "0"], "--create-attempts: must be at least 1"),
    Bad(["--create-attempts", "2.5"], "--create-attempts: expected a whole number"),
    Bad(["--member-interval", "0"], "--member-interval: must be > 0 seconds"),
    Bad(["--member-interval", "-3"], "--member-interval: must be > 0 seconds"),
    Bad(["--member-interval", "nan"], "--member-interval: must be > 0 seconds"),
    Bad(["--kubeconfig", "/no/such/kubeconfig"], "--kubeconfig: no such file"),
    Bad(["--webhook-secret", "kuota-webhook-tls"], "--webhook-secret: expected NAMESPACE/NAME"),
    Bad(["--webhook-secret", "kuota-system/"], "--webhook-secret: expected NAMESPACE/NAME"),
    Bad(["--webhook-secret", "a/b/c"], "--webhook-secret: expected NAMESPACE/NAME"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: " ".join(c.argv))
def test_bad_flags_are_usage_errors(case: Bad, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["operator", *case.argv])
    assert exited.value.code == 2
    assert case.want_error in capsys.readouterr().err


def test_good_flags_reach_the_options() -> None:
    args = build_parser().parse_args(["operator", "--create-backoff", "0",
                                      "--create-attempts", "1", "--member-interval", "0.5"])
    options = options_from(args)
    assert (options.create_backoff, options.create_attempts, options.member_interval) == (
        0.0, 1, 0.5)


def _kubeconfig(path: pathlib.Path) -> pathlib.Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "c", "user": "u"}},
                     {"name": "prod", "context": {"cluster": "c", "user": "u"}}]}))
    return path


@pytest.mark.parametrize(("flags", "want_error"), [
    (["--context", "staging"], "--context staging: no such context in {config} "
                               "(it has: dev, prod)"),
    (["--webhook-secret", "kuota-system/tls", "--webhook-listen", "127.0.0.1:9443",
      "--webhook-cert-dir", "{tmp}"], "--webhook-secret and --webhook-cert-dir: give one"),
    (["--webhook-secret", "kuota-system/tls"],
     "--webhook-secret needs --webhook-listen or --visibility-listen"),
    (["--webhook-listen", "127.0.0.1:9443", "--webhook-cert-dir", "{tmp}"],
     "--webhook-cert-dir {tmp} needs tls.crt and tls.key"),
], ids=["unknown-context", "secret-and-dir", "secret-without-server", "empty-cert-dir"])
def test_flags_judged_at_start_exit_2_naming_the_flag(
        flags: list[str], want_error: str, tmp_path: pathlib.Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = _kubeconfig(tmp_path / "kubeconfig")
    values = {"config": config, "tmp": tmp_path}
    argv = ["operator", "--kubeconfig", str(config),
            *(flag.format(**values) for flag in flags)]
    assert cli.main(argv) == 2
    assert want_error.format(**values) in capsys.readouterr().err


def test_the_login_flags_reach_the_parsed_arguments(tmp_path: pathlib.Path) -> None:
    config = _kubeconfig(tmp_path / "kubeconfig")
    args = build_parser().parse_args(["operator", "--kubeconfig", str(config), "--context",
                                      "prod", "--webhook-secret", "kuota-system/kuota-tls"])
    assert (args.kubeconfig, args.context) == (str(config), "prod")
    assert args.webhook_secret == ("kuota-system", "kuota-tls")
