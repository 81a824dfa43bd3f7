"""What the server asks of a store: the overview, one workload's page, and (Redis mode,
:class:`LogSource`) its pods' output.

The calls block (they read a store and rebuild an engine); the server runs
them in a worker thread. Neither writes anything: the dashboard is read-only.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kuota.dashboard.model import Overview, WorkloadPage


class Source(Protocol):
    #: Where the data comes from, as shown in the page header (no credentials).
    description: str

    def overview(self) -> Overview: ...

    def workload(self, key: str, overview: Overview | None) -> WorkloadPage | None: ...


@runtime_checkable
class LogSource(Protocol):
    """A store that keeps the pods' output (Redis mode): the workload page links it."""

    def logs(self, key: str) -> str | None: ...
