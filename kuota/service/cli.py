"""What every Redis-mode command shares: where the store is, and how errors are told.

``--redis URL`` (default: ``REDIS_URL``, else ``redis://localhost:6379/0``;
``embedded`` for an in-process store, announced on stderr) and ``--prefix``
(default ``kuota``, or ``KUOTA_PREFIX``) pick the store.
Errors end the command with one clear line each and an exit status: 2 for
invalid input (every problem listed with its file, object and field), 1 for
everything else (not found, refused, Redis unreachable); a closed output pipe
(``| head``) ends it quietly.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from kuota.service.connection import (
    DEFAULT_URL,
    EMBEDDED,
    Connection,
    connect,
    redact,
    resolve_url,
)
from queueing.store import StoreError
from queueing.store.keys import BadKey
from quota.resources import QuantityError

if TYPE_CHECKING:
    from kuota.client import Client

EMBEDDED_NOTE = ("note: --redis embedded: using an in-process store that lives only as long as "
                 "this command; no other process sees it (see docs/redis-mode.md)")


def add_store_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", metavar="URL", default=None,
                        help=f"Redis URL (default: $REDIS_URL, else {DEFAULT_URL}): "
                             "redis://, rediss:// (TLS), or redis+sentinel://HOST:26379[,HOST"
                             f"…]/SERVICE[/DB] for a Redis behind Sentinel; '{EMBEDDED}' for "
                             "an in-process store that lives only as long as this command")
    parser.add_argument("--prefix", default=os.environ.get("KUOTA_PREFIX", "kuota"),
                        help="key prefix of this kuota deployment (default: kuota)")
    parser.add_argument("--password-file", type=Path, default=None, metavar="PATH",
                        help="read the Redis password from this file (one line) when the URL "
                             "has none; default: systemd's credential "
                             "$CREDENTIALS_DIRECTORY/redis-password if there is one, else "
                             "$REDIS_PASSWORD")


def add_log_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="default INFO")


def setup_logging(args: argparse.Namespace) -> None:
    logging.basicConfig(level=getattr(args, "log_level", "WARNING"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def connection(args: argparse.Namespace) -> Connection:
    """The store ``--redis``/``--prefix`` name; the embedded one is always announced on
    stderr (stdout stays clean for ``-o json``)."""
    url = resolve_url(args.redis)
    if url == EMBEDDED:
        print(EMBEDDED_NOTE, file=sys.stderr)
    return connect(url, prefix=args.prefix, password_file=getattr(args, "password_file", None))


def client(args: argparse.Namespace) -> Client:
    from kuota.client import Client
    from kuota.service.journal import default_path

    # The CLI notes what it submits, to name a submission the store lost (module journal).
    return Client(connection=connection(args), journal=default_path())


NO_SCHEDULER_NOTE = ("note: no scheduler holds the lease: nothing is admitted or placed until "
                     "one runs (`kuota status` shows the schedulers)")


def warn_without_scheduler(client: Client, *, submitted: bool = False) -> None:
    """Say on stderr when no scheduler leads: a workload would wait for nothing, and a
    dead scheduler must not look like a busy one (issue 12). ``submitted``: a workload
    was just stored, so Redis gone meanwhile is a note, not a failed command (which would
    have it submitted again)."""
    store = client.store
    try:
        leading = store.redis.exists(store.keys.lease)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        if not submitted:
            raise
        print(f"note: cannot tell whether a scheduler leads: {_first_line(exc)}",
              file=sys.stderr)
        return
    if not leading:
        print(NO_SCHEDULER_NOTE, file=sys.stderr)


def handles_errors(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn the errors a user can cause into messages and exit statuses."""

    @functools.wraps(run)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except (QuantityError, BadKey, ValueError) as exc:
            problems = getattr(exc, "problems", None)  # quota.api.ObjectError (a ValueError)
            for line in problems if problems is not None else [exc]:
                print(f"error: {line}", file=sys.stderr)
            return 2
        except StoreError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            print(f"error: cannot reach Redis at {_where(args)}: {_first_line(exc)}",
                  file=sys.stderr)
            return 1
        except redis.exceptions.NoPermissionError as exc:
            print(f"error: your Redis user may not do this: {_first_line(exc)} (a submitter "
                  "limited to a namespace reads and changes only that namespace's workloads: "
                  "`-n NAMESPACE`)", file=sys.stderr)
            return 1
        except redis.ResponseError as exc:
            if "WRONGTYPE" in str(exc) and _name_wrong_types(args):
                return 1
            print(f"error: Redis at {_where(args)} refused: {_first_line(exc)}", file=sys.stderr)
            return 1
        except redis.RedisError as exc:  # a DB index out of range, a server that is not Redis
            print(f"error: Redis at {_where(args)} refused: {_first_line(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        except BrokenPipeError:
            # The reader went away (`kuota get -o json | head`): what is left unsaid is not
            # an error. Point stdout at nothing so the interpreter's final flush is quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    return wrapper


def _name_wrong_types(args: argparse.Namespace) -> bool:
    """After a ``WRONGTYPE`` answer: name the keys of the store that hold the wrong type
    (written around kuota), one line each. False if none is found (or it cannot look)."""
    if resolve_url(getattr(args, "redis", None)) == EMBEDDED:
        return False  # a new embedded store is empty: nothing to find
    try:
        wrong = connection(args).store.quarantine.wrong_types()
    except redis.RedisError:
        return False
    for key, found in wrong.items():
        print(f"error: stored key {key} holds {found} (written around kuota): the scheduler "
              "sets it aside and names it in `kuota status`", file=sys.stderr)
    return bool(wrong)


def _where(args: argparse.Namespace) -> str:
    return redact(resolve_url(getattr(args, "redis", None)))


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def parse_labels(text: str | None) -> dict[str, str]:
    """``k=v,k2=v2`` → a dict; raises ValueError naming the bad part."""
    labels: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"label {part!r} is not KEY=VALUE")
        labels[key.strip()] = value.strip()
    return labels


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_retention(text: str) -> float | None:
    """``--retain-finished``: ``forever`` (None), or a duration such as ``90s``, ``30m``,
    ``12h``, ``7d`` or plain seconds; as an argparse ``type``."""
    value = text.strip().lower()
    if value == "forever":
        return None
    number, unit = (value[:-1], value[-1]) if value[-1:] in _UNITS else (value, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (like 90s, 30m, 12h, 7d) or 'forever'") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a retention must be a finite duration, not negative "
            "('forever' keeps everything)")
    return seconds


def kinds_help() -> str:
    return "ResourceFlavor, Topology, AdmissionCheck, Cohort, ClusterQueue, LocalQueue " \
           "(NAMESPACE/NAME), WorkloadPriorityClass, MultiClusterConfig, MemberCluster, Namespace"


def print_json(doc: Any) -> None:
    print(json.dumps(doc, indent=2, sort_keys=True, default=str))
