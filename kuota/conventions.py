"""The conventions every command surface shares: ``kuota``, ``kubectl kuota``, the dashboard.

Issue 41 found each surface with its own: tables cut the REASON column in CI logs,
a cancelled job waited on exited 143 where the docs promised 1 while ``history``
showed ``-15``, ``-A`` meant "include finished" in one tool and "all namespaces"
in the other, ``stop`` drained in one and held in the other, and a running job
was "Running" in the CLI but "Admitted" on the dashboard. The rules live here, as
values and pure functions the commands use, so a surface cannot drift on its own;
docs/cli-conventions.md is their table and tests/unit/cli/test_cli_conventions.py
holds every command to it. Pure: no I/O library, imported by the lightest commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

# -- exit statuses ----------------------------------------------------------------------------

#: The command did what was asked (for ``submit --wait``: the workload succeeded).
OK: Final = 0
#: The operation or the job failed: not found, refused, unreachable, cancelled, timed out.
FAILED: Final = 1
#: Invalid input: a flag, a value or a file the command refuses before doing anything.
BAD_INPUT: Final = 2
#: Above this, the status names a signal: 128 + N, as a shell reports a process it killed.
SIGNALLED: Final = 128


def shell_status(code: int) -> int:
    """A pod's exit code as a shell reports it: a pod killed by signal N (recorded as -N,
    as Python's ``returncode``) is 128+N (SIGTERM 143, SIGKILL 137); at most 255."""
    return min(SIGNALLED - code if code < 0 else code, 255)


def wait_status(outcome: str, pod_codes: Sequence[int | None]) -> int:
    """What waiting on a workload exits with (``kuota submit --wait``): 0 when it
    succeeded; when it failed, its first failed pod's exit code as :func:`shell_status`
    gives it (the number ``kuota history`` shows); 1 otherwise — cancelled, rejected or
    failed with no pod exit to report. A cancelled workload's pods end by kuota's own
    SIGTERM: that is the operation failing (1, as Kueue counts an evicted or deactivated
    job as not succeeded), not a signal the job got on its own."""
    if outcome == "Succeeded":
        return OK
    if outcome == "Failed":
        for code in pod_codes:
            if code:
                return shell_status(code)
    return FAILED


#: The packages of the ``kubernetes`` extra (``pip install '.[kubernetes]'``), which the
#: base install (``make demo``, a Redis pool) leaves out.
KUBERNETES_EXTRA: Final = frozenset({"kopf"})


def missing_extra(exc: ImportError, command: str) -> str | None:
    """The message for a command that needs the ``kubernetes`` extra when it is not
    installed (exit :data:`FAILED`); None when ``exc`` is about another module."""
    if (exc.name or "").split(".")[0] not in KUBERNETES_EXTRA:
        return None
    return (f"error: {command} needs kuota's Kubernetes half ({exc.name} is not installed): "
            "install kuota with its kubernetes extra, pip install '.[kubernetes]' in the "
            "repository (docs/install.md)")


# -- workload states ----------------------------------------------------------------------------

#: The STATE in a pending list (``kuota pending``, ``kubectl kuota pending``) of a workload in
#: line to run, and of one set aside: it can never fit as configured, so it blocks no one
#: (Kueue's active heap and inadmissible list).
ACTIVE, INADMISSIBLE = "Active", "Inadmissible (blocks no one)"

#: States of a workload that has not finished, in lifecycle order: Kueue's names
#: (its Workload conditions), the same in ``kuota get``, ``kubectl kuota list`` and the
#: dashboard. An admitted gang whose pods wait for a node is Admitted, its REASON says so.
LIVE_STATES: Final = ("Pending", "QuotaReserved", "Admitted", "Evicting", "Inactive", "Invalid")
#: What a finished workload shows instead of "Finished": how it ended.
OUTCOMES: Final = ("Succeeded", "Failed", "Cancelled", "Rejected")
#: Every state a listing shows; ``Finished`` stands for any of :data:`OUTCOMES` in filters.
STATES: Final = (*LIVE_STATES, "Finished", *OUTCOMES)


def state_of_conditions(conditions: Iterable[Mapping[str, Any]]) -> str:
    """A Kubernetes Workload's state in the shared names, from its status conditions: the
    Finished condition's reason when it is an outcome, Evicting while an evicted workload
    still holds quota, else Admitted, QuotaReserved or Pending."""
    true = {str(c.get("type")): c for c in conditions if c.get("status") == "True"}
    if "Finished" in true:
        reason = str(true["Finished"].get("reason") or "")
        return reason if reason in OUTCOMES else "Finished"
    if "Evicted" in true and "QuotaReserved" in true:
        return "Evicting"
    for state in ("Admitted", "QuotaReserved"):
        if state in true:
            return state
    return "Pending"


def state_matches(shown: str, wanted: str) -> bool:
    """A ``--state``/``--status`` filter (any case): a state's own name, or Finished for
    every outcome."""
    wanted = wanted.lower()
    return shown.lower() == wanted or (wanted == "finished" and shown in OUTCOMES)


# -- flags ------------------------------------------------------------------------------------

#: ``-A`` means this and only this, in every command that has it (as kubectl).
ALL_NAMESPACES: Final = "--all-namespaces"
#: Listing finished workloads too (``kuota get``): ``-a``, never ``-A``.
INCLUDE_FINISHED: Final = "--include-finished"
#: ``stop`` on a queue without flags: Kueue's (``kueuectl stop``) HoldAndDrain.
DEFAULT_STOP_POLICY: Final = "HoldAndDrain"
#: ``stop --keep-already-running``: admit nothing new, let admitted workloads run on.
KEEP_RUNNING_STOP_POLICY: Final = "Hold"


def stop_policy(keep_already_running: bool) -> str:
    return KEEP_RUNNING_STOP_POLICY if keep_already_running else DEFAULT_STOP_POLICY


# -- tables and help ----------------------------------------------------------------------------

#: Columns never cut, even on a terminal narrower than the row (kubectl cuts nothing):
#: names and labels are copied into the next command, a reason is what a user greps for.
NEVER_CUT: Final = frozenset({"name", "reason", "labels"})

def plain(text: str) -> str:
    """Help text without reStructuredText markup: ````x```` and ``:mod:`x```` → ``x``, a
    literal block's ``::`` → ``:`` (single backquotes around a command stay: they read
    as quoting in a terminal)."""
    text = re.sub(r"(?::[a-z]+:)`([^`]+)`|``([^`]+)``", lambda m: m.group(1) or m.group(2),
                  text)
    return re.sub(r"(\S)::$", r"\1:", text, flags=re.MULTILINE)
