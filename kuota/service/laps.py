"""Where a leader step's time goes, stage by stage.

A leader step is a fixed sequence of stages: wait for and read the event stream, follow
it, run the scheduling cycles, persist their decisions, place the admitted gangs, and a
few periodic chores. When steps grow long (a burst of submissions, a slow host, a
backlog of gangs waiting for nodes) the step's duration alone does not say which stage
to look at. :class:`StepLaps` times each stage with one clock read at its end, so the
stages of a step add up to the step:

* ``last`` holds the stages of the latest step (the ``slow step`` warning prints them);
* ``total`` sums them since the leader started (the scheduler's metrics export it as
  ``kuota_scheduler_step_stage_seconds_total``: its rate is the share of the scheduler's
  time each stage takes).

The ``read`` stage includes waiting: when there is nothing to do, a step blocks on the
stream for new entries (at most ``Timing.poll``) and sleeps out the batch interval. That
time is idle, not work; it is kept apart under ``wait`` where the leader can tell
(the batch sleep), and inside ``read`` where it cannot (a blocking read).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

#: Stages shorter than this are left out of :meth:`StepLaps.line`.
LINE_LEAST: Final = 0.005


class StepLaps:
    """Durations of the stages of a leader step (module doc)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        #: Stage -> seconds, the latest step (the current one while it runs).
        self.last: dict[str, float] = {}
        #: Stage -> seconds, every step since this leader started.
        self.total: dict[str, float] = {}
        self._clock = clock
        self._at = 0.0
        self._running = False

    def start(self) -> None:
        """A step begins: its stages are timed from now."""
        self.last = {}
        self._at = self._clock()
        self._running = True

    def end(self, stage: str) -> None:
        """The step's last ``stage`` ended now, and with it the step."""
        self.lap(stage)
        self._running = False

    def lap(self, stage: str) -> None:
        """``stage`` ended now: the time since the previous lap (or the start) is its.
        Outside a step (work a leader does as it starts, say) nothing is timed."""
        if not self._running:
            return
        now = self._clock()
        seconds = now - self._at
        self._at = now
        self.last[stage] = self.last.get(stage, 0.0) + seconds
        self.total[stage] = self.total.get(stage, 0.0) + seconds

    def line(self) -> str:
        """The latest step's stages, longest first (``follow 0.61 s, cycles 0.05 s``)."""
        stages = sorted(self.last.items(), key=lambda item: -item[1])
        return ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in stages
                         if seconds >= LINE_LEAST) or "every stage under 5 ms"
