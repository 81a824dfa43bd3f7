"""The webhook keeps working when its serving certificate is renewed on disk.

The shipped webhook.yaml has cert-manager issue the certificate from a
``selfSigned`` Issuer: each renewal is a new self-signed certificate, the
Secret mounted into the operator's pod changes (the kubelet swaps the
``..data`` symlink of the volume atomically) and cainjector writes the new
certificate into the webhook configuration's ``caBundle``. From then on the
API server trusts only the new certificate, so an operator still serving the
old one fails every queued Job's create. Here the same happens by hand.
"""

from __future__ import annotations

import base64
import os
import pathlib
import socket
import ssl
from collections.abc import Iterator

import pytest

from tests.cluster import pki
from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import Installation, OperatorProcess


def _issue(volume: pathlib.Path, generation: int) -> pathlib.Path:
    """A new self-signed certificate, published into ``volume`` as a kubelet does."""
    authority = pki.Authority(volume.parent / f"ca-{generation}")
    data = volume / f"..{generation}"
    authority.serving("tls", directory=data)
    link = volume / "..data"
    staging = volume / "..data_tmp"
    staging.symlink_to(data.name)
    os.replace(staging, link)  # the atomic swap
    for name in ("tls.crt", "tls.key"):
        if not (volume / name).is_symlink():
            (volume / name).symlink_to(f"..data/{name}")
    return authority.cert


def _set_ca_bundle(kube: Kube, ca: pathlib.Path) -> None:
    config = kube.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "kuota")
    bundle = base64.b64encode(ca.read_bytes()).decode()
    for hook in config["webhooks"]:
        hook["clientConfig"]["caBundle"] = bundle
    kube.patch("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "kuota",
               {"webhooks": config["webhooks"]})


def _served_certificate(port: int) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw) as tls:
        return tls.getpeercert(binary_form=True) or b""


@pytest.fixture
def volume(tmp_path: pathlib.Path, kube: Kube, installation: Installation
           ) -> Iterator[pathlib.Path]:
    path = tmp_path / "webhook-tls"
    path.mkdir()
    yield path
    _set_ca_bundle(kube, installation.plane.ca.cert)  # back to the session's CA


def test_creates_keep_working_after_the_certificate_is_renewed(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: Installation,
        volume: pathlib.Path, tmp_path: pathlib.Path) -> None:
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": "none"}),
               b.cluster_queue(cq, quotas={rf: {"cpu": 1}}),
               b.local_queue("main", cq, namespace))
    _set_ca_bundle(kube, _issue(volume, 1))
    with OperatorProcess(installation, tmp_path, cert_dir=volume):
        first = _served_certificate(installation.webhook_port)
        assert kube.create(b.job("before", namespace))["spec"]["suspend"] is True

        _set_ca_bundle(kube, _issue(volume, 2))

        def renewed() -> bool:
            return _served_certificate(installation.webhook_port) != first

        kube.wait_for(renewed, what="the operator to serve the renewed certificate", timeout=30)
        created = kube.wait_for(lambda: _create_or_none(kube, b.job("after", namespace)),
                                what="a Job create through the webhook", timeout=30)
        assert created["spec"]["suspend"] is True


def _create_or_none(kube: Kube, job: dict) -> dict | None:
    """The created Job, or None while the API server cannot call the webhook."""
    from kubernetes.dynamic.exceptions import DynamicApiError

    try:
        return kube.create(job)
    except DynamicApiError as refused:
        if "failed calling webhook" in str(refused):
            return None
        raise
