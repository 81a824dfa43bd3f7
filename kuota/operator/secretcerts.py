"""The serving certificate read from its Secret, for an operator outside the cluster.

In a pod the kubelet mounts the Secret ``kuota-webhook-tls`` (made by the chart
or by cert-manager) and updates the files when it changes; the webhook and
visibility servers read those files again every few seconds
(:mod:`kuota.operator.certs`). Outside the cluster nobody mounts it: one had
to copy ``tls.crt`` and ``tls.key`` out of the Secret by hand, and again after
every renewal (``helm upgrade`` re-signs it when its names change,
cert-manager renews it), or the API server would stop trusting the webhook.

``kuota operator --webhook-secret NAMESPACE/NAME`` does the kubelet's part
itself: :class:`SecretMirror` reads the Secret, writes its ``tls.crt``,
``tls.key`` and ``ca.crt`` into a private directory exactly as the kubelet
lays out a Secret volume — each file a symlink through ``..data``, which is
swapped to a new directory in one ``rename``, so a reader never sees a new
certificate with the old key — and reads the Secret again every ``interval``
seconds. The servers then take up a renewal as they take up a mounted one.

A GET every interval rather than a watch: one small request, and it needs only
``get`` on Secrets in the operator's namespace, which the shipped Role grants.
A failed read keeps the files as they are (the certificate in use stays) and
is logged once until it succeeds again.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import logging
import os
import pathlib
import shutil
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

#: The Secret's keys that are written out; the first two are required.
KEYS = ("tls.crt", "tls.key", "ca.crt")
DATA = "..data"


class SecretError(ValueError):
    """The Secret cannot be read or holds no serving certificate."""


def reference(text: str) -> tuple[str, str]:
    """An argparse type: ``NAMESPACE/NAME`` of a Secret."""
    namespace, slash, name = text.partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME, got {text!r}")
    return namespace, name


def files_of(data: Mapping[str, str] | None, where: str) -> dict[str, bytes]:
    """The certificate files in a Secret's ``data`` (base64), or :class:`SecretError`."""
    found = dict(data or {})
    missing = [key for key in KEYS[:2] if not found.get(key)]
    if missing:
        raise SecretError(f"Secret {where} has no {' or '.join(missing)}")
    try:
        return {key: base64.b64decode(found[key], validate=True)
                for key in KEYS if found.get(key)}
    except (binascii.Error, ValueError) as exc:
        raise SecretError(f"Secret {where}: data is not base64 ({exc})") from None


def digest(files: Mapping[str, bytes]) -> str:
    hashed = hashlib.sha256()
    for key in sorted(files):
        hashed.update(key.encode() + b"\0" + files[key] + b"\0")
    return hashed.hexdigest()


def write_volume(directory: pathlib.Path, files: Mapping[str, bytes]) -> None:
    """Lay ``files`` out in ``directory`` as the kubelet does a Secret volume (see the
    module docstring): a new timestamped directory, ``..data`` swapped to it in one
    rename, a symlink per file through ``..data``, the previous generation removed."""
    generation = directory / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.time_ns()}"
    generation.mkdir(mode=0o700)
    for key, content in files.items():
        target = generation / key
        target.write_bytes(content)
        target.chmod(0o600)
    staged = directory / "..data_tmp"
    staged.unlink(missing_ok=True)
    staged.symlink_to(generation.name)
    os.replace(staged, directory / DATA)
    for key in KEYS:
        link = directory / key
        if key in files and not link.is_symlink():
            link.symlink_to(f"{DATA}/{key}")
        elif key not in files and link.is_symlink():
            link.unlink()
    for old in directory.glob("..2*"):
        if old != generation and old.is_dir():
            shutil.rmtree(old)


class SecretMirror:
    """Keeps ``directory`` equal to the Secret ``read`` returns the data of."""

    def __init__(self, read: Callable[[], Mapping[str, str] | None], where: str,
                 directory: pathlib.Path, *, interval: float = 10.0) -> None:
        self.read, self.where, self.directory = read, where, directory
        self.interval = interval
        self.written: str | None = None
        self._failing: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> bool:
        """Read the Secret; write the files if they changed. True when written."""
        files = files_of(self.read(), self.where)
        now = digest(files)
        if now == self.written:
            return False
        write_volume(self.directory, files)
        log.info("serving certificate from Secret %s written to %s%s", self.where,
                 self.directory, "" if self.written is None else " (it changed)")
        self.written = now
        return True

    def _check(self) -> None:
        try:
            self.refresh()
        except (SecretError, OSError) as exc:  # the certificate in use stays; logged once
            message = str(exc)
            if message != self._failing:
                log.warning("serving certificate: reading Secret %s failed (%s); the files "
                            "in %s stay as they are", self.where, message, self.directory)
            self._failing = message
        else:
            if self._failing is not None:
                log.info("serving certificate: Secret %s read again", self.where)
            self._failing = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._check()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="webhook-secret", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval + 5)


def secret_reader(api_client: object, namespace: str, name: str
                  ) -> Callable[[], Mapping[str, str] | None]:
    """A ``read`` for :class:`SecretMirror`: the Secret's data through the kubernetes client."""
    from kubernetes import client
    from urllib3.exceptions import HTTPError

    core = client.CoreV1Api(api_client)

    def read() -> Mapping[str, str] | None:
        try:
            secret = core.read_namespaced_secret(name, namespace, _request_timeout=10)
        except client.ApiException as exc:
            raise SecretError(f"Secret {namespace}/{name}: {exc.status} {exc.reason}") from None
        except HTTPError as exc:
            raise SecretError(f"Secret {namespace}/{name}: cannot reach the API server "
                              f"({exc})") from None
        return {str(k): str(v) for k, v in (secret.data or {}).items()}

    return read
