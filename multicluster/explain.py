"""Explaining a dispatch decision to people: a table for ``kuota describe``, a line for events.

:func:`render` prints the whole :class:`~multicluster.decision.Decision`:
the chosen member, a table of the feasible members best first with each
plugin's normalised score, weight and raw figure, and one line per refused
member with the filter that refused it and why::

    Workload ml/train-7: dispatched to eu-a100 (config fleet)
    Member   Total    Cost          LoadBalance  DataLocality
    eu-a100  316/400  100×1 (35.2)  16×1 (16)    100×2 (100)
    us-a100  120/400  70×1 (49.6)   50×1 (50)    0×2 (0)
    Filtered out:
      ap-a100   Health: member last seen 600s ago (staleAfter is 60s)
      us-t4     Hardware: no node has the labels of flavor a100 (...) needed by podSet worker

:func:`summary` gives one line for an admission-check message or an Event:
the choice, the runner-up, and how many members each filter refused (with
one reason when nothing fits, since that is what a user must act on).
"""

from __future__ import annotations

from collections import Counter

from multicluster.decision import ClusterResult, Decision


def render(decision: Decision) -> str:
    head = f"Workload {decision.workload}: "
    head += (f"dispatched to {decision.cluster}" if decision.cluster
             else "no member cluster can run it")
    if decision.config:
        head += f" (config {decision.config})"
    lines = [head]
    feasible = decision.feasible
    if feasible:
        plugins = [s.plugin for s in feasible[0].scores]
        rows = [["Member", "Total", *plugins]]
        for result in feasible:
            rows.append([result.cluster, f"{result.total}/{decision.max_total}",
                         *(f"{s.score}×{s.weight} ({_figure(s.raw)})" for s in result.scores)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                  for row in rows]
    filtered = decision.filtered
    if filtered:
        lines.append("Filtered out:")
        width = max(len(r.cluster) for r in filtered)
        lines += [f"  {r.cluster.ljust(width)}  {r.filtered_by}: {r.reason}" for r in filtered]
    return "\n".join(lines) + "\n"


def summary(decision: Decision) -> str:
    feasible, filtered = decision.feasible, decision.filtered
    counts = _counts(filtered)
    if decision.cluster is None:
        if not filtered:
            return "no member cluster is configured"
        example = filtered[0]
        return (f"no member cluster can run it ({counts}); e.g. {example.cluster}: "
                f"{example.filtered_by}: {example.reason}")
    chosen = feasible[0]
    text = f"dispatched to {chosen.cluster} (score {chosen.total}/{decision.max_total}"
    if len(feasible) > 1:
        text += f"; next {feasible[1].cluster} {feasible[1].total}"
    text += ")"
    if filtered:
        text += f"; filtered out {counts}"
    return text


def _counts(filtered: tuple[ClusterResult, ...]) -> str:
    counts = Counter(r.filtered_by for r in filtered)
    return ", ".join(f"{n} by {plugin}" for plugin, n in sorted(counts.items(),
                                                               key=lambda kv: (-kv[1], kv[0])))


def _figure(raw: float) -> str:
    return f"{raw:.4g}"
