"""The submitter's own record of what the store acknowledged: how a lost submission is named.

With ``appendfsync everysec`` (Redis's default for AOF) a Redis that crashes loses
up to its last second of writes, acknowledged ones included — a submission among
them. Nothing left in Redis can say so: the record is simply gone. The submitter
knows, though: it was told ``submitted``. So every submission this machine's CLI
(or a :class:`~kuota.client.Client` given a journal) makes is appended here — the
store it went to, the workload key, the submission id, the time — and a name the
store does not know is looked up before answering "not found":

* the store has the key with the same submission: not lost;
* the store has the key with another submission: it was replaced (finished, then
  submitted again): not lost;
* the store has no record, but lists the submission among those it purged
  (``--retain-finished``): forgotten on purpose, not lost;
* else it was lost with the store's last writes: ``kuota get`` and ``submit --wait``
  say so by name, and ``kuota history --lost`` lists every such submission.

One JSON line per submission in ``$KUOTA_JOURNAL`` (default
``$XDG_STATE_HOME/kuota/submissions.jsonl``, i.e. ``~/.local/state/kuota/``;
``KUOTA_JOURNAL=off`` keeps none); only the last :data:`KEEP` days are kept,
rewritten at most once a day. Appends of a line under the pipe size are atomic,
so several CLI processes may write at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: Days a submission stays in the journal.
KEEP: Final = 7.0


@dataclass(frozen=True, slots=True)
class Entry:
    store: str
    key: str
    submission: str
    at: float


def default_path() -> Path | None:
    """``$KUOTA_JOURNAL``, ``off`` for none, else under ``$XDG_STATE_HOME`` (``~/.local/state``)."""
    configured = os.environ.get("KUOTA_JOURNAL")
    if configured is not None:
        return None if configured.lower() in ("", "off", "none") else Path(configured)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"),
                                                              ".local", "state")
    return Path(state) / "kuota" / "submissions.jsonl"


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def record(self, entry: Entry) -> None:
        """Append one acknowledged submission (best effort: a journal that cannot be
        written must not fail a submission the store has taken)."""
        line = json.dumps({"store": entry.store, "key": entry.key,
                           "submission": entry.submission, "at": round(entry.at, 3)},
                          separators=(",", ":")) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            return
        self._trim(entry.at)

    def entries(self, store: str) -> Iterator[Entry]:
        """This store's submissions still kept, oldest first (unreadable lines skipped)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines:
            try:
                doc = json.loads(line)
                entry = Entry(str(doc["store"]), str(doc["key"]), str(doc["submission"]),
                              float(doc["at"]))
            except (ValueError, KeyError, TypeError):
                continue
            if entry.store == store:
                yield entry

    def last(self, store: str, key: str) -> Entry | None:
        """The latest submission of ``key`` to ``store`` made here, if kept."""
        found = None
        for entry in self.entries(store):
            if entry.key == key:
                found = entry
        return found

    def _trim(self, now: float) -> None:
        """Drop entries older than :data:`KEEP` days, at most once a day (the file's
        creation is not known portably: its first line's time stands for it)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                first = json.loads(f.readline() or "{}").get("at")
        except (OSError, ValueError, AttributeError):
            return
        if not isinstance(first, int | float) or now - first < (KEEP + 1) * 86_400:
            return
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
            kept = [line for line in lines if _young(line, now)]
            spare = self.path.with_suffix(f".{os.getpid()}.tmp")
            spare.write_text("".join(kept), encoding="utf-8")
            os.replace(spare, self.path)
        except OSError:
            return


def _young(line: str, now: float) -> bool:
    try:
        return bool(now - float(json.loads(line)["at"]) < KEEP * 86_400)
    except (ValueError, KeyError, TypeError):
        return False
