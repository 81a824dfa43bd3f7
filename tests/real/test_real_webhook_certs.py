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
import pathlib
from collections.abc import Iterator

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.kube import Kube
from tests.real import builders as b
from tests.real.operator import Installation, OperatorProcess
from tests.webhook_certs import make_leaf, publish, served_certificate


def _issue(volume: pathlib.Path, generation: int) -> bytes:
    """A new self-signed certificate, published into ``volume`` as a kubelet does; its PEM."""
    files = make_leaf(volume.parent / f"gen-{generation}", f"kuota-webhook-{generation}")
    publish(volume, files, str(generation))
    return files["tls.crt"]


def _set_ca_bundle(kube: Kube, ca: bytes) -> None:
    config = kube.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "kuota")
    bundle = base64.b64encode(ca).decode()
    for hook in config["webhooks"]:
        hook["clientConfig"]["caBundle"] = bundle
    kube.patch("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "kuota",
               {"webhooks": config["webhooks"]})


@pytest.fixture
def volume(tmp_path: pathlib.Path, kube: Kube, installation: Installation
           ) -> Iterator[pathlib.Path]:
    path = tmp_path / "webhook-tls"
    path.mkdir()
    yield path
    _set_ca_bundle(kube, installation.plane.ca.cert.read_bytes())  # back to the session's CA


def test_creates_keep_working_after_the_certificate_is_renewed(
        control_plane: ControlPlane, kube: Kube, namespace: str, installation: Installation,
        volume: pathlib.Path, tmp_path: pathlib.Path) -> None:
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": "none"}),
               b.cluster_queue(cq, quotas={rf: {"cpu": 1}}),
               b.local_queue("main", cq, namespace))
    _set_ca_bundle(kube, _issue(volume, 1))
    with OperatorProcess(installation, tmp_path, cert_dir=volume):
        first = served_certificate(installation.webhook_port)
        assert kube.create(b.job("before", namespace))["spec"]["suspend"] is True

        _set_ca_bundle(kube, _issue(volume, 2))

        def renewed() -> bool:
            return served_certificate(installation.webhook_port) != first

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
