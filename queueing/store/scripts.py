"""The Lua scripts registered on one connection, called by name.

redis-py's ``register_script`` runs a script by its SHA and loads it on the
first ``NOSCRIPT`` — also inside pipelines — so a restarted Redis (which
forgets loaded scripts) needs nothing special here.

**Answers read later.** A call waits while Redis runs the script: for a
scheduling round's placements, milliseconds in which the caller could be
working. :meth:`Scripts.send` writes the calls on a connection of their own
and returns at once; their answers are read when the caller needs them
(:meth:`Sent.answers`), Redis having run them meanwhile. The calls run in
order, each atomic, as a pipeline (not a transaction) runs them.

Calls run together and answered at once (:meth:`Scripts.answers`: a job array's
submissions, a node's pod reports) are sent the same way and read straight after.
Calls carry up to some thirty arguments per workload. They are packed by hiredis in
one go (the same bytes redis-py's packer writes, without its per-argument checks), and
each argument is checked here only when it is not already a ``str``, ``int`` or
``float`` (``benchmarks/script_packing.py``: 5.2 against 13.0 µs a call of 16 arguments).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from hiredis import pack_command
from redis.exceptions import NoScriptError, ResponseError

from queueing.store import lua

Calls = Sequence[tuple[Sequence[str], Sequence[object]]]


class Scripts:
    def __init__(self, redis: Any) -> None:
        self._redis = redis
        #: Registered on first use (its text assembled then): a CLI command runs a few.
        self._scripts: dict[str, Any] = {}

    def _script(self, name: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._redis.register_script(lua.source(name))  # KeyError if unknown
            self._scripts[name] = script
        return script

    def run(self, name: str, keys: Sequence[str], args: Sequence[object]) -> str:
        """Run script ``name`` now and return its status string."""
        return _text(self.read(name, keys, args))

    def read(self, name: str, keys: Sequence[str], args: Sequence[object]) -> Any:
        """Run a script that reads (its answer as Redis gives it)."""
        return self._script(name)(keys=list(keys), args=_args(args))

    def answers(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
                ) -> list[Any]:
        """Run script ``name`` once per ``(keys, args)`` call, all in one round trip (as a
        pipeline, not a transaction: each call is atomic on its own); their answers as
        Redis gives them."""
        if len(calls) == 1:
            return [self.read(name, *calls[0])]
        with self.send(name, calls) as sent:
            return sent.answers()

    def batch(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
              ) -> list[str]:
        """:meth:`answers` of a script answering a status; the statuses."""
        return [_text(status) for status in self.answers(name, calls)]

    def batch_lists(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
                    ) -> list[str]:
        """:meth:`answers` of a script answering a list of statuses (one per request its
        call carried); every call's statuses, in order, as one list."""
        return [_text(status) for answer in self.answers(name, calls) for status in answer]

    def send(self, name: str, calls: Calls) -> Sent:
        """Send the calls of script ``name`` (as :meth:`answers` runs them) without waiting
        for their answers: read them from the :class:`Sent` returned, in a ``with`` block."""
        return Sent(self._redis.connection_pool, self._script(name), calls)


class Sent:
    """Script calls written on a connection taken from the pool, their answers unread.

    :meth:`answers` reads them (once). A call Redis did not know the script for (a
    restarted Redis forgets them) did not run: it is run again after the others, the
    first through redis-py, which loads the script. Leaving the ``with`` block with the
    answers unread reads them and lets them go — or, when the block raised, drops the
    connection instead of giving it back with answers pending.
    """

    def __init__(self, pool: Any, script: Any, calls: Calls) -> None:
        """``script``: redis-py's registered script; ``pool``: its client's connections."""
        self._script, self._pool = script, pool
        self._calls = checked(calls)
        self._conn: Any = pool.get_connection()
        try:
            self._conn.send_packed_command([packed(script.sha, self._calls)])
        except BaseException:
            self._drop()
            raise

    def answers(self) -> list[Any]:
        """Every call's answer, in order, as Redis gave it."""
        if self._conn is None:
            raise RuntimeError("the answers of these calls were read already")
        answers: list[Any] = []
        try:
            for _ in self._calls:
                try:
                    answers.append(self._conn.read_response())
                except ResponseError as exc:  # an error answer: the connection is still good
                    answers.append(exc)
        except BaseException:
            self._drop()
            raise
        self._pool.release(self._conn)
        self._conn = None
        forgot = [i for i, answer in enumerate(answers) if isinstance(answer, NoScriptError)]
        if forgot:
            # The first runs through redis-py, which loads the script; the others are sent
            # again in one go (a batch of thousands after a restart is not a round trip each).
            keys, args = self._calls[forgot[0]]
            answers[forgot[0]] = self._script(keys=keys, args=args)
            if len(forgot) > 1:
                with Sent(self._pool, self._script,
                          [self._calls[i] for i in forgot[1:]]) as again:
                    for i, answer in zip(forgot[1:], again.answers(), strict=True):
                        answers[i] = answer
        for answer in answers:
            if isinstance(answer, ResponseError):
                raise answer
        return answers

    def statuses(self) -> list[str]:
        """:meth:`answers` of a script answering a list of statuses per call, as one list
        (as :meth:`Scripts.batch_lists`)."""
        return [_text(status) for answer in self.answers() for status in answer]

    def close(self) -> None:
        """Let the answers go unread: the connection is dropped, not given back."""
        self._drop()

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.disconnect()
            self._pool.release(self._conn)
            self._conn = None

    def __enter__(self) -> Sent:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None and self._conn is not None:
            self.answers()  # not wanted after all: the connection goes back clean
        self._drop()


#: Argument types sent as they are (``bool``, a subclass of ``int``, is not one of them).
_PLAIN = frozenset({str, int, float})


def checked(calls: Calls) -> list[tuple[list[str], list[str | int | float]]]:
    """The calls, their arguments checked (:func:`_args`)."""
    return [(list(keys), _args(args)) for keys, args in calls]


def _args(args: Sequence[object]) -> list[str | int | float]:
    """Script arguments, each checked (:func:`_arg`) unless plainly fine."""
    # (a type in _PLAIN is one _arg returns as it is: mypy cannot tell)
    return [a if type(a) in _PLAIN else _arg(a) for a in args]  # type: ignore[misc]


def packed(sha: str, calls: Sequence[tuple[list[str], list[str | int | float]]]) -> bytes:
    """The ``EVALSHA`` commands of ``calls`` (:func:`checked`), packed in one go."""
    # (hiredis's stub types the argument as a tuple of one: it takes any number)
    return b"".join(pack_command(("EVALSHA", sha, len(keys), *keys, *args))  # type: ignore[arg-type]
                    for keys, args in calls)


def _arg(value: object) -> str | int | float:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        return value
    raise TypeError(f"script argument {value!r} must be str, int, float or bool")


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode()
    return str(value)


def text(value: object) -> str:
    """A script answer read back from a pipeline, as text."""
    return _text(value)
