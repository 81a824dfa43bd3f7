"""Which workload a failure belongs to.

The engine assumes its input is valid — adapters check every spec before it
enters. Should a workload still make a step raise (a spec no check
foresaw, a bug its shape triggers), the error must not stay anonymous: an
adapter that does not know which workload broke a cycle can only stop, and
the same workload breaks every restart. :func:`blame` wraps the work done for
one workload and re-raises any error as :class:`WorkloadFailed` naming it,
so the adapter can set that one workload aside and go on with the others.
Nothing is swallowed here: the decision is the adapter's.
"""

from __future__ import annotations

from types import TracebackType


class WorkloadFailed(Exception):
    """Handling workload ``key`` raised ``cause`` (also the ``__cause__``)."""

    def __init__(self, key: str, cause: BaseException) -> None:
        super().__init__(f"workload {key}: {type(cause).__name__}: {cause}")
        self.key = key
        self.cause = cause

    @property
    def reason(self) -> str:
        """The error, for the workload's message."""
        return f"{type(self.cause).__name__}: {self.cause}"


class blame:  # (lower case: used as a function, ``with blame(key):``)
    """Re-raise any error of the block as :class:`WorkloadFailed` for ``key`` (an error
    already blamed on a workload keeps its workload).

    A class, not a generator-based context manager: the leader enters one several times
    per admission, and this costs a fifth of the time."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if isinstance(error, Exception) and not isinstance(error, WorkloadFailed):
            raise WorkloadFailed(self.key, error) from error
