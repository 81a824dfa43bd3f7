"""Where the control-plane binaries are: the cache ``hack/cluster/build-bins.sh`` fills
(and ``hack/helm/build-helm.sh``, for helm).

The pinned versions are read from ``hack/cluster/versions.sh`` (one source of
truth for the build script, CI and the tests). ``KUOTA_CACHE`` moves the
cache (default ``~/.cache/kuota``); ``KUOTA_K8S_VERSIONS`` (space separated)
narrows the versions a test run uses.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
K8S_COMMANDS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("KUOTA_CACHE") or pathlib.Path.home() / ".cache" / "kuota")


def _versions_file() -> str:
    return (ROOT / "hack" / "cluster" / "versions.sh").read_text()


def pinned_versions() -> list[str]:
    """The Kubernetes versions to test: ``KUOTA_K8S_VERSIONS`` if set, else the pinned ones."""
    chosen = os.environ.get("KUOTA_K8S_VERSIONS", "").split()
    if chosen:
        return chosen
    found = re.search(r"KUOTA_K8S_VERSIONS=\(([^)]*)\)", _versions_file())
    assert found, "hack/cluster/versions.sh names no KUOTA_K8S_VERSIONS"
    return found.group(1).split()


def kwok_version() -> str:
    found = re.search(r"KUOTA_KWOK_VERSION=(\S+)", _versions_file())
    assert found, "hack/cluster/versions.sh names no KUOTA_KWOK_VERSION"
    return found.group(1)


@dataclasses.dataclass(frozen=True)
class Binaries:
    """The programs of one Kubernetes version (and the kwok that fakes its nodes)."""

    version: str
    k8s_bin: pathlib.Path
    kwok_bin: pathlib.Path

    def path(self, command: str) -> str:
        base = self.kwok_bin if command == "kwok" else self.k8s_bin
        return str(base / command)

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])


def find_binaries(version: str) -> Binaries | None:
    """The built binaries of ``version``, or None when they are not (completely) built."""
    k8s = cache_dir() / "k8s" / version
    kwok = cache_dir() / "kwok" / kwok_version()
    if not (k8s / ".complete").exists() or not (kwok / ".complete").exists():
        return None
    return Binaries(version, k8s / "bin", kwok / "bin")


def kubectl_path() -> str | None:
    """The kubectl the tests use: the newest pinned build in the cache, else one on PATH."""
    import shutil

    for version in sorted(pinned_versions(), key=lambda v: [int(p) for p in v[1:].split(".")],
                          reverse=True):
        built = cache_dir() / "k8s" / version / "bin" / "kubectl"
        if built.exists():
            return str(built)
    return shutil.which("kubectl")


def helm_version() -> str:
    """The pinned helm release (``hack/helm/version.sh``, read by the build script too)."""
    text = (ROOT / "hack" / "helm" / "version.sh").read_text()
    found = re.search(r"KUOTA_HELM_VERSION=(\S+)", text)
    assert found, "hack/helm/version.sh names no KUOTA_HELM_VERSION"
    return found.group(1)


def helm_path() -> str | None:
    """The helm ``hack/helm/build-helm.sh`` built (``make helm-bin``), or None."""
    built = cache_dir() / "helm" / helm_version()
    return str(built / "bin" / "helm") if (built / ".complete").exists() else None


def require(program: str, path: str | None, how: str) -> str:
    """``path``, or skip the test saying ``how`` to build ``program`` — a failure instead
    when ``KUOTA_REQUIRE_CLUSTER=1`` (CI), where every binary must have been built."""
    import pytest

    if path is None:
        message = f"{program} is not built: run {how}"
        if os.environ.get("KUOTA_REQUIRE_CLUSTER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path
