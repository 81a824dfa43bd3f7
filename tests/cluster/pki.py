"""Keys and certificates for a local control plane, made with the ``openssl`` command.

One CA signs every serving certificate (the API server's and the webhook's),
so a single CA bundle goes into kubeconfigs and webhook configurations, as
on a real cluster. The service-account signing key pair lets the API server
issue real bound tokens (TokenRequest) for the operator's ServiceAccount.
"""

from __future__ import annotations

import pathlib
import subprocess


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Authority:
    """A throw-away certificate authority in ``directory``."""

    def __init__(self, directory: pathlib.Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.cert = directory / "ca.crt"
        self.key = directory / "ca.key"
        if not self.cert.exists():
            _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-days", "2", "-subj", "/CN=kuota-test-ca",
                     "-keyout", str(self.key), "-out", str(self.cert))

    def serving(self, name: str, *, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
                directory: pathlib.Path | None = None, days: int = 2
                ) -> tuple[pathlib.Path, pathlib.Path]:
        """A serving certificate and key for ``hosts``, signed by this CA."""
        sans = ",".join(f"IP:{h}" if h[0].isdigit() else f"DNS:{h}" for h in hosts)
        return self._issue(name, f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n",
                           directory, days)

    def client(self, name: str, *, directory: pathlib.Path | None = None, days: int = 2
               ) -> tuple[pathlib.Path, pathlib.Path]:
        """A client certificate and key with common name ``name``, signed by this CA."""
        return self._issue(name, "extendedKeyUsage=clientAuth\n", directory, days)

    def _issue(self, name: str, extensions: str, directory: pathlib.Path | None,
               days: int) -> tuple[pathlib.Path, pathlib.Path]:
        where = directory or self.directory
        where.mkdir(parents=True, exist_ok=True)
        cert, key, csr = where / f"{name}.crt", where / f"{name}.key", where / f"{name}.csr"
        ext = where / f"{name}.ext"
        ext.write_text(extensions)
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(csr))
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key),
                 "-CAcreateserial", "-days", str(days), "-extfile", str(ext), "-out", str(cert))
        csr.unlink()
        ext.unlink()
        return cert, key


def signing_key_pair(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """An RSA key pair for signing service-account tokens: (private, public)."""
    private, public = directory / "sa.key", directory / "sa.pub"
    if not private.exists():
        _openssl("genrsa", "-out", str(private), "2048")
        _openssl("rsa", "-in", str(private), "-pubout", "-out", str(public))
    return private, public
