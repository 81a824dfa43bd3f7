"""``kubectl kuota pending`` against an API server without kuota's visibility API.

A cluster where the APIService ``v1beta2.visibility.kuota.dev`` is not installed (the
chart with ``visibility.enabled=false``, a kustomize install that left it out)
answers the pending-workloads path with a bare ``404 Not Found``; the plugin used
to print just that. It now says the API is not installed and how to install it,
exit status 1. The emulator serves no such group, like that cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kuota import kubectl
from tests.emulator import Emulator, write_kubeconfig


@pytest.mark.parametrize("kind", ["clusterqueue", "localqueue"])
def test_pending_says_the_visibility_api_is_not_installed(
        k8s_api: Emulator, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        kind: str) -> None:
    config = write_kubeconfig(k8s_api.url, tmp_path / "kubeconfig")
    status = kubectl.main(["--kubeconfig", str(config), "pending", kind, "research"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith("error: pending positions are not served by this cluster: the API "
                          "visibility.kuota.dev/v1beta2 is not installed"), err
    assert "Not Found" not in err
