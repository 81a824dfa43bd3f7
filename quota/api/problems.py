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
        source, kind, name, field, message = map(
            _one_line, (self.source, self.kind, self.name, self.field, self.message)
        )
        where = f"{source}: " if source else ""
        what = f"{kind} {name}".strip()
        what = f"{what}: " if what else ""
        field = f"{field}: " if field else ""
        return f"{where}{what}{field}{message}"


def _one_line(text: str) -> str:
    """Escape control characters, so a problem never spans lines (names come from input)."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


class ObjectError(ValueError):
    """One or more problems in objects read from a file or a mapping."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
