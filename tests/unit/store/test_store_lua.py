"""The Lua side: one lifecycle table (rendered from quota.lifecycle), scripts that load."""

from __future__ import annotations

import re

from store_builders import new_store, spec

from queueing.store import lua, lua_prologue
from queueing.store.workloads import SubmitRequest
from quota.lifecycle import HOLDS_QUOTA, TRANSITIONS


def test_lua_transition_table_is_the_lifecycle_table() -> None:
    rows = re.findall(r'\["(\w+)\|(\w+)"\] = "(\w+)"', lua_prologue.PROLOGUE)
    want = {(s.value, e.value, t.value) for (s, e), t in TRANSITIONS.items()}
    assert set(rows) == want
    holds = set(re.findall(r'\["(\w+)"\] = true', lua_prologue.PROLOGUE))
    assert holds == {s.value for s in HOLDS_QUOTA}


def test_every_script_documents_its_keys_and_args() -> None:
    for name, text in lua.SCRIPTS.items():
        assert "KEYS[1]" in text and "ARGV[1]" in text, name


def test_step_refuses_an_illegal_transition() -> None:
    store = new_store()
    probe = (lua_prologue.PROLOGUE
             + 'return {step("Pending", "reserve"), step("Finished", "admit") or "nil"}')
    assert store.redis.eval(probe, 0) == ["QuotaReserved", "nil"]


def test_the_prologue_is_read_whole_as_its_definitions() -> None:
    assert "".join(text for _, text in lua_prologue.DEFINITIONS) == lua_prologue.PROLOGUE
    names = [name for name, _ in lua_prologue.DEFINITIONS]
    assert len(names) == len(set(names))
    assert {"TRANSITIONS", "step", "emit", "decided_keys", "emit_decided"} <= set(names)


def _defined(source: str) -> list[str]:
    return re.findall(r"^local (?:function )?(\w+)", source, re.MULTILINE)


def test_a_script_carries_the_definitions_it_mentions_and_theirs_in_prologue_order() -> None:
    for body, want_defined in [
        ("return 1", []),
        ('return step("Pending", "reserve")', ["TRANSITIONS", "step"]),
        # emit_decided uses emit (which needs nothing) and the list decided_later fills
        ("emit_decided(KEYS[1])", ["EVENTS_MAXLEN", "emit", "decided_keys", "emit_decided"]),
        ('-- the note is kept\nreturn 1', ["note"]),  # a comment's mention brings it too
    ]:
        assert _defined(lua_prologue.needed(body)) == want_defined, body


def test_every_script_defines_each_prologue_name_it_mentions() -> None:
    names = {name for name, _ in lua_prologue.DEFINITIONS}
    for script, body in lua.SCRIPTS.items():
        defined = set(_defined(lua.source(script))) & names
        mentioned = {n for n in names if re.search(rf"\b{n}\b", body)}
        assert mentioned <= defined, script
    assert "TRANSITIONS" not in lua.source("lease_renew")


def test_a_submission_names_none_of_the_fields_the_submit_script_sets_itself() -> None:
    # (the script sets its own fields first and the submission's after them, in one call:
    # a submission naming one of them would override it)
    store = new_store()
    prepared = store.workloads.prepare([SubmitRequest("ns/w", spec("w"), "ns/lq", 5, 0, "s1")])
    named = set(prepared[0].fields[::2])
    assert named and not named & lua.SUBMIT_SETS
    sets = re.search(r'redis\.call\("HSET", KEYS\[1\], (.*?)unpack', lua.SUBMIT, re.DOTALL)
    assert sets is not None
    arguments = [a.strip() for a in sets.group(1).split(",") if a.strip()]
    assert {name.strip('"') for name in arguments[::2]} == lua.SUBMIT_SETS
