"""Test-side access to a real API server: create, read, patch, delete and wait.

A thin layer over the ``kubernetes`` client's dynamic API, returning plain
dicts (as kubectl -o json would), so the real tier's assertions read like
the emulator tier's. Everything here is the *test's* view of the cluster, as
an administrator; the operator under test has its own credentials.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import config, dynamic
from kubernetes.client import ApiClient
from kubernetes.dynamic.exceptions import NotFoundError

Body = dict[str, Any]
T = TypeVar("T")


class Kube:
    """The cluster as seen with the credentials of ``kubeconfig``."""

    def __init__(self, kubeconfig: pathlib.Path, *, describe: Callable[[], str] = str) -> None:
        self.api_client: ApiClient = config.new_client_from_config(str(kubeconfig))
        self.dynamic = dynamic.DynamicClient(self.api_client)
        self._describe = describe

    def _resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def create(self, obj: Body, namespace: str | None = None) -> Body:
        meta = obj.get("metadata") or {}
        resource = self._resource(obj["apiVersion"], obj["kind"])
        created = resource.create(body=obj, namespace=namespace or meta.get("namespace"))
        return dict(created.to_dict())

    def apply(self, *objs: Body) -> None:
        """Create each object, or replace its spec when it exists (merge patch)."""
        for obj in objs:
            meta = obj["metadata"]
            found = self.find(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
            if found is None:
                self.create(obj)
            else:
                self.patch(obj["apiVersion"], obj["kind"], meta["name"],
                           {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")},
                           meta.get("namespace"))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Body:
        found = self.find(api_version, kind, name, namespace)
        if found is None:
            raise AssertionError(f"{kind} {namespace or ''}/{name} does not exist")
        return found

    def find(self, api_version: str, kind: str, name: str,
             namespace: str | None = None) -> Body | None:
        try:
            return dict(self._resource(api_version, kind).get(
                name=name, namespace=namespace).to_dict())
        except NotFoundError:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             **selectors: str) -> list[Body]:
        found = self._resource(api_version, kind).get(namespace=namespace, **selectors)
        return [dict(item) for item in found.to_dict()["items"]]

    def patch(self, api_version: str, kind: str, name: str, patch: Body,
              namespace: str | None = None, *, subresource: str | None = None) -> Body:
        resource = self._resource(api_version, kind)
        if subresource:
            resource = getattr(resource, subresource)
        return dict(resource.patch(name=name, namespace=namespace, body=patch,
                                   content_type="application/merge-patch+json").to_dict())

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               *, propagation: str | None = None) -> None:
        body = {"propagationPolicy": propagation} if propagation else None
        try:
            self._resource(api_version, kind).delete(name=name, namespace=namespace, body=body)
        except NotFoundError:
            return

    def wait_for(self, predicate: Callable[[], T | None], *, what: str,
                 timeout: float = 60, interval: float = 0.25) -> T:
        """Poll ``predicate`` until it is truthy; on timeout fail with the cluster's logs."""
        return poll(predicate, what=what, timeout=timeout, interval=interval,
                    describe=self._describe)

    def close(self) -> None:
        self.api_client.close()


def poll(predicate: Callable[[], T | None], *, what: str, timeout: float = 60,
         interval: float = 0.25, describe: Callable[[], str] = str) -> T:
    """Poll ``predicate`` until it is truthy and return its value; on timeout fail naming
    ``what``, with ``describe()`` (logs) appended."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n"
                                 f"{describe()}")
        time.sleep(interval)
