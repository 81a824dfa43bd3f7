"""Children that do not outlive the test run.

The control plane, the operator and the extender run in their own session so that a
Ctrl-C aimed at pytest does not hit them half-way through a test. The price is that a
pytest killed with SIGKILL (a CI timeout, an OOM) used to leave etcd, kube-apiserver and
friends running, holding ports and memory for the next run. Linux can tie a child's life
to its parent's: prctl(PR_SET_PDEATHSIG) asks the kernel to signal the child when the
thread that forked it exits. Only a fork from the main thread is tied, because a helper
thread ending would otherwise kill a control plane still in use.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def detached_child() -> Callable[[], None]:
    """A ``preexec_fn`` for Popen: a new session, and SIGKILL when the parent dies."""
    libc = _libc() if threading.current_thread() is threading.main_thread() else None
    parent = os.getpid()

    def prepare() -> None:
        os.setsid()
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            # The parent may have died between fork and prctl; then nobody will signal us.
            if os.getppid() != parent:
                os._exit(1)
    return prepare
