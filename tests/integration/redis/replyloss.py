"""A TCP proxy in front of Redis that loses one reply.

The failure a client cannot resolve by itself: its command reaches Redis and
is carried out, then the connection drops before the answer comes back. To
the client this looks the same as a command that never left. ``ReplyLoss``
passes bytes both ways unchanged until :meth:`ReplyLoss.lose_reply_to`
arms it. The next command whose bytes contain the marker is forwarded, and
the connection that carried it is cut as soon as Redis answers, without
passing the answer on.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections import Counter
from typing import Self
from urllib.parse import urlsplit, urlunsplit


class ReplyLoss:
    def __init__(self, upstream_url: str) -> None:
        self._upstream = urlsplit(upstream_url)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._armed: bytes | None = None
        self._counted: set[bytes] = set()
        self._lock = threading.Lock()
        #: How many commands carrying each marker went through to Redis.
        self.forwarded: Counter[bytes] = Counter()
        #: How many replies were lost.
        self.lost = 0
        self._sockets: list[socket.socket] = []

    @property
    def url(self) -> str:
        """The upstream URL (user, password, database) with this proxy as host."""
        user = self._upstream.netloc.rpartition("@")[0]
        netloc = f"{user + '@' if user else ''}127.0.0.1:{self._listener.getsockname()[1]}"
        return urlunsplit(self._upstream._replace(netloc=netloc))

    def lose_reply_to(self, marker: bytes) -> None:
        """Lose the answer to the next command carrying ``marker``; count those commands."""
        with self._lock:
            self._armed = marker
            self._counted.add(marker)

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        for sock in self._sockets:
            _close(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection((self._upstream.hostname or "127.0.0.1",
                                               self._upstream.port or 6379))
            self._sockets += [client, server]
            doomed = threading.Event()
            threading.Thread(target=self._requests, args=(client, server, doomed),
                             daemon=True).start()
            threading.Thread(target=self._replies, args=(server, client, doomed),
                             daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket,
                  doomed: threading.Event) -> None:
        while chunk := _recv(client):
            with self._lock:
                for marker in (self._armed,) if self._armed else ():
                    if marker in chunk:
                        self._armed = None
                        doomed.set()  # before it is sent: its answer must not get through
                for marker in self._counted:
                    if marker in chunk:
                        self.forwarded[marker] += 1
            try:
                server.sendall(chunk)
            except OSError:
                break
        _close(server)

    def _replies(self, server: socket.socket, client: socket.socket,
                 doomed: threading.Event) -> None:
        while chunk := _recv(server):
            if doomed.is_set():
                with self._lock:
                    self.lost += 1
                break
            try:
                client.sendall(chunk)
            except OSError:
                break
        _close(client)
        _close(server)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already shut down by the other side
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
