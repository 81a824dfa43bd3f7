"""Problems found in objects: where (file, kind, name, field) and what.

Every error a user can cause by writing a manifest or scenario ends as a
:class:`Problem`, so ``kuota validate``, the simulator and the operator
report them the same way: one line each, naming the file, the object and the
field path in manifest spelling (``spec.resourceGroups[0].flavors[1]``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    source: str
    kind: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        what = f"{self.kind} {self.name}".strip()
        what = f"{what}: " if what else ""
        field = f"{self.field}: " if self.field else ""
        return f"{where}{what}{field}{self.message}"


class ObjectError(ValueError):
    """One or more problems in objects read from a file or a mapping."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
