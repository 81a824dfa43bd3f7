"""Where the store lives: a Redis URL, ``REDIS_URL``, or — if asked — an embedded fakeredis.

Two clients share one server: a text client (``decode_responses=True``) for
the store, and a bytes client for rq, which stores pickles and does not work
with decoded responses.

Without a URL, kuota connects to ``REDIS_URL``, else to
:data:`DEFAULT_URL` (``redis://localhost:6379/0``, as rq does). The store is
never chosen silently: a process that stored its objects in a private
in-memory store would report success while no scheduler ever sees them. The
embedded store — one in-process fakeredis server per process, with ``lupa``
for Lua — is used only when asked for by name (``--redis embedded``,
:data:`EMBEDDED`) or by passing a fakeredis ``server``: it lives only as
long as the process, which suits the demo, notebooks and tests that run the
scheduler and workers as threads (:mod:`kuota.service.embedded`).

URLs are shown only through :func:`redact`, so a password never reaches a
message or a log. When the URL has no password, it comes from a file (the
commands' ``--password-file``, else systemd's credential ``redis-password``:
``$CREDENTIALS_DIRECTORY/redis-password``, see :func:`password`), else from
``REDIS_PASSWORD`` — all of which keep it out of every ``ps`` listing, and the
file also out of the process's environment. TLS is the
``rediss://`` scheme with redis-py's query options: ``ssl_ca_certs``,
``ssl_certfile`` and ``ssl_keyfile`` for a private CA and client certificates,
``ssl_cert_reqs``. A Redis behind Sentinel is a ``redis+sentinel://`` URL
(:mod:`kuota.service.sentinels`). Workers hand nothing of their own environment
on to their pods but a few basics (:mod:`kuota.service.secrecy`).

**A restarted server is never met silently by a scheduler.** redis-py replaces a
pooled connection whose server went away without telling its caller: a command sent
after Redis restarted simply goes to the new process. A Redis restarted from its AOF
may have lost its last second of writes (``appendfsync everysec``), so what a
scheduler remembers from that second — pods it saw end, admissions and placements it
made — is no longer true, and deciding from it places gangs on room the restored
store still gives to others. A process that draws state from the store calls
:meth:`RestartGuard.guard` on its connection: from then on every (re)connection asks
the server for its ``run_id``, and one that meets another server than the state was
read from fails with :class:`ServerRestarted` (a ``redis.ConnectionError``) until the
process has dropped that state and calls :meth:`RestartGuard.accept`. It costs one
``INFO`` per new connection, none per command. Workers and the CLI do not guard: they
hold nothing they do not compare with the store again.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

import redis

from kuota.service import sentinels
from queueing.store import DEFAULT_PREFIX, Store

if TYPE_CHECKING:
    import fakeredis

#: Where kuota looks for Redis when neither ``--redis`` nor ``REDIS_URL`` says.
DEFAULT_URL: Final = "redis://localhost:6379/0"
#: The ``--redis`` value that asks for the in-process store.
EMBEDDED: Final = "embedded"

_EMBEDDED_LOCK = threading.Lock()
_EMBEDDED: fakeredis.FakeServer | None = None
# fakeredis is imported where the embedded store is made: every other command (CLI
# start-up) would pay for it.


def embedded_server() -> fakeredis.FakeServer:
    """The process's one embedded server (created on first use)."""
    import fakeredis

    global _EMBEDDED
    with _EMBEDDED_LOCK:
        if _EMBEDDED is None:
            _EMBEDDED = fakeredis.FakeServer()
        return _EMBEDDED


class ServerRestarted(redis.ConnectionError):
    """The Redis server is not the one the caller's state was read from (module doc)."""


class RestartGuard:
    """Which Redis server (``run_id``) a process's state was read from (module doc)."""

    def __init__(self) -> None:
        self.guarding = False
        #: The server the state was read from, and the one met by the latest connection.
        self._accepted = self._met = ""
        self._lock = threading.Lock()

    def on_connect(self, connection: Any) -> None:
        """redis-py's ``redis_connect_func``: runs on every new socket of both clients."""
        connection.on_connect()
        if not self.guarding:
            return
        connection.send_command("INFO", "server")
        try:
            run_id = _run_id(connection.read_response())
        except redis.ResponseError:  # INFO refused (some managed services)
            run_id = ""
        with self._lock:
            self._met = run_id
            if run_id != self._accepted:
                raise ServerRestarted(
                    f"Redis restarted (server {run_id or '?'}, state read from "
                    f"{self._accepted or '?'}): what was known of it may have been lost")

    def guard(self, store: Store) -> None:
        """From now on, fail connections to any other server than ``store``'s now."""
        run_id = store.server_id()
        with self._lock:
            self._accepted = self._met = run_id
            self.guarding = True

    def accept(self) -> None:
        """The caller dropped what it knew: the server met last is the one to read from."""
        with self._lock:
            self._accepted = self._met


def _run_id(info: bytes | str) -> str:
    """The ``run_id`` in an ``INFO server`` answer ("" from a server that does not say,
    as :meth:`queueing.store.Store.server_id`)."""
    text = info.decode() if isinstance(info, bytes) else info
    for line in text.splitlines():
        if line.startswith("run_id:"):
            return line.removeprefix("run_id:").strip()
    return ""


@dataclass(frozen=True)
class Connection:
    #: ``redis://…`` or None for the embedded server (never shown: see :func:`redact`).
    url: str | None
    text: Any
    raw: Any
    store: Store
    #: Guards a scheduler against a restarted server (module doc); inert until guarded.
    restarts: RestartGuard = field(default_factory=RestartGuard)

    @property
    def embedded(self) -> bool:
        return self.url is None

    @property
    def prefix(self) -> str:
        return self.store.prefix

    def describe(self) -> str:
        return "embedded fakeredis (this process only)" if self.url is None else redact(self.url)


def may_lose_writes(conn: Connection) -> str | None:
    """Why ``conn``'s Redis may lose a write it acknowledged (a crash without its AOF's
    last second, a promoted replica that lacked it), or None when it never does: one
    server (no Sentinel) with ``appendonly yes`` and ``appendfsync always``."""
    if conn.embedded:
        return None  # (it lives and dies with this process)
    if conn.url is not None and sentinels.is_sentinel_url(conn.url):
        return "a Sentinel promotion may lose the master's last writes (replication is " \
               "asynchronous)"
    try:
        config = {**conn.text.config_get("append*"), **conn.text.config_get("save")}
    except redis.ResponseError as exc:  # CONFIG renamed or refused (managed services, ACLs)
        return f"its persistence settings cannot be read (CONFIG GET refused: {exc})"
    return persistence_loss(config)


def persistence_loss(config: dict[str, str]) -> str | None:
    """What a crash or restart loses, said plainly, from ``appendonly``, ``appendfsync``
    and ``save``: with no AOF, everything since the last RDB snapshot (everything, when it
    takes none); with an AOF not synced at every write, its last second (``everysec``) or
    what the OS had not written yet (``no``)."""
    aof, fsync, save = config.get("appendonly"), config.get("appendfsync"), config.get("save")
    if aof != "yes":
        if not (save or "").strip():
            return "it runs appendonly no and save \"\": no persistence, a restart loses " \
                   "everything"
        return f"it runs appendonly no (RDB snapshots only, save {save!r}): a restart " \
               f"loses everything written since the last snapshot"
    if fsync == "always":
        return None
    lost = "about the last second of writes" if fsync == "everysec" else \
        "the writes the operating system had not flushed yet"
    return f"it runs appendonly yes, appendfsync {fsync}: a crash loses {lost}"


#: The systemd credential (``LoadCredential=redis-password:…``) read for the password.
CREDENTIAL: Final = "redis-password"


def password(password_file: Path | None = None) -> str | None:
    """The password for a URL that has none: ``password_file``'s, else systemd's credential
    :data:`CREDENTIAL` when the service has it, else ``REDIS_PASSWORD``, else None."""
    if password_file is None:
        credentials = os.environ.get("CREDENTIALS_DIRECTORY")
        candidate = Path(credentials, CREDENTIAL) if credentials else None
        if candidate is None or not candidate.is_file():
            return os.environ.get("REDIS_PASSWORD") or None
        password_file = candidate
    return read_password_file(password_file)


def read_password_file(path: Path) -> str:
    """The one line ``path`` holds (its line end dropped); ValueError naming the file if it
    cannot be read, is empty or holds more than one line."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"password file {path}: cannot read: {why}") from None
    secret = text.removesuffix("\n").removesuffix("\r")
    if not secret:
        raise ValueError(f"password file {path}: is empty")
    if "\n" in secret or "\r" in secret:
        raise ValueError(f"password file {path}: holds more than one line (the password "
                         "alone is expected)")
    return secret


def resolve_url(url: str | None) -> str:
    """``--redis`` if given, else ``REDIS_URL``, else :data:`DEFAULT_URL`; :data:`EMBEDDED`
    stands for the in-process store."""
    return url or os.environ.get("REDIS_URL") or DEFAULT_URL


def redact(url: str | None) -> str:
    """The URL as it may be shown: any password replaced by ``***``."""
    if url is None or url == EMBEDDED:
        return "the embedded store"
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = f"{parts.username}:" if parts.username else ":"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}***@{host}"))


def connect(url: str | None = None, *, prefix: str = DEFAULT_PREFIX,
            server: fakeredis.FakeServer | None = None,
            password_file: Path | None = None) -> Connection:
    """Connect to ``url`` (see :func:`resolve_url`), or to the embedded server when ``url``
    is :data:`EMBEDDED` or a fakeredis ``server`` is given. A URL without a password
    takes :func:`password`'s (``password_file`` first)."""
    url = EMBEDDED if server is not None else resolve_url(url)
    if url == EMBEDDED:
        import fakeredis

        fake = server or embedded_server()
        text: Any = fakeredis.FakeRedis(server=fake, decode_responses=True)
        raw: Any = fakeredis.FakeRedis(server=fake)
        return Connection(None, text, raw, Store(text, prefix))
    # Socket timeouts keep a dead server from hanging a loop forever; the
    # keepalive lets a blocked XREAD/BLPOP notice a vanished peer.
    restarts = RestartGuard()
    options: dict[str, Any] = {"socket_timeout": 30, "socket_connect_timeout": 5,
                               "socket_keepalive": True, "health_check_interval": 10,
                               "redis_connect_func": restarts.on_connect}
    sentinel = sentinels.parse(url, redact(url)) if sentinels.is_sentinel_url(url) else None
    given = urlsplit(url).password if sentinel is None else sentinel.password
    if given is not None and password_file is not None:
        raise ValueError(f"password file {password_file}: the URL {redact(url)} has a "
                         "password too; give one of them")
    secret = password(password_file) if given is None else None
    if secret:
        # Kept out of the URL so that it shows in no `ps` listing and no error message.
        options["password"] = secret
    if sentinel is not None:
        text, raw = sentinels.clients(sentinel, options)
    else:
        text = redis.Redis.from_url(url, decode_responses=True, **options)
        raw = redis.Redis.from_url(url, **options)
    return Connection(url, text, raw, Store(text, prefix), restarts)
