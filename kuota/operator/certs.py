"""The webhook's serving certificate, taken up again when it is renewed on disk.

cert-manager renews the certificate well before it expires (at two thirds
of its lifetime by default) and writes the new one into the Secret; the
kubelet then updates the files of the mounted Secret — ``tls.crt``,
``tls.key``, ``ca.crt`` — within its sync period, atomically: each file is a
symlink through ``..data``, which is swapped to a new directory in one
``rename``. Nothing tells the process: its mtimes do not change (the links
stay), and file-system events on such volumes are not dependable. So the
files are read every ``interval`` seconds and compared by content.

**Handing over without a restart.** The listening socket keeps one
:class:`ssl.SSLContext` for its lifetime, but its SNI callback runs at the
start of every TLS handshake — with or without a server name from the
client — and may give that one connection another context. Each renewal is
loaded into a fresh context, and the callback hands the newest to every new
handshake; connections already open keep theirs. There is no moment without
a listener (kopf 1.45's own reload restarts its server, so connections are
refused meanwhile) and no half-loaded context.

**Never a broken pair.** A renewal changes two files; a reader can catch
the new certificate with the old key (a copy that is not atomic, or a
reading across the swap). Loading such a pair fails (the key does not match
the certificate) and the previous context stays in use; the files are read
again at the next check. They are also read again right after a successful
load: a change in between means the loaded pair may be of either
generation, so it is loaded again at the next check. (kopf 1.45 loses its
webhook server for good on such a pair: measured, not assumed.)

**Trust before use.** The API server verifies the webhook against the
``caBundle`` of the webhook configuration. With a CA (``ca.crt`` in the
certificate directory, as cert-manager writes it) a renewed certificate is
trusted already. Without one, the certificate is its own trust anchor: when
kopf manages the configuration (``--webhook-managed``), the new bundle —
new and previous certificate together — is published first, and the new
certificate is served ``trust_delay`` seconds later, once the API server
trusts it; the previous one is still valid meanwhile, since renewals come
early. (A configuration from manifests gets its ``caBundle`` from
cert-manager's CA injector instead.)
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import pathlib
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

import kopf

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pair:
    """One generation of the files: its serving context and its trust bundle."""

    context: ssl.SSLContext
    #: PEM the API server must trust: the CA file, else the certificate itself.
    bundle: bytes
    digest: str


def load(certfile: pathlib.Path, keyfile: pathlib.Path,
         cafile: pathlib.Path | None = None,
         configure: Callable[[ssl.SSLContext], None] | None = None) -> Pair | None:
    """The pair in the files now; None if they changed while being read (read again later).

    ``configure`` completes each new context (client-certificate checks, say): a
    handshake switched to a renewed context verifies with that context's settings.
    Raises :class:`ssl.SSLError` for a certificate and key that do not match, and
    :class:`OSError` for a missing file.
    """
    before = _digest(certfile, keyfile, cafile)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)
    if configure is not None:
        configure(context)
    bundle = (cafile or certfile).read_bytes()
    if _digest(certfile, keyfile, cafile) != before:
        return None
    return Pair(context, bundle, before)


def _digest(*paths: pathlib.Path | None) -> str:
    hasher = hashlib.sha256()
    for path in paths:
        if path is not None:
            hasher.update(path.read_bytes())
            hasher.update(b"\0")
    return hasher.hexdigest()


class ServingCertificate:
    """The newest good pair of certificate files, and a context that serves it."""

    def __init__(self, certfile: str | pathlib.Path, keyfile: str | pathlib.Path,
                 cafile: str | pathlib.Path | None = None, *,
                 configure: Callable[[ssl.SSLContext], None] | None = None,
                 purpose: str = "webhook") -> None:
        self.certfile, self.keyfile = pathlib.Path(certfile), pathlib.Path(keyfile)
        self.purpose = purpose  # what the log lines call it
        self.cafile = pathlib.Path(cafile) if cafile else None
        self.configure = configure
        pair = None
        while pair is None:  # at start-up the files must be right: fail loudly otherwise
            pair = load(self.certfile, self.keyfile, self.cafile, configure)
        self.serving = pair
        #: The context the server listens with: each handshake gets the newest pair's.
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(self.certfile, self.keyfile)
        if configure is not None:
            configure(self.context)
        self.context.sni_callback = self._handshake
        self._complaint = ""

    def _handshake(self, connection: ssl.SSLObject, server_name: str | None,
                   context: ssl.SSLContext) -> None:
        if context is not self.serving.context:
            connection.context = self.serving.context

    def renewed(self) -> Pair | None:
        """A new good pair in the files, if any (not served yet: see :meth:`serve`)."""
        try:
            if _digest(self.certfile, self.keyfile, self.cafile) == self.serving.digest:
                return None
            return load(self.certfile, self.keyfile, self.cafile, self.configure)
        except (OSError, ssl.SSLError) as exc:
            complaint = f"{type(exc).__name__}: {exc}"
            if complaint != self._complaint:  # once per problem, not at every check
                self._complaint = complaint
                log.warning("%s certificate in %s not taken up (%s); still serving the "
                            "previous one", self.purpose, self.certfile.parent, complaint)
            return None

    def serve(self, pair: Pair) -> None:
        self.serving = pair
        self._complaint = ""
        log.info("%s certificate in %s renewed", self.purpose, self.certfile.parent)


class ReloadingWebhookServer(kopf.WebhookServer):
    """kopf's webhook server, serving a :class:`ServingCertificate` that follows its files.

    kopf builds the server's TLS context in ``_build_ssl``; it is given ours. The file
    paths are not passed to kopf, so its own reload (a server restart) never runs.
    """

    def __init__(self, certificate: ServingCertificate, *, interval: float = 10.0,
                 trust_delay: float = 2.0, **options: Any) -> None:
        super().__init__(**options)
        self.certificate = certificate
        self.interval = interval
        self.trust_delay = trust_delay

    def _build_ssl(self) -> tuple[bytes | None, ssl.SSLContext | None]:
        return self.certificate.serving.bundle, self.certificate.context

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        # kopf's server is an async generator: closing it stops the listener.
        served = cast(AsyncGenerator[kopf.WebhookClientConfig, None], super().__call__(fn))
        try:
            config = await anext(served)  # listening from here on, until ``served`` closes
            yield config
            while True:
                await asyncio.sleep(self.interval)
                pair = self.certificate.renewed()
                if pair is None:
                    continue
                if pair.bundle != self.certificate.serving.bundle:
                    # Trust first, serve second (module docstring).
                    yield _with_bundle(config, pair.bundle + b"\n" +
                                       self.certificate.serving.bundle)
                    await asyncio.sleep(self.trust_delay)
                self.certificate.serve(pair)
        finally:
            await served.aclose()


def _with_bundle(config: kopf.WebhookClientConfig,
                 bundle: bytes) -> kopf.WebhookClientConfig:
    updated = kopf.WebhookClientConfig(**config)
    updated["caBundle"] = base64.b64encode(bundle).decode("ascii")
    return updated
