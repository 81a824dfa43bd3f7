"""One set of conventions over every command (issue 41, scope 3; docs/cli-conventions.md).

Why: each surface had its own. Tables cut REASON to ``ExceedsM…`` in CI logs; a
cancelled job waited on exited 143 where the docs promise 1, and ``history``
showed ``-15``/``-9`` where ``--wait`` exits 143/137; ``-A`` was "include finished"
in ``kuota get`` and "all namespaces" in ``kubectl kuota``; ``stop`` held in one and
drained in the other; a running job was "Running" in the CLI and "Admitted" on the
dashboard; ``apply`` always said ``configured``; invalid input exited 2 in ``kuota``
and 1 in ``kubectl kuota create``; the plugin's help showed raw ````markup````.

Each of those is a case here. The rules that can be checked on every command
(help text, ``-A``, an unknown flag exiting 2, tables cutting nothing when not
printed to a terminal) walk the argparse parsers of both tools, so a command added
later is held to them without a new test. The rest run the real commands
in-process against the embedded store (``--redis embedded``, one prefix a test).
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kuota import cli, conventions, kubectl
from kuota.client import Client, PodStatus, WorkloadStatus
from kuota.commands import output
from kuota.commands.submit import exit_status
from kuota.service.connection import connect
from queueing.store import PodRef, Store
from tests.unit.store.store_builders import QUEUES, admit, lead, node, place

LONG_NAME = "a-workload-with-a-name-longer-than-any-terminal-would-leave-room-for"
LONG_REASON = "ExceedsMaxQuota"
LONG_MESSAGE = ("the workload asks for more than ClusterQueue cq can ever hold: cpu 8 is "
                "more than its maximum of 4 (nominal plus borrowing limit)")


# -- walking the parsers --------------------------------------------------------------------

def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]
          ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every parser under ``parser``, with its words and the help line its parent lists."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, lines.get(name, "")
                yield from _walk(sub, (*path, name))


def every_command() -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    return [*_walk(cli.build_parser(), ("kuota",)),
            *_walk(kubectl.build_parser(), ("kubectl", "kuota"))]


COMMANDS = {" ".join(words): (parser, line) for words, parser, line in every_command()}
MARKUP = re.compile(r"``|:[a-z]+:`|::$", re.MULTILINE)


@pytest.mark.parametrize("words", COMMANDS)
def test_every_command_has_plain_help(words: str) -> None:
    parser, line = COMMANDS[words]
    text = parser.format_help()
    assert line.strip(), f"{words}: no one-line help in its parent's list"
    assert not MARKUP.findall(text), f"{words} --help shows markup: {MARKUP.findall(text)}"


def test_the_plugins_top_level_help_is_plain() -> None:
    assert not MARKUP.findall(kubectl.build_parser().format_help())


@pytest.mark.parametrize("words", COMMANDS)
def test_dash_a_upper_means_all_namespaces_and_nothing_else(words: str) -> None:
    parser, _ = COMMANDS[words]
    for action in parser._actions:
        if "-A" in action.option_strings:
            assert set(action.option_strings) == {"-A", conventions.ALL_NAMESPACES}, words
            assert action.dest == "all_namespaces", words


@pytest.mark.parametrize("words", COMMANDS)
def test_an_unknown_flag_is_bad_input(words: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*words.split()[2 if words.startswith("kubectl") else 1:],
            "--no-such-flag-anywhere"]
    main = kubectl.main if words.startswith("kubectl") else cli.main
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == conventions.BAD_INPUT
    assert "error: " in capsys.readouterr().err


# -- tables -----------------------------------------------------------------------------------

def _table_modules() -> dict[str, object]:
    """The module of each kuota command printing tables (``-o table``)."""
    import importlib

    found = {}
    for words, (parser, _) in COMMANDS.items():
        if not words.startswith("kuota ") or len(words.split()) != 2:
            continue
        if any(a.dest == "output" and "table" in (a.choices or ()) for a in parser._actions):
            module = cli.COMMANDS[words.split()[1]][0]
            found[words] = importlib.import_module(f"kuota.commands.{module}")
    return found


def _columns(module: object) -> list[output.Columns]:
    out: list[output.Columns] = []
    for value in vars(module).values():
        if isinstance(value, output.Columns):
            out.append(value)
        elif isinstance(value, dict):
            out += [v for v in value.values() if isinstance(v, output.Columns)]
    return out


TABLES = {words: columns for words, module in _table_modules().items()
          for columns in [_columns(module)] if columns}


def _long_rows(columns: output.Columns) -> list[dict[str, str]]:
    names = [*columns.narrow, *columns.wide]
    return [{name: f"{name}-" + "x" * 70 for name in names}]


@pytest.mark.parametrize("words", TABLES)
def test_a_table_not_printed_to_a_terminal_cuts_nothing(
        words: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for columns in TABLES[words]:
        rows = _long_rows(columns)
        output.emit([output.Item({}, rows[0])], columns, argparse.Namespace(output="table"))
        printed = capsys.readouterr().out
        assert "…" not in printed, words
        for name in columns.narrow:
            assert rows[0][name] in printed, f"{words}: {name} cut"


@pytest.mark.parametrize("words", TABLES)
def test_on_a_terminal_names_labels_and_reasons_stay_whole(
        words: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    for columns in TABLES[words]:
        rows = _long_rows(columns)
        output.emit([output.Item({}, rows[0])], columns, argparse.Namespace(output="table"))
        printed = capsys.readouterr().out
        for name in conventions.NEVER_CUT & set(columns.narrow):
            assert rows[0][name] in printed, f"{words}: {name} cut on a terminal"


def test_a_reason_asked_to_shrink_is_still_not_cut(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``kuota status`` asks for its nodes' REASON to be cut; the convention wins."""
    monkeypatch.setenv("COLUMNS", "40")
    output.print_table([{"name": "n1", "reason": LONG_MESSAGE}], ("name", "reason"),
                       shrink=("reason",), terminal=True)
    assert LONG_MESSAGE in capsys.readouterr().out


# -- the real commands on the embedded store ---------------------------------------------------

@dataclass
class Pool:
    """An embedded store with the queues of :data:`QUEUES`, reached by ``kuota`` too."""

    prefix: str
    client: Client
    capsys: pytest.CaptureFixture[str]

    @property
    def store(self) -> Store:
        return self.client.store

    def kuota(self, *argv: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        status = cli.main([*argv, "--redis", "embedded", "--prefix", self.prefix])
        out, err = self.capsys.readouterr()
        return status, out, err

    def waiting(self, name: str) -> str:
        """A pending workload whose REASON and MESSAGE the leader has set."""
        key = self.client.submit(["true"], queue="default/lq-cq", name=name,
                                 requests={"cpu": 1}).key
        holder = lead(self.store)
        assert self.store.workloads.set_reasons(
            holder, [(key, 0, LONG_REASON, LONG_MESSAGE)]) == "ok:1"
        return key

    def ended(self, name: str, exit_code: int | None) -> str:
        """A workload admitted, placed, started and (``exit_code``) ended on node n0."""
        key = self.client.submit(["true"], queue="default/lq-cq", name=name,
                                 requests={"cpu": 1}).key
        holder = lead(self.store)
        assert admit(self.store, holder, key) == "ok:1"
        epoch = node(self.store, "n0")
        assert place(self.store, holder, key, 1, [("n0", epoch)]) == "ok"
        ref = PodRef(key, 1, 0)
        assert self.store.pods.start(ref, node="n0", epoch=epoch, devices="", now=4.0) == "ok"
        if exit_code is not None:
            self.store.pods.exit(ref, node="n0", pod_count=1, exit_code=exit_code,
                                 stopped=False, message="", pid=1, now=5.0)
        return key


@pytest.fixture
def pool(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Pool:
    monkeypatch.setenv("COLUMNS", "80")  # what a CI runner's pipe reports, if anything
    prefix = f"conventions-{uuid.uuid4().hex[:8]}"
    client = Client(connection=connect("embedded", prefix=prefix))
    client.apply(QUEUES)
    return Pool(prefix, client, capsys)


@dataclass(frozen=True)
class TableCase:
    argv: tuple[str, ...]
    want_whole: tuple[str, ...] = (f"default/{LONG_NAME}", LONG_REASON, LONG_MESSAGE)


TABLE_CASES = {
    "get workloads": TableCase(("get", "wl")),
    "get one workload": TableCase(("get", "wl", LONG_NAME)),
    "pending": TableCase(("pending", "cq")),
}


@pytest.mark.parametrize("case", TABLE_CASES.values(), ids=TABLE_CASES.keys())
def test_piped_tables_keep_reason_and_message_whole(pool: Pool, case: TableCase) -> None:
    pool.waiting(LONG_NAME)
    status, out, err = pool.kuota(*case.argv)
    assert status == conventions.OK, err
    for text in case.want_whole:
        assert text in out, f"{text!r} cut in:\n{out}"


def test_history_keeps_the_message_whole(pool: Pool) -> None:
    key = pool.waiting(LONG_NAME)
    pool.store.workloads.cancel(key, now=6.0, message=LONG_MESSAGE)
    status, out, _ = pool.kuota("history")
    assert status == conventions.OK and LONG_MESSAGE in out


# -- exit statuses ----------------------------------------------------------------------------

def _finished(outcome: str, *codes: int | None) -> WorkloadStatus:
    return WorkloadStatus("default/w", "Finished", outcome, "", "", "cq", 1,
                          [PodStatus(i, "n1", "Failed" if c else "Succeeded", c)
                           for i, c in enumerate(codes)])


@dataclass(frozen=True)
class WaitCase:
    status: WorkloadStatus
    want_exit: int


WAIT_CASES = {
    "succeeded": WaitCase(_finished("Succeeded", 0, 0), 0),
    "failed: its own code": WaitCase(_finished("Failed", 0, 3), 3),
    "failed: killed by SIGKILL": WaitCase(_finished("Failed", -9), 137),
    "failed: killed by SIGTERM": WaitCase(_finished("Failed", -15), 143),
    "cancelled: its pods got kuota's SIGTERM": WaitCase(_finished("Cancelled", -15, -15), 1),
    "cancelled: killed after the grace period": WaitCase(_finished("Cancelled", -9), 1),
    "rejected": WaitCase(_finished("Rejected"), 1),
    "failed with no pod exit": WaitCase(_finished("Failed"), 1),
}


@pytest.mark.parametrize("case", WAIT_CASES.values(), ids=WAIT_CASES.keys())
def test_wait_exits_by_the_documented_rule(case: WaitCase) -> None:
    assert exit_status(case.status) == case.want_exit


@pytest.mark.parametrize("code", [-9, -15, 3])
def test_history_shows_the_number_wait_exits_with(pool: Pool, code: int) -> None:
    key = pool.ended(f"ends-{abs(code)}", code)
    want = exit_status(pool.client.workload(key).status())
    status, out, _ = pool.kuota("history", "-o", "wide")
    row = next(line for line in out.splitlines() if line.startswith(key))
    assert status == conventions.OK
    assert row.split()[2] == str(want), row


@dataclass(frozen=True)
class BadInputCase:
    argv: tuple[str, ...]
    plugin: bool = False
    want_error: str = "error: "


BAD_INPUT = {
    "kubectl kuota create: a quota without a quantity": BadInputCase(
        ("create", "clusterqueue", "cq", "--dry-run", "--nominal-quota", "on:cpu"), True,
        "--nominal-quota"),
    "kubectl kuota create: a name the models refuse": BadInputCase(
        ("create", "localqueue", "lq", "-c", "Not_A_Name", "--dry-run"), True,
        "spec.clusterQueue"),
    "kuota get: a selector without a key": BadInputCase(("get", "wl", "-l", "=x")),
    "kuota get: -n and -A together": BadInputCase(("get", "wl", "-n", "a", "-A"),
                                                  want_error="not allowed with"),
    "kuota submit: requests that are no quantity": BadInputCase(
        ("submit", "-q", "default/lq-cq", "--requests", "cpu=lots", "--", "true")),
    "kuota queue: a stop flag on resume": BadInputCase(
        ("queue", "resume", "cq", "cq", "--keep-already-running")),
    "kuota cancel: a finished state": BadInputCase(("cancel", "--state", "Succeeded")),
}


@pytest.mark.parametrize("case", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_exits_2_in_both_tools(pool: Pool, case: BadInputCase) -> None:
    if case.plugin:
        pool.capsys.readouterr()
        status, err = kubectl.main(list(case.argv)), pool.capsys.readouterr().err
    else:
        try:
            status, _, err = pool.kuota(*case.argv)
        except SystemExit as exited:  # argparse's own refusals
            status, err = int(exited.code or 0), pool.capsys.readouterr().err
    assert status == conventions.BAD_INPUT, err
    assert case.want_error in err


# -- flags, states, stop, apply ------------------------------------------------------------------

def test_include_finished_is_dash_a_lower(pool: Pool) -> None:
    pool.ended("done", 0)
    assert "default/done" not in pool.kuota("get", "wl")[1]
    assert "default/done" in pool.kuota("get", "wl", "-a")[1]
    assert "default/done" not in pool.kuota("get", "wl", "-A")[1], "-A is all namespaces"
    status, out, err = pool.kuota("get", "wl", "--all")
    assert status == 0 and "default/done" in out and "deprecated" in err


def test_stop_holds_and_drains_by_default_in_both_tools(pool: Pool) -> None:
    assert pool.kuota("queue", "stop", "cq", "cq")[0] == conventions.OK
    stored = pool.store.objects.manifests("ClusterQueue")["cq"]["spec"]["stopPolicy"]
    plugin = kubectl.patch_for("clusterqueues", "stop")["spec"]["stopPolicy"]
    assert stored == plugin == conventions.DEFAULT_STOP_POLICY == "HoldAndDrain"
    pool.kuota("queue", "stop", "cq", "cq", "--keep-already-running")
    stored = pool.store.objects.manifests("ClusterQueue")["cq"]["spec"]["stopPolicy"]
    assert stored == kubectl.patch_for("clusterqueues", "stop", True)["spec"]["stopPolicy"]


def test_a_running_workload_has_one_state_name_in_the_cli_and_the_dashboard(
        pool: Pool) -> None:
    from kuota.dashboard.redis_source import RedisSource

    key = pool.ended("runs", None)
    [running] = RedisSource(pool.client.connection).overview().running
    row = next(line for line in pool.kuota("get", "wl")[1].splitlines()
               if line.startswith(key))
    assert running.key == key
    assert row.split()[2] == running.state == "Admitted"


def test_the_plugin_lists_the_same_state_names() -> None:
    reserved = {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"queueName": "lq"},
                "status": {"conditions": [{"type": "QuotaReserved", "status": "True"},
                                          {"type": "Admitted", "status": "True"}]}}
    finished = {**reserved, "status": {"conditions": [
        {"type": "Finished", "status": "True", "reason": "Failed"}]}}
    table = kubectl.rows("workloads", [reserved, finished])
    assert [r[4] for r in table[1:]] == ["Admitted", "Failed"]
    assert all(r[4] in conventions.STATES for r in table[1:])


def test_apply_says_created_configured_or_unchanged(pool: Pool, tmp_path: Path) -> None:
    changed = QUEUES.replace("nominalQuota: 4", "nominalQuota: 5")
    assert changed != QUEUES
    (tmp_path / "same.yaml").write_text(QUEUES)
    (tmp_path / "changed.yaml").write_text(changed)
    status, out, _ = pool.kuota("apply", "-f", str(tmp_path / "same.yaml"))
    assert (status, out.split()[1::2]) == (0, ["unchanged"] * 3)
    status, out, _ = pool.kuota("apply", "-f", str(tmp_path / "changed.yaml"))
    assert out.splitlines() == ["ResourceFlavor/default unchanged",
                                "ClusterQueue/cq configured",
                                "LocalQueue/default/lq-cq unchanged"]
    pool.store.objects.delete("LocalQueue", "default/lq-cq")
    status, out, _ = pool.kuota("apply", "-f", str(tmp_path / "changed.yaml"))
    assert out.splitlines()[1:] == ["ClusterQueue/cq unchanged", "LocalQueue/default/lq-cq created"]
