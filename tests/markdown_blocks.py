"""Fenced code blocks of the project's Markdown, for tests that run the docs as written.

A block is found by the heading it sits under and its language, so a test names what a
reader sees ("## Quickstart", ``sh``) and a doc that moves or rewrites its commands is run
as it now reads (or fails to be found) rather than as the test once copied it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    heading: str  # the nearest heading above, without its #s
    language: str  # the fence's info word ("" when none)
    text: str
    line: int  # 1-based line of the opening fence


def code_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order."""
    blocks: list[Block] = []
    heading, fence, language, start, body = "", "", "", 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if fence:
            if line.strip() == fence:
                blocks.append(Block(heading, language, "\n".join(body) + "\n", start))
                fence = ""
            else:
                body.append(line)
            continue
        if opened := _FENCE.match(line):
            fence, language, start, body = opened.group(1), opened.group(2), number, []
        elif titled := _HEADING.match(line):
            heading = titled.group(2)
    assert not fence, f"{path}:{start}: a code block is never closed"
    return blocks


def blocks_under(path: Path, heading: str, language: str) -> list[Block]:
    """The ``language`` blocks under the heading ``heading`` (exactly as written, without
    its #s); fails when there is none, so a renamed section is noticed."""
    found = [b for b in code_blocks(path) if b.heading == heading and b.language == language]
    assert found, f"{path}: no {language} block under the heading {heading!r}"
    return found
