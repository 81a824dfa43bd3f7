"""``kuota operator --kubeconfig PATH --context NAME``: which credentials the operator logs in with.

kopf's own kubeconfig login reads only ``$KUBECONFIG``'s current context and takes
certificate paths as written; these pin what the operator's login does instead: the
named context (or the current one), paths relative to the kubeconfig's directory,
the context's namespace, the file read anew at every login (a replaced token is
taken up after a 401), and errors that name the flag.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from kuota.operator import kubeconfig


def write(path: pathlib.Path, *, current: str = "dev", dev_token: str = "dev-token") -> None:
    config: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [
            {"name": "dev", "cluster": {"server": "https://dev.example:6443",
                                        "certificate-authority": "certs/dev-ca.crt"}},
            {"name": "prod", "cluster": {"server": "https://prod.example:6443",
                                         "insecure-skip-tls-verify": True}}],
        "users": [{"name": "dev", "user": {"token": dev_token}},
                  {"name": "prod", "user": {"token": "prod-token"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dev"}},
                     {"name": "prod", "context": {"cluster": "prod", "user": "prod",
                                                  "namespace": "team-a"}}]}
    path.write_text(yaml.safe_dump(config))


@pytest.fixture
def config(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "dev-ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    path = tmp_path / "kubeconfig"
    write(path)
    return path


def test_the_named_context_is_used_not_the_current_one(config: pathlib.Path) -> None:
    info = kubeconfig.connection(kubeconfig.Source(str(config), "prod"))
    assert (info.server, info.scheme, info.token) == (
        "https://prod.example:6443", "Bearer", "prod-token")
    assert info.insecure is True
    assert info.default_namespace == "team-a"


def test_without_a_context_the_current_one_is_used_with_its_ca_beside_the_kubeconfig(
        config: pathlib.Path) -> None:
    info = kubeconfig.connection(kubeconfig.Source(str(config)))
    assert (info.server, info.token) == ("https://dev.example:6443", "dev-token")
    assert info.ca_path == str(config.parent / "certs" / "dev-ca.crt")
    assert info.insecure is False


def test_each_login_reads_the_file_anew(config: pathlib.Path) -> None:
    source = kubeconfig.Source(str(config))
    assert kubeconfig.connection(source).token == "dev-token"
    write(config, dev_token="rotated")
    assert kubeconfig.connection(source).token == "rotated"


def test_kubeconfig_from_the_environment_when_only_a_context_is_given(
        config: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(config))
    assert kubeconfig.connection(kubeconfig.Source(None, "prod")).token == "prod-token"


def test_an_unknown_context_names_the_flag_and_the_contexts_there_are(
        config: pathlib.Path) -> None:
    with pytest.raises(kubeconfig.KubeconfigError) as refused:
        kubeconfig.connection(kubeconfig.Source(str(config), "staging"))
    assert str(refused.value) == (f"--context staging: no such context in {config} "
                                  "(it has: dev, prod)")


def test_an_unreadable_kubeconfig_names_the_flag(tmp_path: pathlib.Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\n")  # no contexts at all
    with pytest.raises(kubeconfig.KubeconfigError, match=r"^--kubeconfig "):
        kubeconfig.connection(kubeconfig.Source(str(broken)))
