"""The webhook's certificate renewed on disk while the operator runs.

The certificate directory is laid out as the kubelet lays out a mounted
Secret: ``tls.crt -> ..data/tls.crt`` and ``..data -> ..<generation>``, a
renewal writing a new generation directory and swapping ``..data`` in one
rename. Jobs are created through the emulator all along (each one calls the
webhook over HTTPS, verified against the configuration's ``caBundle``), and
the certificate the webhook serves is read off a TLS handshake.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import pathlib
import ssl
import threading
import time
from typing import Any

import pytest

from kuota.operator.certs import ServingCertificate, load
from tests.emulator import Emulator
from tests.emulator.clients import call
from tests.integration.operator import harness as h
from tests.webhook_certs import make_ca, make_leaf, publish, served_certificate

JOBS = "/apis/batch/v1/namespaces/default/jobs"
def der(files: dict[str, bytes]) -> bytes:
    return ssl.PEM_cert_to_DER_cert(files["tls.crt"].decode())


class Creator:
    """Creates queued Jobs through the API every ``pause`` seconds while it runs."""

    def __init__(self, api: Emulator, prefix: str, pause: float = 0.05) -> None:
        self.api, self.prefix, self.pause = api, prefix, pause
        self.replies: list[tuple[int, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Creator:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            reply = call(self.api.url, "POST", JOBS, h.job(f"{self.prefix}-{n:03d}"))
            self.replies.append((reply.status, reply.data))
            n += 1
            time.sleep(self.pause)

    def failures(self) -> list[Any]:
        return [data for status, data in self.replies if status != 201]

    def all_suspended(self) -> bool:
        """Every Job came back from the webhook suspended (the webhook was called)."""
        return all(data["spec"].get("suspend") is True for _, data in self.replies)


@pytest.fixture
def queues(cluster: Emulator) -> Emulator:
    cluster.apply(h.flavor("default"), h.cluster_queue("team", quotas={"default": {"cpu": 1}}),
                  h.local_queue("main", "team"))
    return cluster


def managed_bundle(api: Emulator) -> bytes:
    config = api.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                     "kuota.dev")
    return base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"])


class TestRotation:
    def test_a_renewal_by_a_ca_is_served_without_a_gap(self, queues: Emulator,
                                                       tmp_path: pathlib.Path) -> None:
        ca = make_ca(tmp_path / "ca")
        volume = tmp_path / "certs"
        first, second = (make_leaf(tmp_path, name, ca) for name in ("gen-1", "gen-2"))
        publish(volume, first, "1")
        options = {"cafile": str(volume / "ca.crt"), "reload_interval": 0.1}
        with h.Running(queues, volume, webhook=options) as running:
            assert served_certificate(running.webhook_port) == der(first)
            with Creator(queues, "during") as creator:
                time.sleep(0.3)
                publish(volume, second, "2")
                h.wait(queues, lambda: served_certificate(running.webhook_port) == der(second),
                       "the renewed certificate to be served")
                time.sleep(0.3)
            assert creator.replies and not creator.failures(), creator.failures()[:3]
            assert creator.all_suspended()
            assert managed_bundle(queues) == ca[0].read_bytes()  # the CA: nothing to publish
            reply = call(queues.url, "POST", JOBS, h.job("after"))
            assert reply.status == 201 and reply.data["spec"]["suspend"] is True

    def test_a_self_signed_renewal_is_trusted_before_it_is_served(
            self, queues: Emulator, tmp_path: pathlib.Path) -> None:
        volume = tmp_path / "certs"
        first, second = (make_leaf(tmp_path, name) for name in ("self-1", "self-2"))
        publish(volume, first, "1")
        options = {"reload_interval": 0.1, "trust_delay": 0.5}
        with h.Running(queues, volume, webhook=options) as running:
            assert managed_bundle(queues) == first["tls.crt"]
            with Creator(queues, "during") as creator:
                publish(volume, second, "2")
                h.wait(queues, lambda: served_certificate(running.webhook_port) == der(second),
                       "the renewed certificate to be served")
                bundle = managed_bundle(queues)
                assert second["tls.crt"] in bundle and first["tls.crt"] in bundle
                time.sleep(0.3)
            assert creator.replies and not creator.failures(), creator.failures()[:3]
            assert creator.all_suspended()

    def test_a_half_written_renewal_is_not_served(self, queues: Emulator,
                                                  tmp_path: pathlib.Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
        ca = make_ca(tmp_path / "ca")
        first, second = (make_leaf(tmp_path, name, ca) for name in ("gen-1", "gen-2"))
        volume = tmp_path / "plain"
        volume.mkdir()
        for name, data in first.items():
            (volume / name).write_bytes(data)
        options = {"cafile": str(volume / "ca.crt"), "reload_interval": 0.1}
        caplog.set_level(logging.WARNING, logger="kuota.operator.certs")
        with h.Running(queues, volume, webhook=options) as running:
            (volume / "tls.crt").write_bytes(second["tls.crt"])  # the key comes later
            time.sleep(0.5)  # several checks
            assert served_certificate(running.webhook_port) == der(first)
            reply = call(queues.url, "POST", JOBS, h.job("meanwhile"))
            assert reply.status == 201 and reply.data["spec"]["suspend"] is True
            (volume / "tls.key").write_bytes(second["tls.key"])
            h.wait(queues, lambda: served_certificate(running.webhook_port) == der(second),
                   "the completed renewal to be served")
            reply = call(queues.url, "POST", JOBS, h.job("after"))
            assert reply.status == 201 and reply.data["spec"]["suspend"] is True
        complaints = [r for r in caplog.records if r.name == "kuota.operator.certs"
                      and "not taken up" in r.getMessage()]
        assert len(complaints) == 1  # said once, not at every check


class TestServingCertificate:
    def test_it_refuses_to_start_on_a_mismatched_pair(self, tmp_path: pathlib.Path) -> None:
        one, two = make_leaf(tmp_path, "one"), make_leaf(tmp_path, "two")
        (tmp_path / "tls.crt").write_bytes(one["tls.crt"])
        (tmp_path / "tls.key").write_bytes(two["tls.key"])
        with pytest.raises(ssl.SSLError):
            ServingCertificate(tmp_path / "tls.crt", tmp_path / "tls.key")

    @pytest.mark.parametrize(("change", "want_renewed"), [
        ("nothing", False),
        ("both", True),
        ("certificate only", False),
        ("key removed", False),
    ])
    def test_only_a_complete_new_pair_is_a_renewal(self, tmp_path: pathlib.Path, change: str,
                                                   want_renewed: bool) -> None:
        volume = tmp_path / "certs"
        one, two = make_leaf(tmp_path, "one"), make_leaf(tmp_path, "two")
        publish(volume, one, "1")
        certificate = ServingCertificate(volume / "tls.crt", volume / "tls.key")
        if change == "both":
            publish(volume, two, "2")
        elif change == "certificate only":
            publish(volume, {"tls.crt": two["tls.crt"], "tls.key": one["tls.key"]}, "2")
        elif change == "key removed":
            os.unlink(volume / "tls.key")
        pair = certificate.renewed()
        assert (pair is not None) is want_renewed
        if pair is not None:
            assert pair.bundle == two["tls.crt"]

    def test_each_handshake_gets_the_pair_being_served(self, tmp_path: pathlib.Path) -> None:
        volume = tmp_path / "certs"
        one, two = make_leaf(tmp_path, "one"), make_leaf(tmp_path, "two")
        publish(volume, one, "1")
        certificate = ServingCertificate(volume / "tls.crt", volume / "tls.key")

        async def handshakes() -> list[bytes]:
            server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0,
                                                ssl=certificate.context)
            port = server.sockets[0].getsockname()[1]
            seen = [await asyncio.to_thread(served_certificate, port)]
            publish(volume, two, "2")
            pair = certificate.renewed()
            assert pair is not None
            seen.append(await asyncio.to_thread(served_certificate, port))  # not served yet
            certificate.serve(pair)
            seen.append(await asyncio.to_thread(served_certificate, port))
            server.close()
            await server.wait_closed()
            return seen

        assert asyncio.run(handshakes()) == [der(one), der(one), der(two)]

    def test_a_pair_changed_while_loading_is_not_taken(self, tmp_path: pathlib.Path) -> None:
        one, two = make_leaf(tmp_path, "one"), make_leaf(tmp_path, "two")
        cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
        cert.write_bytes(one["tls.crt"])
        key.write_bytes(one["tls.key"])
        assert load(cert, key) is not None
        # Swap the files between the two reads load() makes: the first read sees one pair,
        # the second another.
        original = pathlib.Path.read_bytes
        calls: list[pathlib.Path] = []

        def read_then_swap(path: pathlib.Path) -> bytes:
            calls.append(path)
            data = original(path)
            if len(calls) == 2:  # after the first digest
                cert.write_bytes(two["tls.crt"])
                key.write_bytes(two["tls.key"])
            return data

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pathlib.Path, "read_bytes", read_then_swap)
            assert load(cert, key) is None
