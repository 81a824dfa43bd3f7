"""How the operator paces repeats of work that failed for a reason that may pass.

Three places repeat work after a transient failure of the API server — the
client repeats a request (:mod:`kuota.operator.client`), the writer queues
a sync again once the client gave up (:mod:`kuota.operator.writer`), an
informer starts its watch again (:mod:`kuota.operator.informer`) — and all
pace themselves the same way:

* **exponential**: the pause doubles with each failure in a row, so a server
  that stays down is asked less and less often;
* **capped**: never longer than a ceiling, so work resumes soon after the
  server does;
* **jittered**: multiplied by a random factor in [½, 1], so requests that
  failed together (every write queued during a 503 burst, both replicas'
  informers) come back spread out instead of as a new burst; the lower half
  is cut off so the pause still grows;
* **never shorter than ``Retry-After``**: when the server says how long to
  wait (API Priority and Fairness does with its 429s), it is believed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


def backoff(failures: int, *, base: float, cap: float, rng: random.Random,
            retry_after: float | None = None) -> float:
    """The pause after ``failures`` failures in a row (1: the first): ``base`` doubled for
    each further one, capped at ``cap``, jittered, at least ``retry_after``."""
    doubled: float = base * 2.0 ** (failures - 1)
    return max(min(cap, doubled) * rng.uniform(0.5, 1.0), retry_after or 0.0)


@dataclass(frozen=True)
class RetryPolicy:
    """How long one API request keeps trying through transient failures."""

    #: Attempts at most, the first included (1: never repeat).
    attempts: int = 8
    #: The pause before the second attempt; doubled for each further one.
    pause: float = 0.25
    #: The longest pause between two attempts (a Retry-After may ask for more).
    max_pause: float = 8.0
    #: Seconds from the first attempt after which no further attempt starts: with the
    #: request timeout, what bounds how long a caller can be kept waiting.
    budget: float = 30.0

    def backoff(self, attempt: int, rng: random.Random,
                retry_after: float | None = None) -> float:
        """The pause after failed attempt number ``attempt`` (1-based)."""
        return backoff(attempt, base=self.pause, cap=self.max_pause, rng=rng,
                       retry_after=retry_after)
