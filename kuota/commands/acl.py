"""``kuota acl submitter NAMESPACE --user NAME``: a Redis ACL user limited to one namespace.

Prints the ``ACL SETUSER`` command for a person (or a team's CI) who may submit,
cancel and read workloads of one namespace of a pool, and nothing else: they read
their namespace's records, pods and logs and the queue objects, and write only to
the namespace's request stream, which the scheduler takes requests from
(docs/redis-mode.md, "Securing a pool"). Pipe it into ``redis-cli`` as an admin,
or copy it into the ``users.acl`` file::

    kuota acl submitter team-a --user alice --password-env PW | redis-cli -u "$ADMIN_URL"

Such a user must not reach the pool itself, only its namespace's records. No
command category is granted whole: ``@connection`` alone holds CLIENT PAUSE
(freezes every write), CLIENT KILL (drops the scheduler's and workers'
connections) and CLIENT LIST (every client's address and last command). The
user gets the reads below, and of the connection's commands only what
redis-py sends when it connects (AUTH or HELLO, SELECT for a database other
than 0; PING for its health checks). Its CLIENT SETINFO is refused, which
redis-py ignores. No channels: rq's workers take orders on pub/sub channels.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from kuota.conventions import plain

#: Read commands a submitter needs; never KEYS or SCAN (they would list every name).
READS = ("hget", "hgetall", "hmget", "hexists", "exists", "get", "mget", "type", "ttl",
         "lrange", "llen", "zrange", "zrangebyscore", "zcard", "zscore", "xrange",
         "xrevrange", "xlen", "time", "ping", "echo")
#: What redis-py sends when it connects (module doc); no other command of ``@connection``.
CONNECTING = ("auth", "hello", "select")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "acl", description="Print Redis ACL rules for a pool's users (run them as an admin).")
    kinds = parser.add_subparsers(dest="role", required=True, metavar="ROLE")
    submitter = kinds.add_parser(
        "submitter", help="may submit, cancel and read the workloads of one namespace",
        description=plain(__doc__ or ""), formatter_class=argparse.RawDescriptionHelpFormatter)
    submitter.add_argument("namespace", metavar="NAMESPACE")
    submitter.add_argument("--user", required=True, metavar="NAME", help="the Redis user")
    submitter.add_argument("--password-env", metavar="VAR",
                           help="set the password held in environment variable VAR (not on "
                                "the command line, where ps shows it); default: leave the "
                                "user's passwords as they are")
    submitter.add_argument("--prefix", default="kuota", help="the pool's key prefix")
    parser.set_defaults(func=run)


def submitter_rules(namespace: str, prefix: str = "kuota") -> list[str]:
    """The ACL rules (after ``ACL SETUSER NAME``) of a submitter of ``namespace``."""
    if not _NAMESPACE.match(namespace):
        raise ValueError(f"namespace {namespace!r}: not a DNS label (lower-case letters, "
                         "digits and '-', at most 63)")
    p, ns = prefix, namespace
    return [
        "on", "resetkeys", "resetchannels", "-@all",
        *(f"+{c}" for c in (*CONNECTING, *READS)),
        f"%R~{p}:workload:{ns}/*", f"%R~{p}:workloads:{ns}", f"%R~{p}:pod:{ns}/*",
        f"%R~{p}:log:{ns}/*", f"%R~{p}:answer:{ns}:*", f"%R~{p}:objects:*",
        f"%R~{p}:purged:{ns}",
        f"%R~{p}:scheduler:lease", f"%R~{p}:nodes", f"%R~{p}:node:*",
        # Writing: only appending to the namespace's request stream.
        f"(~{p}:requests:{ns} +xadd)",
    ]


def run(args: argparse.Namespace) -> int:
    try:
        rules = submitter_rules(args.namespace, args.prefix)
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    if args.password_env:
        password = os.environ.get(args.password_env)
        if not password:
            print(f"error: --password-env {args.password_env}: the variable is not set")
            return 2
        rules.insert(1, f">{password}")
    # One argument per rule: a selector holds a space, so it is quoted (redis-cli reads it so).
    print(" ".join(["ACL", "SETUSER", args.user,
                    *(f'"{r}"' if " " in r else r for r in rules)]))
    return 0
