"""``kuota simulate --html``: one self-contained HTML page, a timeline per ClusterQueue.

For each ClusterQueue of a :class:`~kuota.dashboard.trace.Trace`, an inline
SVG with one panel for its workloads — admitted (green) with pending (grey)
stacked on top, as bands over virtual time — and one panel per flavor and
resource: usage as an area (green within nominal, orange where it borrows),
the nominal quota as a dashed line, nominal plus the borrowing limit as a
purple dashed line, and every eviction as a red line across the panels (its
workload and reason on hover). The x axis is the same for every queue, so
queues can be compared down the page. A quota change is judged by running
the scenario twice and putting the two reports side by side. Below the queues, a
per-workload timeline (:mod:`kuota.dashboard.gantt`) names every workload: when it
waited, ran and was evicted, and why each one never admitted still waits.

The stylesheet is the dashboard's (:func:`kuota.dashboard.render.stylesheet`),
inlined: the file opens offline, from an e-mail or a CI artifact, with no
script and nothing fetched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kuota.dashboard import gantt
from kuota.dashboard.render import e, stylesheet
from kuota.dashboard.trace import QueueTrace, Quota, Sample, Trace
from quota.resources import format_amount

WIDTH = 1000
LEFT = 130  # room for the panel labels
RIGHT = 20
BAND = 70
CELL = 80
GAP = 18
AXIS = 24


def html(trace: Trace, *, title: str) -> str:
    end = max(trace.result.end, 1e-9)
    sections = "".join(queue_section(q, end) for q in trace.queues.values())
    counts = _summary(trace)
    legend = ('<div class="legend"><span><i class="admitted"></i>admitted</span>'
              '<span><i class="pending"></i>pending</span><span><i class="used"></i>used</span>'
              '<span><i class="borrowed"></i>borrowed</span>'
              '<span><i class="nominal"></i>nominal</span>'
              '<span><i class="limit"></i>nominal + borrowing limit</span>'
              '<span><i class="evicted"></i>eviction</span></div>')
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{e(title)} · kuota simulate</title><style>{stylesheet()}</style></head>'
            f'<body><header><span class="brand">kuota simulate</span>'
            f'<span class="muted">{e(title)}</span></header><main>'
            f'<h1>{e(title)}</h1><div class="summary">{counts}</div>{legend}'
            f'{sections or "<p class=muted>No ClusterQueues.</p>"}'
            f'{gantt.section(trace.result)}</main></body></html>')


def _summary(trace: Trace) -> str:
    workloads = trace.result.workloads.values()
    admitted = sum(1 for w in workloads if w.admissions)
    evicted = sum(len(w.evictions) for w in workloads)
    waiting = sum(1 for w in workloads if w.finished_at is None and not w.admissions)
    return (f'<div><b>{trace.result.end:g}s</b>virtual time</div>'
            f'<div><b>{len(trace.result.workloads)}</b>workloads</div>'
            f'<div><b>{admitted}</b>admitted</div><div><b>{evicted}</b>evictions</div>'
            f'<div><b>{waiting}</b><a href="#never-admitted">never admitted</a></div>'
            if waiting else f'<div><b>{waiting}</b>never admitted</div>')


def queue_section(queue: QueueTrace, end: float) -> str:
    height = BAND + len(queue.quotas) * (CELL + GAP) + AXIS + 8
    x = _scale(end)
    parts = [_band_panel(queue.samples, end, x, 0)]
    top = BAND + GAP
    for index, quota in enumerate(queue.quotas):
        parts.append(_cell_panel(queue.samples, index, quota, end, x, top))
        top += CELL + GAP
    for at, workload, reason in queue.evictions:
        px = x(at)
        parts.append(f'<g><title>{e(f"{at:g}s: {workload} evicted: {reason}")}</title>'
                     f'<line class="eviction" x1="{px}" x2="{px}" y1="0" y2="{top - GAP}"/>'
                     f'<path class="eviction-mark" d="M{px - 4},0 h8 l-4,7 z"/></g>')
    parts.append(_axis(end, x, top - GAP + 4))
    cohort = f' <span class="muted">cohort {e(queue.cohort)}</span>' if queue.cohort else ""
    return (f'<section class="queue" data-name="{e(queue.name)}"><h2>ClusterQueue '
            f'{e(queue.name)}{cohort}</h2><svg class="timeline" viewBox="0 0 {WIDTH} {height}" '
            f'role="img" aria-label="timeline of ClusterQueue {e(queue.name)}">'
            + "".join(parts) + "</svg></section>")


def _scale(end: float) -> Callable[[float], float]:
    span = WIDTH - LEFT - RIGHT
    return lambda at: round(LEFT + span * min(max(at, 0.0), end) / end, 2)


def step_path(points: Sequence[tuple[float, float]], end: float, x: Callable[[float], float],
              y: Callable[[float], float]) -> str:
    """A filled step area under ``points`` (time, value), held until ``end``."""
    if not points:
        return ""
    d = [f"M{x(points[0][0])},{y(0)}"]
    for at, value in points:
        d.append(f"H{x(at)}V{y(value)}")
    d.append(f"H{x(end)}V{y(0)}Z")
    return "".join(d)


def _band_panel(samples: Sequence[Sample], end: float, x: Callable[[float], float],
                top: float) -> str:
    most = max((s.pending + s.admitted for s in samples), default=0)
    peak = most or 1

    def y(value: float) -> float:
        return round(top + BAND - BAND * value / peak, 2)

    total = step_path([(s.at, s.pending + s.admitted) for s in samples], end, x, y)
    admitted = step_path([(s.at, s.admitted) for s in samples], end, x, y)
    return (f'<text class="label" x="0" y="{top + 14}">workloads</text>'
            f'<text x="0" y="{top + 30}">peak {most}</text>'
            f'<rect class="panel" x="{LEFT}" y="{top}" width="{WIDTH - LEFT - RIGHT}" '
            f'height="{BAND}"/><path class="area-pending" d="{total}"/>'
            f'<path class="area-admitted" d="{admitted}"/>')


def _cell_panel(samples: Sequence[Sample], index: int, quota: Quota, end: float,
                x: Callable[[float], float], top: float) -> str:
    used = [(s.at, s.usage[index][1]) for s in samples]
    ceiling = quota.nominal + (quota.borrowing_limit or 0)
    peak = max([ceiling, quota.nominal, *(v for _, v in used)]) or 1

    def y(value: float) -> float:
        return round(top + CELL - CELL * value / peak, 2)

    own = [(at, min(v, quota.nominal)) for at, v in used]
    lines = [f'<line class="line-nominal" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
             f'y1="{y(quota.nominal)}" y2="{y(quota.nominal)}"><title>nominal '
             f'{e(format_amount(quota.nominal, quota.resource))}</title></line>']
    if quota.borrowing_limit is not None:
        lines.append(f'<line class="line-limit" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
                     f'y1="{y(ceiling)}" y2="{y(ceiling)}"><title>nominal + borrowing limit '
                     f'{e(format_amount(ceiling, quota.resource))}</title></line>')
    most = max((v for _, v in used), default=0)
    # The label above the panel, over its whole width: a long flavor/resource is never cut.
    return (f'<text class="label" x="{LEFT}" y="{top - 5}">{e(quota.flavor)}/'
            f'{e(quota.resource)}</text><text x="0" y="{top + 14}">nominal '
            f'{e(format_amount(quota.nominal, quota.resource))}</text>'
            f'<text x="0" y="{top + 30}">peak {e(format_amount(most, quota.resource))}</text>'
            f'<rect class="panel" x="{LEFT}" y="{top}" width="{WIDTH - LEFT - RIGHT}" '
            f'height="{CELL}"/><path class="area-borrowed" d="{step_path(used, end, x, y)}"/>'
            f'<path class="area-used" d="{step_path(own, end, x, y)}"/>' + "".join(lines))


def ticks(end: float, count: int = 8) -> list[float]:
    """Round tick positions from 0 to ``end`` (1, 2 or 5 times a power of ten apart)."""
    if end <= 0:
        return [0.0]
    raw = end / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1, 2, 5, 10) if m * power >= raw), 10 * power)
    out, at = [], 0.0
    while at <= end + 1e-9:
        out.append(round(at, 10))
        at += step
    return out


def _axis(end: float, x: Callable[[float], float], top: float) -> str:
    marks = "".join(f'<line class="axis" x1="{x(t)}" x2="{x(t)}" y1="{top}" y2="{top + 4}"/>'
                    f'<text x="{x(t)}" y="{top + 16}" text-anchor="middle">{t:g}s</text>'
                    for t in ticks(end))
    return (f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{top}" y2="{top}"/>'
            + marks)
