"""``redis+sentinel://`` URLs name the sentinels, the master they watch and the database;
a malformed one is one line saying what is wrong, never a password."""

from __future__ import annotations

from typing import Any

import pytest

from kuota import cli
from kuota.service import sentinels
from kuota.service.connection import connect, redact
from kuota.service.sentinels import SentinelURL


@pytest.mark.parametrize(("url", "want"), [
    ("redis+sentinel://s1/kuota", SentinelURL((("s1", 26379),), "kuota")),
    ("redis+sentinel://s1:26380,s2,10.0.0.3:26381/pool/2",
     SentinelURL((("s1", 26380), ("s2", 26379), ("10.0.0.3", 26381)), "pool", db=2)),
    ("redis+sentinel://:p%40ss@s1/kuota/1/",
     SentinelURL((("s1", 26379),), "kuota", db=1, password="p@ss")),
    ("redis+sentinel://ops:secret@[::1]:26390/kuota",
     SentinelURL((("::1", 26390),), "kuota", password="secret", username="ops")),
    ("rediss+sentinel://s1/kuota?ssl_ca_certs=/etc/ca.pem&ssl_cert_reqs=required",
     SentinelURL((("s1", 26379),), "kuota", tls=True,
                 options={"ssl_ca_certs": "/etc/ca.pem", "ssl_cert_reqs": "required"})),
])
def test_a_sentinel_url_names_the_sentinels_the_master_and_the_database(
        url: str, want: SentinelURL) -> None:
    assert sentinels.is_sentinel_url(url)
    assert sentinels.parse(url, redact(url)) == want


@pytest.mark.parametrize(("url", "want_error"), [
    ("redis+sentinel:///kuota", "name at least one sentinel"),
    ("redis+sentinel://s1", "name the master the sentinels monitor"),
    ("redis+sentinel://s1:26379/", "name the master the sentinels monitor"),
    ("redis+sentinel://s1:port/kuota", "sentinel port 'port' is not a port number"),
    ("redis+sentinel://s1:70000/kuota", "sentinel port '70000' is not a port number"),
    ("redis+sentinel://:26379/kuota", "sentinel address ':26379' has no host"),
    ("redis+sentinel://s1/kuota/zero", "the database 'zero' is not a number"),
    ("redis+sentinel://:hunter2@s1/kuota?socket_timeout=1", "unknown option(s) socket_timeout"),
])
def test_a_malformed_sentinel_url_is_refused_saying_why(url: str, want_error: str) -> None:
    with pytest.raises(ValueError, match="Redis URL") as refused:
        connect(url)
    assert want_error in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_the_cli_names_a_malformed_sentinel_url_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("REDIS_URL", "redis+sentinel://:hunter2@s1")
    assert cli.main(["get", "cq"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: Redis URL redis+sentinel://:***@s1: name the master the sentinels "
                   "monitor after their addresses, as "
                   "redis+sentinel://HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]\n")


def test_plain_urls_are_not_sentinel_urls() -> None:
    assert not any(sentinels.is_sentinel_url(u) for u in (
        "redis://h:6379/0", "rediss://h/0", "unix:///tmp/redis.sock", "embedded"))


class RecordedSentinel:
    """Stands in for redis.sentinel.Sentinel: what kuota asks of it."""

    made: list[RecordedSentinel] = []

    def __init__(self, sentinels: list[tuple[str, int]], sentinel_kwargs: dict[str, Any],
                 **master: Any) -> None:
        self.sentinels, self.sentinel_kwargs, self.master = sentinels, sentinel_kwargs, master
        self.asked: list[tuple[str, dict[str, Any]]] = []
        RecordedSentinel.made.append(self)

    def master_for(self, service: str, **kwargs: Any) -> Any:
        import fakeredis

        self.asked.append((service, kwargs))
        return fakeredis.FakeRedis(**kwargs)


def test_the_master_gets_the_password_and_the_restart_guard_the_sentinels_their_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard asks each new connection for its server's run_id: a sentinel's would never
    match the master's, so only the master's connections carry it."""
    import redis.sentinel

    monkeypatch.setattr(redis.sentinel, "Sentinel", RecordedSentinel)
    monkeypatch.setenv("REDIS_SENTINEL_PASSWORD", "sentinel-secret")
    monkeypatch.setenv("REDIS_PASSWORD", "from-env")
    RecordedSentinel.made.clear()
    conn = connect("rediss+sentinel://ops@s1,s2:26380/pool/3?ssl_ca_certs=/ca.pem")
    [made] = RecordedSentinel.made
    assert made.sentinels == [("s1", 26379), ("s2", 26380)]
    assert (made.master["password"], made.master["username"], made.master["db"],
            made.master["ssl"], made.master["ssl_ca_certs"]) == (
        "from-env", "ops", 3, True, "/ca.pem")
    assert made.master["redis_connect_func"] == conn.restarts.on_connect
    assert made.sentinel_kwargs["password"] == "sentinel-secret"
    assert made.sentinel_kwargs["ssl"] is True
    assert "redis_connect_func" not in made.sentinel_kwargs
    assert made.asked == [("pool", {"decode_responses": True}), ("pool", {})]
