"""The Lua scripts registered on one connection, called by name.

redis-py's ``register_script`` runs a script by its SHA and loads it on the
first ``NOSCRIPT`` — also inside pipelines — so a restarted Redis (which
forgets loaded scripts) needs nothing special here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from queueing.store import lua


class Scripts:
    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self._scripts = {name: redis.register_script(lua.source(name)) for name in lua.SCRIPTS}

    def run(self, name: str, keys: Sequence[str], args: Sequence[object]) -> str:
        """Run script ``name`` now and return its status string."""
        return _text(self.read(name, keys, args))

    def read(self, name: str, keys: Sequence[str], args: Sequence[object]) -> Any:
        """Run a script that reads (its answer as Redis gives it)."""
        return self._scripts[name](keys=list(keys), args=[_arg(a) for a in args])

    def queue(self, name: str, keys: Sequence[str], args: Sequence[object], pipe: Any) -> None:
        """Add a call to a pipeline; read its answer from ``pipe.execute()``."""
        self._scripts[name](keys=list(keys), args=[_arg(a) for a in args], client=pipe)

    def answers(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
                ) -> list[Any]:
        """Run script ``name`` once per ``(keys, args)`` call, all in one round trip (a
        pipeline, not a transaction: each call is atomic on its own); their answers as
        Redis gives them."""
        if len(calls) == 1:
            return [self.read(name, *calls[0])]
        pipe = self._redis.pipeline(transaction=False)
        for keys, args in calls:
            self.queue(name, keys, args, pipe)
        return list(pipe.execute())

    def batch(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
              ) -> list[str]:
        """:meth:`answers` of a script answering a status; the statuses."""
        return [_text(status) for status in self.answers(name, calls)]

    def batch_lists(self, name: str, calls: Sequence[tuple[Sequence[str], Sequence[object]]]
                    ) -> list[str]:
        """:meth:`answers` of a script answering a list of statuses (one per request its
        call carried); every call's statuses, in order, as one list."""
        return [_text(status) for answer in self.answers(name, calls) for status in answer]


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
