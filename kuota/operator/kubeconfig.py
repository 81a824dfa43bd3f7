"""Logging in from a chosen kubeconfig and context: the operator run outside the cluster.

In a pod the operator logs in with its service account; outside (a workstation,
``make sandbox``, a CI runner) it reads a kubeconfig. kopf's own
``login_with_kubeconfig`` reads only ``$KUBECONFIG``'s current context and
takes paths as written, so ``kuota operator --kubeconfig PATH --context NAME``
goes through the kubernetes client's loader instead — the one ``kubectl kuota``,
``kuota why`` and the dashboard use — which picks the context, resolves
relative certificate paths against the kubeconfig's directory, merges a
``$KUBECONFIG`` list and runs exec plugins.

:func:`connection` is the login function: called at start and again after
every 401 (by kopf and by kuota's own client), each call reads the file anew,
so a token replaced in the kubeconfig, or an exec plugin's fresh one, is
taken up without a restart. ``kuota operator`` calls it once before starting,
so that a missing file or an unknown context is a usage error naming the
flag rather than a login failure inside kopf.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import kopf

#: Above kopf's own kubeconfig (10) and service-account (20) logins: chosen on purpose.
PRIORITY = 50


@dataclass(frozen=True)
class Source:
    """Where to log in from: a kubeconfig (None: ``$KUBECONFIG``, else ``~/.kube/config``)
    and a context in it (None: its current context)."""

    path: str | None = None
    context: str | None = None

    def file(self) -> str:
        """The kubeconfig path (or ``$KUBECONFIG``'s list), read now: the kubernetes client
        reads ``$KUBECONFIG`` once, when it is imported."""
        return self.path or os.environ.get("KUBECONFIG") or "~/.kube/config"

    def describe(self) -> str:
        return f"{self.file()} (context {self.context})" if self.context else self.file()


class KubeconfigError(ValueError):
    """The kubeconfig cannot be read, or has no such context; the message names the flag."""


def _load(source: Source) -> tuple[Any, dict[str, Any]]:
    """The kubernetes client's configuration for ``source`` and the context's entry."""
    from kubernetes import client, config

    try:
        contexts, current = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=source.file())
    except (config.ConfigException, OSError) as exc:
        raise KubeconfigError(f"--kubeconfig {source.describe()}: {exc}") from None
    name = source.context or (current or {}).get("name")
    chosen = next((c for c in contexts or [] if c.get("name") == name), None)
    if chosen is None:
        known = ", ".join(sorted(str(c.get("name")) for c in contexts or [])) or "none"
        raise KubeconfigError(f"--context {name}: no such context in {source.file()} "
                              f"(it has: {known})")
    configuration = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=source.file(), context=name, client_configuration=configuration,
            persist_config=False)
    except (config.ConfigException, OSError) as exc:
        raise KubeconfigError(f"--kubeconfig {source.describe()}: {exc}") from None
    return configuration, chosen


def _token(configuration: Any) -> tuple[str | None, str | None]:
    """(scheme, token) from the ``Authorization`` value the client would send, if any (the
    key is ``BearerToken`` in kubernetes client 29+, ``authorization`` before)."""
    keys = configuration.api_key or {}
    header = keys.get("BearerToken") or keys.get("authorization")
    if not header:
        return None, None
    scheme, _, token = str(header).partition(" ")
    return (scheme, token) if token else ("Bearer", scheme)


def connection(source: Source) -> kopf.ConnectionInfo:
    """kopf's connection info for ``source``, read now."""
    configuration, context = _load(source)
    scheme, token = _token(configuration)
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert or None,
        insecure=not configuration.verify_ssl,
        certificate_path=configuration.cert_file or None,
        private_key_path=configuration.key_file or None,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme, token=token,
        default_namespace=(context.get("context") or {}).get("namespace"),
        priority=PRIORITY)



def api_client(source: Source | None) -> Any:
    """A kubernetes client ``ApiClient`` logged in as the operator: from ``source`` when
    given, else the pod's service account, else ``$KUBECONFIG`` (as kopf logs in)."""
    from kubernetes import client, config

    if source is None:
        configuration = client.Configuration()
        try:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
        except config.ConfigException:
            source = Source()
        else:
            return client.ApiClient(configuration)
    configuration, _ = _load(source)
    return client.ApiClient(configuration)
