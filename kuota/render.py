"""Terminal output with rich: the simulator's timeline and outcome tables."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kuota.simulator import SimulationResult

_STYLE = {"Arrived": "dim", "QuotaReserved": "yellow", "Admitted": "green", "Finished": "cyan",
          "Evicted": "red", "Deactivated": "red", "Requeued": "dim"}


def make_console() -> Console:
    """A console that is wide enough for tables even when output is not a terminal."""
    out = Console()
    return out if out.is_terminal else Console(width=120)


def timeline(result: SimulationResult, out: Console | None = None, title: str = "") -> None:
    console = out or make_console()
    table = Table(title=title or "Timeline", show_lines=False)
    for column, justify in (("time", "right"), ("event", "left"), ("workload", "left"),
                            ("cluster queue", "left"), ("detail", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for ev in result.timeline:
        style = _STYLE.get(ev.event, "")
        table.add_row(f"{ev.at:g}s", f"[{style}]{ev.event}[/]" if style else ev.event,
                      ev.workload, ev.cluster_queue, ev.detail)
    console.print(table)
    waiting = [(k, o) for k, o in sorted(result.workloads.items()) if o.pending_reason]
    if waiting:
        summary = Table(title="Never admitted", show_lines=False)
        summary.add_column("workload")
        summary.add_column("reason", style="yellow")
        summary.add_column("message")
        for key, outcome in waiting:
            summary.add_row(key, outcome.pending_reason or "", outcome.pending_message or "")
        console.print(summary)
    console.print(f"end of simulation: {result.end:g}s")
