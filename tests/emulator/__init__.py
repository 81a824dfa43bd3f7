"""An in-process Kubernetes API server for tests: kmock, plus what kopf, kubectl and clients need.

Start one with ``with Emulator() as api: ...`` (or the ``k8s_api`` fixture),
point clients at ``api.url``, seed and inspect objects through the handle.
See ``docs/dev/emulator.md`` for the tour; each module's docstring explains
its part:

* :mod:`.store` — objects, resourceVersions, finalizers, the event log;
* :mod:`.rules` — what writes must satisfy, and built-in defaults;
* :mod:`.resources` — built-in types and CRD registration;
* :mod:`.schema` — CRD schema pruning, defaults and validation;
* :mod:`.patches` — JSON patch, merge patch, strategic merge patch;
* :mod:`.selectors` — label and field selectors;
* :mod:`.discovery`, :mod:`.tables`, :mod:`.watch` — what kubectl and kopf read;
* :mod:`.webhooks` — admission webhook calls on create;
* :mod:`.server` — the kmock handler that routes HTTP requests;
* :mod:`.runner` — the background-thread server and the test-side handle;
* :mod:`.faults` — injected errors; :mod:`.clients` — kubectl and client helpers.
"""

from .clients import Kubectl, api_client, kubeconfig, write_kubeconfig
from .faults import Fault, Faults
from .runner import Emulator, emulators
from .store import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH

__all__ = [
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_PATCH",
    "Emulator",
    "Fault",
    "Faults",
    "Kubectl",
    "api_client",
    "emulators",
    "kubeconfig",
    "write_kubeconfig",
]
