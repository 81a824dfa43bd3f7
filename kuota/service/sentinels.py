"""A Redis behind Sentinel: ``redis+sentinel://`` URLs.

A Sentinel-managed Redis has no fixed address. Sentinels (usually three) watch a master
and its replicas and promote a replica when the master fails; a client asks a sentinel
where the master is, and asks again when its connection breaks or a write meets a
replica (``READONLY``: a master demoted while the client was connected). kuota takes
such a Redis as::

    redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB][?OPTIONS]

— the sentinels' addresses (port 26379 unless given), the name of the master they
monitor (their ``sentinel monitor SERVICE …``), and the database (0 unless given).
``rediss+sentinel://`` speaks TLS to the master, and to the sentinels too. The
password is the master's (else ``REDIS_PASSWORD``); sentinels that ask for one of their
own (``requirepass`` in their config) take it from ``REDIS_SENTINEL_PASSWORD``, and
neither reaches a pod. OPTIONS are the TLS settings of a ``rediss://`` URL:
``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``, ``ssl_cert_reqs``,
``ssl_check_hostname``.

To a scheduler a promotion is a restart. Replication is asynchronous: the promoted
replica may lack the master's last writes, as a Redis restarted without its last second
does, and it is another server (another ``run_id``). The restart guard of
:mod:`kuota.service.connection` meets it on the first connection to the new master, and
the scheduler drops what it knew and rebuilds after its restart pause.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qsl, unquote

#: The schemes, and whether each speaks TLS.
SCHEMES: Final = {"redis+sentinel": False, "rediss+sentinel": True}
DEFAULT_PORT: Final = 26379
#: Where a sentinel's own password comes from (never from the URL: one URL, one password).
PASSWORD_ENV: Final = "REDIS_SENTINEL_PASSWORD"
TLS_OPTIONS: Final = frozenset({"ssl_ca_certs", "ssl_certfile", "ssl_keyfile",
                                "ssl_cert_reqs", "ssl_check_hostname"})
FORM: Final = "redis+sentinel://HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]"


@dataclass(frozen=True)
class SentinelURL:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    #: TLS settings (:data:`TLS_OPTIONS`), as given.
    options: dict[str, str] = field(default_factory=dict)


def is_sentinel_url(url: str) -> bool:
    return url.partition("://")[0].lower() in SCHEMES


def parse(url: str, shown: str) -> SentinelURL:
    """The parts of a ``redis+sentinel://`` URL; ValueError naming what is wrong (the
    message shows ``shown``, the URL with its password hidden)."""
    scheme, _, rest = url.partition("://")
    where = f"Redis URL {shown}"
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    sentinels = tuple(_address(part, where) for part in hosts.split(",") if part)
    if not sentinels:
        raise ValueError(f"{where}: name at least one sentinel, as {FORM}")
    service, _, db = path.partition("/")
    if not service:
        raise ValueError(f"{where}: name the master the sentinels monitor after their "
                         f"addresses, as {FORM}")
    db = db.rstrip("/")
    if db and not db.isdigit():
        raise ValueError(f"{where}: the database {db!r} is not a number")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - TLS_OPTIONS)
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {', '.join(unknown)} (a sentinel URL "
                         f"takes the TLS settings {', '.join(sorted(TLS_OPTIONS))})")
    return SentinelURL(sentinels, unquote(service), int(db or 0), username, password,
                       SCHEMES[scheme.lower()], options)


def _address(part: str, where: str) -> tuple[str, int]:
    if part.startswith("["):  # [IPv6]:port
        host, _, port = part[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
    if not host:
        raise ValueError(f"{where}: sentinel address {part!r} has no host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{where}: sentinel port {port!r} is not a port number")
    return host, int(port or DEFAULT_PORT)


def clients(url: SentinelURL, options: dict[str, Any]) -> tuple[Any, Any]:
    """A text client (``decode_responses``) and a bytes client of the master ``url``
    names, each following it from one promotion to the next. ``options`` are the master
    connections' (timeouts, ``redis_connect_func``, a password from the environment); the
    sentinels' own connections get the timeouts only."""
    from redis.sentinel import Sentinel

    master = dict(options, db=url.db)
    if url.password is not None:
        master["password"] = url.password
    if url.username is not None:
        master["username"] = url.username
    asked: dict[str, Any] = {k: options[k] for k in (
        "socket_timeout", "socket_connect_timeout", "socket_keepalive") if k in options}
    if os.environ.get(PASSWORD_ENV):
        asked["password"] = os.environ[PASSWORD_ENV]
    if url.tls:
        tls: dict[str, Any] = {"ssl": True, **url.options}
        master.update(tls)
        asked.update(tls)
    sentinel = Sentinel(list(url.sentinels), sentinel_kwargs=asked,  # type: ignore[no-untyped-call]
                        **master)
    return (sentinel.master_for(url.service, decode_responses=True),  # type: ignore[no-untyped-call]
            sentinel.master_for(url.service))  # type: ignore[no-untyped-call]
