"""HTML for the dashboard's pages and the simulator's report, from model values.

Pure functions from :mod:`kuota.dashboard.model` values to strings; every
text that came from a store is escaped here, once. A page is a layout (header,
the live-status line, the stylesheet and script links) around a ``<main>``
whose inner HTML is the *fragment*: the browser script swaps only that part in
place when the data changes, so a page never reloads.

Quota is drawn as bars whose segment widths are percentages of the most the
node could hold (nominal plus its borrowing limit): used within nominal,
borrowed beyond it, the part of its unused nominal lent to others, and a mark
at nominal. The simulator's report (:mod:`kuota.dashboard.report`) uses the
same stylesheet and colours.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from functools import cache
from html import escape
from importlib import resources
from urllib.parse import quote

from kuota.dashboard.model import (
    Cell,
    Counts,
    HistoryRow,
    InactiveRow,
    LocalQueueRow,
    Member,
    Overview,
    PendingRow,
    RunningRow,
    TreeNode,
    WorkloadPage,
)

#: Rows of pending or running workloads the overview shows (the rest: per ClusterQueue).
OVERVIEW_ROWS = 100
#: Rows per page of a ClusterQueue's pending list.
PAGE_ROWS = 500


@cache
def stylesheet() -> str:
    return resources.files("kuota.dashboard").joinpath("static/dashboard.css").read_text()


@cache
def script() -> str:
    return resources.files("kuota.dashboard").joinpath("static/dashboard.js").read_text()


def e(value: object) -> str:
    return escape(str(value), quote=True)


def when(at: float | None) -> str:
    if at is None:
        return "-"
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


# -- links ------------------------------------------------------------------------------------

def cq_link(name: str) -> str:
    return f'<a href="/clusterqueues/{quote(name, safe="")}">{e(name)}</a>'


def lq_link(key: str) -> str:
    namespace, _, name = key.partition("/")
    return (f'<a href="/localqueues/{quote(namespace, safe="")}/{quote(name, safe="")}">'
            f'{e(key)}</a>')


def wl_link(key: str) -> str:
    namespace, _, name = key.partition("/")
    return (f'<a href="/workloads/{quote(namespace, safe="")}/{quote(name, safe="")}">'
            f'{e(key)}</a>')


# -- bars -------------------------------------------------------------------------------------

def bar(cell: Cell) -> str:
    """One flavor/resource cell as a bar; widths and offsets are percentages of its scale."""
    own = min(cell.used, cell.nominal)
    lent = min(cell.lent, max(0, cell.nominal - own))
    segments = [("used", 0, own), ("lent", own, lent), ("borrowed", cell.nominal, cell.borrowed)]
    parts = [f'<span class="seg {cls}" style="left:{cell.percent(left)}%;'
             f'width:{cell.percent(width)}%"></span>'
             for cls, left, width in segments if width > 0]
    parts.append(f'<span class="mark" style="left:{cell.percent(cell.nominal)}%" '
                 f'title="nominal {e(cell.text(cell.nominal))}"></span>')
    return (f'<div class="bar" data-cell="{e(cell.flavor)}/{e(cell.resource)}" '
            f'data-used="{cell.percent(cell.used)}" title="{e(cell_text(cell))}">'
            + "".join(parts) + "</div>")


def cell_text(cell: Cell) -> str:
    text = f"{cell.text(cell.used)} / {cell.text(cell.nominal)}"
    extra = [f"borrowed {cell.text(cell.borrowed)}" if cell.borrowed else "",
             f"lent {cell.text(cell.lent)}" if cell.lent else "",
             f"limit +{cell.text(cell.borrowing_limit)}" if cell.borrowing_limit is not None
             else ""]
    return text + "".join(f", {x}" for x in extra if x)


def cells(items: Sequence[Cell]) -> str:
    if not items:
        return '<span class="muted">no quota</span>'
    rows = "".join(f'<span>{e(c.flavor)}/{e(c.resource)}</span>{bar(c)}'
                   f'<span class="nums">{e(cell_text(c))}</span>' for c in items)
    return f'<div class="cells">{rows}</div>'


#: The state of a pending workload set aside: it can never fit as configured.
INADMISSIBLE = "Inadmissible (blocks no one)"

LEGEND = ('<div class="legend"><span><i class="used"></i>used</span>'
          '<span><i class="borrowed"></i>borrowed</span><span><i class="lent"></i>lent</span>'
          '<span><i class="nominal"></i>nominal</span></div>')


# -- layout -----------------------------------------------------------------------------------

def layout(title: str, fragment: str, *, version: str, source: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)} · kuota</title>'
        '<link rel="stylesheet" href="/static/dashboard.css"></head><body>'
        '<header><span class="brand">kuota</span><nav><a href="/">Overview</a>'
        '<a href="/#pending">Pending</a><a href="/#running">Running</a>'
        '<a href="/#inactive">Deactivated</a><a href="/#members">Members</a></nav>'
        f'<span class="muted">{e(source)}</span>'
        '<span class="live" role="status">connecting…</span></header>'
        f'<main data-version="{e(version)}">{fragment}</main>'
        '<script src="/static/dashboard.js"></script></body></html>')


def counts_cells(counts: Counts) -> str:
    return (f'<td class="num pending">{counts.pending}</td>'
            f'<td class="num reserving">{counts.reserving}</td>'
            f'<td class="num admitted">{counts.admitted}</td>')


COUNT_HEADS = '<th class="num">pending</th><th class="num">reserving</th>' \
              '<th class="num">admitted</th>'


def tree_rows(nodes: Iterable[TreeNode], depth: int = 0) -> str:
    out = []
    for node in nodes:
        pad = f' style="padding-left:{depth * 1.4}em"'
        if node.kind == "Cohort":
            name = f'<td class="name"{pad}>{e(node.name)} <span class="muted">cohort</span></td>'
            cls = "cohort"
        else:
            off = "" if node.active else f' <span class="inactive">{e(node.message)}</span>'
            name = f'<td class="name"{pad}>{cq_link(node.name)}{off}</td>'
            cls = "clusterqueue"
        out.append(f'<tr class="{cls}" data-name="{e(node.name)}">{name}'
                   f'{counts_cells(node.counts)}<td>{cells(node.cells)}</td></tr>')
        out.append(tree_rows(node.children, depth + 1))
    return "".join(out)


def tree_table(nodes: Sequence[TreeNode]) -> str:
    if not nodes:
        return '<p class="muted">No ClusterQueues.</p>'
    return (f'{LEGEND}<table class="tree"><thead><tr><th>Cohort / ClusterQueue</th>'
            f'{COUNT_HEADS}<th>quota per flavor/resource (used / nominal)</th></tr></thead>'
            f'<tbody>{tree_rows(nodes)}</tbody></table>')


def table(cls: str, heads: str, body: str, *, empty: str, note: str = "") -> str:
    """A table of rows (``body``), or one line saying there are none."""
    if not body:
        return f'<p class="muted">{e(empty)}</p>'
    return (f'<table class="{cls}"><thead><tr>{heads}</tr></thead><tbody>{body}</tbody>'
            f'</table>{note}')


def shown_note(shown: int, total: int, more: str = "") -> str:
    return f'<p class="muted">{shown} of {total} shown. {more}</p>' if total > shown else ""


def local_queue_table(rows: Sequence[LocalQueueRow]) -> str:
    body = "".join(f'<tr data-name="{e(r.key)}"><td>{lq_link(r.key)}</td>'
                   f'<td>{cq_link(r.cluster_queue)}</td>{counts_cells(r.counts)}</tr>'
                   for r in rows)
    return table("localqueues", f"<th>LocalQueue</th><th>ClusterQueue</th>{COUNT_HEADS}",
                 body, empty="No LocalQueues.")


def pending_table(rows: Sequence[PendingRow], *, total: int | None = None,
                  more: str = "") -> str:
    body = "".join(
        f'<tr data-key="{e(r.key)}"><td class="num position">{r.position}</td>'
        f'<td>{wl_link(r.key)}</td><td>{cq_link(r.cluster_queue)}</td>'
        f'<td>{lq_link(r.local_queue)} <span class="muted">#{r.local_position}</span></td>'
        f'<td class="num">{r.priority}</td><td class="state">'
        f'{INADMISSIBLE if r.inadmissible else "Active"}</td>'
        f'<td class="reason">{e(r.waits_because)}</td></tr>'
        for r in rows)
    return table("pending", '<th class="num">position</th><th>workload</th><th>ClusterQueue'
                 '</th><th>LocalQueue #</th><th class="num">priority</th><th>state</th>'
                 '<th>why it waits</th>',
                 body, empty="Nothing is waiting.",
                 note=shown_note(len(rows), len(rows) if total is None else total, more))


def running_table(rows: Sequence[RunningRow], *, total: int | None = None) -> str:
    body = "".join(
        f'<tr data-key="{e(r.key)}"><td>{wl_link(r.key)}</td><td>{cq_link(r.cluster_queue)}</td>'
        f'<td>{e(r.state)}</td><td>{e(r.flavors)}</td><td>{e(r.cluster or "-")}</td>'
        f'<td>{e(", ".join(r.nodes) or "-")}</td><td>{when(r.since)}</td></tr>'
        for r in rows)
    return table("running", "<th>workload</th><th>ClusterQueue</th><th>state</th>"
                 "<th>flavors</th><th>member cluster</th><th>nodes</th><th>since (UTC)</th>",
                 body, empty="Nothing holds quota.",
                 note=shown_note(len(rows), len(rows) if total is None else total))


def inactive_table(rows: Sequence[InactiveRow]) -> str:
    body = "".join(
        f'<tr data-key="{e(r.key)}"><td>{wl_link(r.key)}</td>'
        f'<td>{cq_link(r.cluster_queue) if r.cluster_queue else "-"}</td>'
        f'<td>{lq_link(r.local_queue)}</td><td class="reason">{e(r.reason)}</td>'
        f'<td>{e(r.message)}</td></tr>' for r in rows)
    return table("inactive", "<th>workload</th><th>ClusterQueue</th><th>LocalQueue</th>"
                 "<th>reason</th><th>message</th>", body,
                 empty="No workload is deactivated.")


def members_table(members: Sequence[Member]) -> str:
    body = "".join(
        f'<tr data-name="{e(m.name)}"><td>{e(m.name)}</td>'
        f'<td class="{"" if m.healthy else "problem"}">{e(m.health)}</td>'
        f'<td class="num">{"-" if m.nodes is None else f"{m.nodes_ready}/{m.nodes}"}</td>'
        f'<td>{e(" ".join(f"{r}={free}/{total}" for r, free, total in m.resources) or "-")}'
        f'</td></tr>' for m in members)
    return table("members", '<th>member</th><th>health</th><th class="num">nodes ready</th>'
                 "<th>free / total</th>", body, empty="No member clusters or worker pools.")


# -- pages ------------------------------------------------------------------------------------

def overview_page(ov: Overview) -> str:
    totals = ov.totals()
    queues = sum(1 for _ in _queues(ov.roots))
    pending = ov.pending_in_order()
    problems = "".join(f'<p class="problem">{e(p)}</p>' for p in ov.problems)
    return (
        '<h1>Overview</h1><div class="summary">'
        f'<div><b id="total-queues">{queues}</b>ClusterQueues</div>'
        f'<div><b id="total-pending">{totals.pending}</b>pending</div>'
        f'<div><b id="total-reserving">{totals.reserving}</b>reserving</div>'
        f'<div><b id="total-admitted">{totals.admitted}</b>admitted</div></div>{problems}'
        f'<h2 id="tree">Cohorts and ClusterQueues</h2>{tree_table(ov.roots)}'
        f'<h2 id="localqueues">LocalQueues</h2>{local_queue_table(ov.local_queues)}'
        f'<h2 id="pending">Pending workloads, in admission order</h2>'
        + pending_table(pending[:OVERVIEW_ROWS], total=len(pending),
                        more="Each ClusterQueue's page lists all of its own.")
        + '<h2 id="running">Holding quota</h2>'
        + running_table(ov.running[:OVERVIEW_ROWS], total=len(ov.running))
        + '<h2 id="inactive">Deactivated</h2>' + inactive_table(ov.inactive)
        + f'<h2 id="members">Member clusters and pools</h2>{members_table(ov.members)}')


def _queues(nodes: Iterable[TreeNode]) -> Iterable[TreeNode]:
    for node in nodes:
        if node.kind == "ClusterQueue":
            yield node
        yield from _queues(node.children)


def cluster_queue_page(ov: Overview, name: str, page: int = 0) -> str | None:
    node = ov.cluster_queue(name)
    if node is None:
        return None
    pending = ov.pending.get(name, ())
    pages = max(1, -(-len(pending) // PAGE_ROWS))
    page = min(max(page, 0), pages - 1)
    shown = pending[page * PAGE_ROWS:(page + 1) * PAGE_ROWS]
    pager = ""
    if pages > 1:
        base = f"/clusterqueues/{quote(name, safe='')}"
        pager = '<p class="pager">' + "".join(
            f"<span>{i + 1}</span>" if i == page else f'<a href="{base}?page={i}">{i + 1}</a>'
            for i in range(pages)) + "</p>"
    state = "active" if node.active else node.message
    lqs = [r for r in ov.local_queues if r.cluster_queue == name]
    return (f'<h1>ClusterQueue {e(name)}</h1><div class="summary">'
            f'<div><b id="cq-pending">{node.counts.pending}</b>pending</div>'
            f'<div><b id="cq-reserving">{node.counts.reserving}</b>reserving</div>'
            f'<div><b id="cq-admitted">{node.counts.admitted}</b>admitted</div>'
            f'<div><b>{e(state)}</b>state</div></div>'
            f'{LEGEND}{cells(node.cells)}'
            f'<h2>LocalQueues</h2>{local_queue_table(lqs)}'
            f'<h2 id="pending">Pending, in admission order</h2>{pager}'
            + pending_table(shown, total=len(shown))
            + '<h2 id="running">Holding quota</h2>'
            + running_table([r for r in ov.running if r.cluster_queue == name])
            + '<h2 id="inactive">Deactivated</h2>'
            + inactive_table([r for r in ov.inactive if r.cluster_queue == name]))


def local_queue_page(ov: Overview, key: str) -> str | None:
    row = next((r for r in ov.local_queues if r.key == key), None)
    if row is None:
        return None
    pending = [p for p in ov.pending.get(row.cluster_queue, ()) if p.local_queue == key]
    return (f'<h1>LocalQueue {e(key)}</h1><p>Feeds ClusterQueue {cq_link(row.cluster_queue)}.'
            f'</p><table><thead><tr>{COUNT_HEADS}</tr></thead><tbody><tr>'
            f'{counts_cells(row.counts)}</tr></tbody></table>'
            f'<h2 id="pending">Pending, in admission order</h2>{pending_table(pending)}'
            f'<h2 id="running">Holding quota</h2>'
            + running_table([r for r in ov.running if r.local_queue == key])
            + '<h2 id="inactive">Deactivated</h2>'
            + inactive_table([r for r in ov.inactive if r.local_queue == key]))


def workload_page(wp: WorkloadPage) -> str:
    view = wp.facts.view
    facts = [("State", view.state), ("Reason", view.reason or "-"),
             ("Message", view.message or "-"), ("LocalQueue", view.queue or "-"),
             ("ClusterQueue", view.cluster_queue or "-"),
             ("Member cluster", view.cluster or "-"), *view.details]
    if not any(label == "Nodes" for label, _ in view.details):
        facts.append(("Nodes", ", ".join(wp.facts.nodes) or "-"))
    if wp.position is not None:
        facts.insert(1, ("Position", f"{wp.position.position} in ClusterQueue "
                                     f"{wp.position.cluster_queue}, "
                                     f"{wp.position.local_position} in its LocalQueue"
                         + ("; set aside as inadmissible: it blocks no one"
                            if wp.position.inadmissible else "")))
    dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts)
    if wp.logs_url is not None:
        dl += f'<dt>Logs</dt><dd><a class="logs" href="{e(wp.logs_url)}">pods\' output</a></dd>'

    conditions = ""
    if wp.conditions:
        conditions = "<h2>Conditions</h2>" + table(
            "conditions", "<th>type</th><th>status</th><th>reason</th><th>message</th>",
            "".join(f"<tr><td>{e(t)}</td><td>{e(s)}</td><td>{e(r)}</td><td>{e(m)}</td></tr>"
                    for t, s, r, m in wp.conditions), empty="")
    return (f'<h1>Workload {e(view.key)}</h1><dl class="facts">{dl}</dl>'
            f'<h2>Why (as <code>kuota why</code>)</h2><pre class="why">{e(wp.why)}</pre>'
            f'{conditions}<h2>History</h2>{history_table(wp.history)}')


def history_table(rows: Sequence[HistoryRow]) -> str:
    body = "".join(f'<tr><td>{when(r.at)}</td><td class="event">{e(r.event)}</td>'
                   f'<td>{e(r.detail)}</td></tr>' for r in rows)
    return table("history", "<th>when (UTC)</th><th>event</th><th>detail</th>", body,
                 empty="No history recorded.")


def not_found(what: str) -> str:
    return f'<h1>Not found</h1><p>{e(what)}</p><p><a href="/">Back to the overview</a></p>'
