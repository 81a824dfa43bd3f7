"""Webhook serving certificates as cert-manager and the kubelet hand them to the operator.

``make_ca`` and ``make_leaf`` make certificates with the ``openssl`` command (a
leaf signed by a CA, or self-signed as cert-manager's selfSigned Issuer
makes it); ``publish`` writes them into a directory the way the kubelet
updates a mounted Secret (a new ``..<generation>`` directory, then one rename
of the ``..data`` link); ``served_certificate`` reads what a TLS handshake
presents. Used by the emulator tier's and the real tier's rotation tests.
"""

from __future__ import annotations

import os
import pathlib
import socket
import ssl
import subprocess

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"]


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "ca.crt", directory / "ca.key"
    openssl("req", "-x509", *EC, "-subj", "/CN=kuota-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout", str(key), "-out", str(cert))
    return cert, key


def make_leaf(directory: pathlib.Path, name: str,
              ca: tuple[pathlib.Path, pathlib.Path] | None = None) -> dict[str, bytes]:
    """tls.crt and tls.key for 127.0.0.1 named ``name``: signed by ``ca``, else self-signed
    (then also its own ca.crt, as cert-manager's self-signed issuer writes it)."""
    work = directory / f"make-{name}"
    work.mkdir(parents=True)
    cert, key = work / "tls.crt", work / "tls.key"
    if ca is None:
        openssl("req", "-x509", *EC, "-subj", f"/CN={name}",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert))
        return {"tls.crt": cert.read_bytes(), "tls.key": key.read_bytes()}
    extensions = work / "ext.cnf"
    extensions.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                          "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    openssl("req", "-new", *EC[:4], "-nodes", "-subj", f"/CN={name}", "-keyout", str(key),
            "-out", str(work / "tls.csr"))
    openssl("x509", "-req", "-in", str(work / "tls.csr"), "-CA", str(ca[0]), "-CAkey",
            str(ca[1]), "-CAcreateserial", "-days", "1", "-extfile", str(extensions),
            "-out", str(cert))
    return {"tls.crt": cert.read_bytes(), "tls.key": key.read_bytes(),
            "ca.crt": ca[0].read_bytes()}


def publish(volume: pathlib.Path, files: dict[str, bytes], generation: str) -> None:
    """Write ``files`` as the kubelet updates a Secret volume: a new generation directory,
    then one rename of the ``..data`` link; the previous generation is removed."""
    volume.mkdir(parents=True, exist_ok=True)
    new = volume / f"..{generation}"
    new.mkdir()
    for name, data in files.items():
        (new / name).write_bytes(data)
    old = os.readlink(volume / "..data") if (volume / "..data").is_symlink() else None
    link = volume / "..data_tmp"
    os.symlink(new.name, link)
    os.rename(link, volume / "..data")
    for name in files:
        if not (volume / name).is_symlink():
            os.symlink(f"..data/{name}", volume / name)
    if old is not None:
        for stale in (volume / old).iterdir():
            stale.unlink()
        (volume / old).rmdir()


def served_certificate(port: int) -> bytes:
    """The DER certificate a TLS handshake with 127.0.0.1:``port`` presents."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der
