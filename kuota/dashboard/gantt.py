"""The simulator report's per-workload timeline: a Gantt chart that names every workload.

One row per workload, from its arrival to the end of the run: grey while it
waits, green while it holds quota, a red mark at each eviction (its reason on
hover), a dashed outline while it is deactivated. Workloads never admitted are
named again below the chart with why they wait (the pending reason and message the
engine left them) — "3 never admitted" is no longer a bare count. Names and
reasons are printed whole, in table cells that wrap; nothing is cut.

:func:`rows` is pure (a :class:`~kuota.simulator.SimulationResult` in, values
out); :func:`section` renders them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kuota.dashboard.render import e
from kuota.simulator import SimulationResult, WorkloadOutcome

#: Rows drawn; the rest are counted (a benchmark's 20,000 workloads make no chart).
MAX_ROWS = 400
#: Never-admitted workloads named below the chart.
MAX_NAMED = 2000
#: The drawing's width in SVG units (the row's SVG stretches to its cell).
WIDTH = 1000.0


@dataclass(frozen=True)
class Bar:
    start: float
    end: float
    kind: str  # wait | run | inactive
    title: str


@dataclass(frozen=True)
class Row:
    key: str
    cluster_queue: str
    arrival: float
    bars: tuple[Bar, ...]
    #: (time, reason) of each eviction.
    evictions: tuple[tuple[float, str], ...]
    #: What became of it: "finished at 12s", "running at the end", or why it waits.
    outcome: str
    admitted: bool


def rows(result: SimulationResult) -> list[Row]:
    """Every workload's row, by arrival then name."""
    deactivated: dict[str, list[tuple[float, str]]] = {}
    queues: dict[str, str] = {}
    for event in result.timeline:
        if event.event == "Deactivated":
            deactivated.setdefault(event.workload, []).append((event.at, event.detail))
        if event.cluster_queue:
            queues[event.workload] = event.cluster_queue
        elif event.event == "Arrived":  # (its LocalQueue, until a ClusterQueue admits it)
            queues.setdefault(event.workload,
                              event.detail.replace("queue ", "LocalQueue ", 1))
    out = []
    for key, outcome in result.workloads.items():
        marks: list[tuple[float, int, str, str]] = []  # (at, order, kind, detail)
        marks += [(float(a["at"]), 1, "admitted", "") for a in outcome.admissions]
        marks += [(float(v["at"]), 0, "evicted", f"{v['reason']} {v.get('detail', '')}".strip())
                  for v in outcome.evictions]
        marks += [(at, 2, "deactivated", why) for at, why in deactivated.get(key, [])]
        if outcome.finished_at is not None:
            marks.append((outcome.finished_at, 3, "finished", ""))
        bars, evictions, state, since = [], [], "wait", outcome.arrival
        for at, _, kind, detail in sorted(marks):
            if kind == "evicted":
                evictions.append((at, detail))
            next_state = {"admitted": "run", "evicted": "wait", "deactivated": "inactive",
                          "finished": "done"}[kind]
            if at > since and state != "done":
                bars.append(Bar(since, at, state, _title(key, state, since, at)))
            state, since = next_state, at
        if state != "done" and result.end > since:
            bars.append(Bar(since, result.end, state, _title(key, state, since, result.end)))
        out.append(Row(key, queues.get(key, ""), outcome.arrival, tuple(bars),
                       tuple(evictions), _outcome(outcome, state), bool(outcome.admissions)))
    out.sort(key=lambda r: (r.arrival, r.key))
    return out


def _title(key: str, state: str, start: float, end: float) -> str:
    doing = {"wait": "waits", "run": "holds quota", "inactive": "deactivated"}[state]
    return f"{key} {doing} {start:g}s–{end:g}s ({end - start:g}s)"


def _outcome(outcome: WorkloadOutcome, state: str) -> str:
    if outcome.finished_at is not None:
        return f"finished at {outcome.finished_at:g}s"
    if state == "run":
        return "holds quota at the end"
    reason = outcome.pending_reason or "Pending"
    waited = "never admitted" if not outcome.admissions else "waiting"
    return f"{waited}: {reason}" + (f": {outcome.pending_message}"
                                    if outcome.pending_message else "")


def section(result: SimulationResult) -> str:
    """The chart and the never-admitted list, as HTML."""
    every = rows(result)
    end = max(result.end, 1e-9)

    def x(at: float) -> float:
        return round(WIDTH * min(max(at, 0.0), end) / end, 2)

    shown = every[:MAX_ROWS]
    body = "".join(
        f'<tr data-key="{e(r.key)}"><td class="name">{e(r.key)}</td>'
        f'<td class="name">{e(r.cluster_queue or "-")}</td><td class="bars">{_svg(r, x)}</td>'
        f'<td class="outcome{"" if r.admitted else " problem"}">{e(_short(r))}</td></tr>'
        for r in shown)
    more = (f'<p class="muted">{len(every) - len(shown)} more workloads are not drawn.</p>'
            if len(every) > len(shown) else "")
    legend = ('<div class="legend"><span><i class="pending"></i>waits</span>'
              '<span><i class="admitted"></i>holds quota</span>'
              '<span><i class="evicted"></i>eviction</span></div>')
    chart = (f'<h2 id="workloads">Workloads</h2>{legend}<table class="gantt"><thead><tr>'
             '<th>workload</th><th>queue</th><th>timeline (0 to '
             f'{result.end:g}s)</th><th>outcome</th></tr></thead><tbody>{body}</tbody></table>'
             + more)
    return chart + _never_admitted([r for r in every if not r.admitted])


def _short(row: Row) -> str:
    """The outcome cell: a never-admitted workload's reason, its message in the list below."""
    if row.admitted or not row.outcome.startswith("never admitted: "):
        return row.outcome
    return row.outcome.split(":", 2)[1].strip().join(("never admitted: ", " (see below)"))


def _svg(row: Row, x: Callable[[float], float]) -> str:
    parts = [f'<rect class="{b.kind}" x="{x(b.start)}" y="2" '
             f'width="{max(x(b.end) - x(b.start), 0.5)}" height="10"><title>{e(b.title)}</title>'
             '</rect>' for b in row.bars]
    parts += [f'<rect class="evicted" x="{max(x(at) - 1, 0)}" y="0" width="2" height="14">'
              f'<title>{e(f"{at:g}s: {row.key} evicted: {reason}")}</title></rect>'
              for at, reason in row.evictions]
    return (f'<svg class="gantt" viewBox="0 0 {WIDTH:g} 14" preserveAspectRatio="none" '
            f'role="img" aria-label="timeline of {e(row.key)}">' + "".join(parts) + "</svg>")


def _never_admitted(never: Sequence[Row]) -> str:
    if not never:
        return ""
    named = never[:MAX_NAMED]
    body = "".join(f'<tr data-key="{e(r.key)}"><td class="name">{e(r.key)}</td>'
                   f'<td class="reason">{e(r.outcome.removeprefix("never admitted: "))}</td>'
                   '</tr>' for r in named)
    more = (f'<p class="muted">and {len(never) - len(named)} more.</p>'
            if len(never) > len(named) else "")
    return (f'<h2 id="never-admitted">Never admitted ({len(never)})</h2><table '
            f'class="never-admitted"><thead><tr><th>workload</th><th>why it waits</th></tr>'
            f'</thead><tbody>{body}</tbody></table>{more}')
