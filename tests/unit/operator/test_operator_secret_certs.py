"""``--webhook-secret``: the serving certificate mirrored from its Secret, as the kubelet would.

The webhook and visibility servers read ``tls.crt``/``tls.key`` from a directory and
take up renewals there (kuota.operator.certs). Outside the cluster the operator fills
that directory from the Secret itself; these pin that it lays the files out as a
Secret volume (``..data`` swapped in one rename, so a reader never pairs a new
certificate with an old key), writes only when the Secret changed, drops a key the
Secret lost, refuses a Secret without a certificate, and keeps the files in use when
a read fails.
"""

from __future__ import annotations

import base64
import logging
import pathlib
import time
from collections.abc import Mapping

import pytest

from kuota.operator import secretcerts


def data(**files: str) -> dict[str, str]:
    return {key.replace("_", "."): base64.b64encode(value.encode()).decode()
            for key, value in files.items()}


class FakeSecret:
    """What the API would answer for the Secret: data, or an error to raise."""

    def __init__(self, answer: Mapping[str, str] | None) -> None:
        self.answer = answer
        self.failure: Exception | None = None
        self.reads = 0

    def read(self) -> Mapping[str, str] | None:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        return self.answer


def files_in(directory: pathlib.Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())
            if not p.name.startswith("..")}


def test_the_secret_is_laid_out_as_a_kubelet_secret_volume(tmp_path: pathlib.Path) -> None:
    secret = FakeSecret(data(tls_crt="CERT-1", tls_key="KEY-1", ca_crt="CA"))
    mirror = secretcerts.SecretMirror(secret.read, "kuota-system/tls", tmp_path)
    assert mirror.refresh() is True
    assert files_in(tmp_path) == {"ca.crt": "CA", "tls.crt": "CERT-1", "tls.key": "KEY-1"}
    for name in ("tls.crt", "tls.key", "ca.crt"):
        assert (tmp_path / name).readlink() == pathlib.Path("..data") / name
    generation = (tmp_path / "..data").resolve()
    assert generation.parent == tmp_path and generation.name.startswith("..")
    assert (generation / "tls.key").stat().st_mode & 0o077 == 0, "the key is private"


def test_a_changed_secret_swaps_every_file_at_once_and_drops_the_old_generation(
        tmp_path: pathlib.Path) -> None:
    secret = FakeSecret(data(tls_crt="CERT-1", tls_key="KEY-1", ca_crt="CA"))
    mirror = secretcerts.SecretMirror(secret.read, "kuota-system/tls", tmp_path)
    mirror.refresh()
    first = (tmp_path / "..data").resolve()
    assert mirror.refresh() is False, "an unchanged Secret is not written again"
    assert (tmp_path / "..data").resolve() == first

    secret.answer = data(tls_crt="CERT-2", tls_key="KEY-2")  # renewed, and no ca.crt now
    assert mirror.refresh() is True
    assert files_in(tmp_path) == {"tls.crt": "CERT-2", "tls.key": "KEY-2"}
    assert not first.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("..2")] == [
        (tmp_path / "..data").resolve().name]


@pytest.mark.parametrize(("answer", "want"), [
    (data(tls_crt="CERT"), "Secret ns/tls has no tls.key"),
    ({}, "Secret ns/tls has no tls.crt or tls.key"),
    (None, "Secret ns/tls has no tls.crt or tls.key"),
    ({"tls.crt": "not base64!", "tls.key": "a2V5"}, "Secret ns/tls: data is not base64"),
])
def test_a_secret_without_a_certificate_is_refused(
        tmp_path: pathlib.Path, answer: Mapping[str, str] | None, want: str) -> None:
    mirror = secretcerts.SecretMirror(FakeSecret(answer).read, "ns/tls", tmp_path)
    with pytest.raises(secretcerts.SecretError, match=want):
        mirror.refresh()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_read_keeps_the_files_in_use_and_is_logged_once(
        tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = FakeSecret(data(tls_crt="CERT-1", tls_key="KEY-1"))
    mirror = secretcerts.SecretMirror(secret.read, "ns/tls", tmp_path)
    mirror.refresh()
    secret.failure = secretcerts.SecretError("Secret ns/tls: 403 Forbidden")
    with caplog.at_level(logging.INFO, logger=secretcerts.__name__):
        mirror._check()
        mirror._check()
        assert files_in(tmp_path) == {"tls.crt": "CERT-1", "tls.key": "KEY-1"}
        secret.failure = None
        secret.answer = data(tls_crt="CERT-2", tls_key="KEY-2")
        mirror._check()
    assert files_in(tmp_path) == {"tls.crt": "CERT-2", "tls.key": "KEY-2"}
    messages = [r.getMessage() for r in caplog.records]
    assert sum("403 Forbidden" in m for m in messages) == 1
    assert any("read again" in m for m in messages)


def test_the_mirror_thread_follows_the_secret_and_stops(tmp_path: pathlib.Path) -> None:
    secret = FakeSecret(data(tls_crt="CERT-1", tls_key="KEY-1"))
    mirror = secretcerts.SecretMirror(secret.read, "ns/tls", tmp_path, interval=0.05)
    mirror.refresh()
    mirror.start()
    try:
        secret.answer = data(tls_crt="CERT-2", tls_key="KEY-2")
        for _ in range(100):
            if files_in(tmp_path)["tls.crt"] == "CERT-2":
                break
            time.sleep(0.05)
        assert files_in(tmp_path)["tls.crt"] == "CERT-2"
    finally:
        mirror.stop()
    reads = secret.reads
    time.sleep(0.2)
    assert secret.reads == reads, "no read after stop()"


def test_a_secret_reference_is_namespace_and_name() -> None:
    assert secretcerts.reference("kuota-system/kuota-webhook-tls") == (
        "kuota-system", "kuota-webhook-tls")
