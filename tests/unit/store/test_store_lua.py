"""The Lua side: one lifecycle table (rendered from quota.lifecycle), scripts that load."""

from __future__ import annotations

import re

from store_builders import new_store

from queueing.store import lua
from quota.lifecycle import HOLDS_QUOTA, TRANSITIONS


def test_lua_transition_table_is_the_lifecycle_table() -> None:
    rows = re.findall(r'\["(\w+)\|(\w+)"\] = "(\w+)"', lua.PROLOGUE)
    want = {(s.value, e.value, t.value) for (s, e), t in TRANSITIONS.items()}
    assert set(rows) == want
    holds = set(re.findall(r'\["(\w+)"\] = true', lua.PROLOGUE))
    assert holds == {s.value for s in HOLDS_QUOTA}


def test_every_script_documents_its_keys_and_args() -> None:
    for name, text in lua.SCRIPTS.items():
        assert "KEYS[1]" in text and "ARGV[1]" in text, name


def test_step_refuses_an_illegal_transition() -> None:
    store = new_store()
    probe = lua.PROLOGUE + 'return {step("Pending", "reserve"), step("Finished", "admit") or "nil"}'
    assert store.redis.eval(probe, 0) == ["QuotaReserved", "nil"]
