"""Keeping the pool's secrets from the jobs it runs.

A worker holds the pool's Redis credentials — a user that may write every
workload, log and node of the pool — and runs the commands of every tenant
beside itself. A job that found those credentials could read and rewrite all
of it (issue 42: a job printed its worker's ``REDIS_PASSWORD`` from
``/proc/$PPID/environ``). Two things keep them apart here:

* **A clean environment.** A pod starts from its own ``env``, the ``KUOTA_*``
  variables the supervisor sets, and only the basics of the worker's
  environment that programs need to be found and to read text
  (:data:`PASSED_ON`: ``PATH``, ``HOME``, ``TMPDIR``, ``TZ``, ``LANG``,
  ``LANGUAGE`` and ``LC_*``) — never anything else of the worker's: not its
  store address or password, nor whatever else its service manager gave it.
* **A worker no job can look into.** Pods run as the worker's Unix user unless
  ``--pod-uids``, and a process may read the environment and memory of any other
  process of its user (``/proc/PID/environ``, ``ptrace``). The worker marks itself
  not *dumpable* (``prctl(PR_SET_DUMPABLE, 0)``, as ssh-agent does): the kernel
  then lets only root (``CAP_SYS_PTRACE``) read its ``/proc`` files or attach to
  it. The flag is not the pods': it is reset when a child ``exec``\\ s a program
  as the user it runs as, so a pod can be debugged and read its own ``/proc``.
  (Its command line, ``/proc/PID/cmdline``, stays readable by everyone: never put
  a password in ``--redis``; use ``REDIS_PASSWORD`` or ``--password-file``.)

Jobs of *different tenants* on one node are kept apart from each other only by
``--pod-uids`` (:mod:`kuota.service.podusers`); this module keeps every job away
from the pool's own credentials.
"""

from __future__ import annotations

import ctypes
import logging
import sys
from collections.abc import Mapping
from typing import Final

log = logging.getLogger(__name__)

#: The worker's variables a pod gets (its own ``env`` may set them otherwise).
PASSED_ON: Final = frozenset({"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE"})
#: ... and those starting with these (the locale's categories).
PASSED_ON_PREFIXES: Final = ("LC_",)

_PR_SET_DUMPABLE = 4


def passed_on(name: str) -> bool:
    """Does a pod get the worker's variable ``name``?"""
    return name in PASSED_ON or name.startswith(PASSED_ON_PREFIXES)


def pod_environment(own: Mapping[str, str], worker: Mapping[str, str]) -> dict[str, str]:
    """The environment a pod starts from: the basics of the ``worker``'s, then its ``own``
    (the caller adds the ``KUOTA_*`` variables)."""
    env = {name: value for name, value in worker.items() if passed_on(name)}
    env.update(own)
    return env


def make_undumpable() -> bool:
    """Make this process unreadable to other processes of its user (module doc); False
    where that cannot be done (not Linux, or the call failed), which is logged."""
    if sys.platform != "linux":
        log.warning("not on Linux: processes of this user (pods included) may read this "
                    "worker's environment and memory; run pods as other users")
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        log.warning("prctl(PR_SET_DUMPABLE, 0) failed (errno %d): processes of this user "
                    "(pods included) may read this worker's environment", error)
        return False
    return True
