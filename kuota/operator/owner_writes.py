"""What the writes to Workloads' owners need of the writer: a contract, not the writer.

:mod:`kuota.operator.owners` (Jobs, JobSets, ... and pod groups: created,
started, stopped) and :mod:`kuota.operator.ungater` (pods pinned to their
topology domains) are driven by :class:`kuota.operator.writer.Writer`,
which chains, retries and reports their writes. They read the operator's
state and post Events through it; they are typed against the protocols
here, so that they depend on what they use — the controller's state, the
API client, the recorder — and the writer depends on them, never the
other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from admission.engine import Engine
    from kuota.operator.client import Client
    from kuota.operator.configs import Configs
    from kuota.operator.metrics import Metrics
    from kuota.operator.objects import Objects
    from kuota.operator.owner_events import Owners
    from kuota.operator.recorder import Recorder
    from kuota.operator.settings import Options
    from quota.workload import Admission

Body = dict[str, Any]


class State(Protocol):
    """The operator's state the owner writes read (its ``Controller``)."""

    @property
    def objects(self) -> Objects: ...
    @property
    def engine(self) -> Engine | None: ...
    @property
    def options(self) -> Options: ...
    @property
    def owners(self) -> Owners: ...
    @property
    def configs(self) -> Configs: ...

    def observe(self, kind: str, body: Body, *, deleted: bool = False) -> None: ...
    def deactivate(self, key: str, reason: str, message: str) -> None: ...


class OwnerWrites(Protocol):
    """The writer, as the owner writes use it."""

    @property
    def controller(self) -> State: ...
    @property
    def client(self) -> Client: ...
    @property
    def recorder(self) -> Recorder: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def persisted(self) -> dict[str, Admission]:
        """Workload key -> the admission stored in its status (what its owner may start
        under)."""

    def succeeded(self, key: str) -> None: ...
    def retry(self, key: str, again: Callable[[], None]) -> float: ...
    def report(self, key: str, message: str) -> bool: ...
    def sync_owner(self, owner: str) -> None: ...
    def create_workload(self, owner: str) -> None: ...
    def create_group_workload(self, group_key: str) -> None: ...
    def delete_workload(self, key: str) -> None: ...
