"""kopf wiring: watches feed the controller, the webhook suspends Jobs, startup runs the rest.

Handlers only translate: a watch event becomes :meth:`Controller.observe`,
an AdmissionReview becomes :func:`kuota.operator.webhooks.needs_suspend` (Jobs,
JobSets), :func:`kuota.operator.webhooks.pod_gates` (pods, a single queued Pod
first made a group of one or put in its LeaderWorkerSet group) or
:func:`kuota.operator.kinds.pods.template_patch` (Deployments, StatefulSets,
LeaderWorkerSets: their pod templates say how their pods are queued).
Everything is registered in a registry of its own (never kopf's global
one), so tests can run several operators in one process.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

import kopf

from kuota.federation import managed_by
from kuota.operator import conversion, guard, kinds, names, probes, webhooks
from kuota.operator import visibility as visibility_server
from kuota.operator.certs import ReloadingWebhookServer, ServingCertificate
from kuota.operator.controller import Controller
from kuota.operator.kinds import pods
from kuota.operator.loop import Operator, Refused


@dataclass(frozen=True)
class VisibilityOptions:
    """The HTTPS server of the visibility.kuota.dev API (:mod:`kuota.operator.visibility`)."""

    addr: str
    port: int
    certfile: str
    keyfile: str


@dataclass(frozen=True)
class WebhookOptions:
    """The HTTPS server kopf runs for the mutating webhook."""

    addr: str = "0.0.0.0"
    port: int = 9443
    certfile: str | None = None
    pkeyfile: str | None = None
    #: The CA that issued ``certfile`` (cert-manager's ``ca.crt``): the managed
    #: configuration's ``caBundle``; None: the certificate itself.
    cafile: str | None = None
    #: How often the certificate files are checked for a renewal (seconds).
    reload_interval: float = 10.0
    #: With a managed configuration and no CA: seconds between publishing a renewed
    #: certificate's trust and serving it (:mod:`kuota.operator.certs`).
    trust_delay: float = 2.0
    #: Host name in the URL kopf writes into a managed webhook configuration.
    host: str | None = None
    #: Name of a webhook configuration kopf keeps up to date (None: manifests provide it).
    managed: str | None = None
    #: Serve plain HTTP (only for tests behind something that terminates TLS).
    insecure: bool = False


def _merge(patch: dict[str, Any], merge: dict[str, Any]) -> None:
    """Add a merge patch (nested dicts) to kopf's patch of an object."""
    for key, value in merge.items():
        if isinstance(value, dict):
            _merge(patch.setdefault(key, {}), value)
        else:
            patch[key] = value


def _guard(operator: Operator, review: dict[str, Any],
           refusal: Callable[[dict[str, Any], dict[str, Any]], str | None]) -> None:
    """Refuse an update kuota keeps from users (:mod:`kuota.operator.guard`), unless kuota
    itself makes it. 403: the user may not, whatever the object holds."""
    user = (review.get("userinfo") or {}).get("username")
    old, new = review.get("old"), review.get("new")
    if operator.username is None or user == operator.username or old is None or new is None:
        return
    problem = refusal(dict(old), dict(new))
    if problem is not None:
        raise kopf.AdmissionError(problem, code=403)


def _labels_of(controller: Controller, namespace: str | None) -> dict[str, str] | None:
    """The labels of a namespace as last seen (None: not seen)."""
    body = controller.objects.get("Namespace", namespace or "default")
    return ((body or {}).get("metadata") or {}).get("labels")


def webhook_server(options: WebhookOptions) -> kopf.WebhookServerProtocol:
    """kopf's HTTPS server for the webhooks, also answering CRD conversion reviews
    (``/convert``, :mod:`kuota.operator.conversion`); with certificate files, one that
    takes up their renewals without a restart (:mod:`kuota.operator.certs`)."""
    server: kopf.WebhookServer
    if options.certfile and options.pkeyfile and not options.insecure:
        certificate = ServingCertificate(options.certfile, options.pkeyfile, options.cafile)
        server = ReloadingWebhookServer(certificate, interval=options.reload_interval,
                                        trust_delay=options.trust_delay, addr=options.addr,
                                        port=options.port, host=options.host)
    else:
        server = kopf.WebhookServer(addr=options.addr, port=options.port, host=options.host,
                                    certfile=options.certfile, pkeyfile=options.pkeyfile,
                                    insecure=options.insecure)

    def serve(fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        return server(cast(kopf.WebhookFn, conversion.answering_conversions(fn)))
    return serve


def build_registry(operator: Operator, connection: kopf.ConnectionInfo | None = None, *,
                   webhook: WebhookOptions | None = None,
                   probe_addr: tuple[str, int] | None = None,
                   visibility: VisibilityOptions | None = None,
                   login_with: Callable[[], kopf.ConnectionInfo | None] | None = None
                   ) -> kopf.OperatorRegistry:
    """``login_with``: how to log in instead of the service account, then ``$KUBECONFIG`` (the
    kubeconfig and context given on the command line, :mod:`kuota.operator.kubeconfig`)."""
    registry = kopf.OperatorRegistry()
    controller = operator.controller
    state: dict[str, Any] = {}

    def credentials(settings: kopf.OperatorSettings) -> kopf.ConnectionInfo | None:
        # Read anew at every call: kopf logs in again after a 401 and so does our client
        # (kuota.operator.client), and either needs the token file as it is now — the
        # kubelet replaces a projected service-account token long before it expires.
        if connection is None and login_with is not None:
            return login_with()
        return connection or kopf.login_with_service_account(settings=settings) \
            or kopf.login_with_kubeconfig(settings=settings)

    @kopf.on.login(registry=registry)
    def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo | None:
        return credentials(settings)

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.level = logging.WARNING
        # One INFO line per handled watch event costs more than handling it.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        settings.watching.reconnect_backoff = 0.5
        settings.queueing.idle_timeout = 10.0
        if webhook is not None:
            settings.admission.server = webhook_server(webhook)
            settings.admission.managed = webhook.managed
        info = credentials(settings)
        if info is None:
            raise kopf.PermanentError("no credentials: no service account and no kubeconfig")
        try:
            await operator.start(info, login=lambda: credentials(settings))
        except Refused as exc:
            raise kopf.PermanentError(str(exc)) from None
        if probe_addr is not None:
            state["probes"] = await probes.serve(
                operator, *probe_addr,
                webhook=(webhook.addr, webhook.port) if webhook is not None else None)
        if visibility is not None:
            state["visibility"] = await visibility_server.serve(
                operator, visibility.addr, visibility.port, certfile=visibility.certfile,
                keyfile=visibility.keyfile)

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        if "probes" in state:
            await state["probes"].cleanup()
        if "visibility" in state:
            await state["visibility"].stop()
        await operator.stop()

    for kind, res in names.KOPF_WATCHED.items():
        async def observe(event: kopf.RawEvent, kind: str = kind, **_: Any) -> None:
            body: dict[str, Any] = dict(event["object"])
            controller.observe(kind, body, deleted=event["type"] == "DELETED")

        kopf.on.event(res.group, res.version, res.plural, id=f"watch-{res.plural}",
                      registry=registry)(observe)

    if webhook is not None:
        for queued in kinds.KINDS.values():
            res = queued.res

            async def suspend(body: kopf.Body, patch: kopf.Patch, namespace: str | None,
                              **kwargs: Any) -> None:
                if not controller.manages(namespace):
                    return  # (another namespace: no Workload would ever let it run)
                if not operator.options.queues(str(body.get("kind") or "Job")):
                    return  # (a kind integrations.frameworks leaves out: created as it is)
                if kwargs.get("operation") == "UPDATE":
                    _guard(operator, kwargs, lambda old, new: guard.update_refusal(
                        kinds.KINDS[str(new.get("kind") or "Job")], old, new))
                    return
                try:
                    suspend = webhooks.needs_suspend(
                        dict(body), default_queue=operator.options.default_queue,
                        queue_exists=controller.owners.queue_exists)
                except webhooks.Rejected as exc:
                    raise kopf.AdmissionError(str(exc), code=422) from exc
                if suspend:
                    _merge(patch, kinds.KINDS[str(body.get("kind") or "Job")].suspend_patch())
                    engine = controller.engine
                    warning = webhooks.never_fits_warning(
                        dict(body), default_queue=operator.options.default_queue,
                        queue_exists=controller.owners.queue_exists,
                        never_fits=engine.never_fits if engine is not None else None)
                    if warning is not None:
                        kwargs["warnings"].append(warning)
                if body.get("kind") not in managed_by.OWN_CONTROLLERS:
                    return  # (multi-cluster dispatch carries Jobs and JobSets)
                manager = webhooks.managed_by_default(
                    dict(body), default_queue=operator.options.default_queue,
                    queue_exists=controller.owners.queue_exists, lookup=controller.objects.get)
                if manager is not None:  # dispatched: the manager's Job controller keeps off it
                    patch.spec["managedBy"] = manager

            kopf.on.mutate(res.group, res.version, res.plural, id=f"suspend-{res.plural}",
                           operations=["CREATE", "UPDATE"], registry=registry)(suspend)

        @kopf.on.mutate("", "v1", "pods", id="gate-pods", operations=["CREATE", "UPDATE"],
                        registry=registry)
        async def gate_pods(body: kopf.Body, patch: kopf.Patch, namespace: str | None,
                            **kwargs: Any) -> None:
            if not controller.manages(namespace):
                return
            if kwargs.get("operation") == "UPDATE":
                _guard(operator, kwargs, guard.pod_update_refusal)
                return
            pod = dict(body)
            if operator.options.leaves_pod(pod, namespace, _labels_of(controller, namespace)):
                return  # (a pod-based kind not queued there: integrations.frameworks)
            queue = pods.default_queue(pod, enabled=operator.options.default_queue,
                                       queue_exists=controller.owners.queue_exists)
            if queue is not None:  # a bare Pod: labelled as its user would
                patch.meta.setdefault("labels", {})[names.QUEUE_LABELS[0]] = queue
                pod = pods.with_queue(pod, queue)
            # A LeaderWorkerSet's pod joins its group; a queued single Pod (a Deployment's
            # too) is a group of one.
            marks = pods.leader_worker_marks(pod) or pods.single_pod_marks(pod)
            if marks is not None:
                labels, annotations = marks
                patch.meta.setdefault("labels", {}).update(labels)
                patch.meta.setdefault("annotations", {}).update(annotations)
                meta = dict(pod.get("metadata") or {})
                meta["labels"] = {**(meta.get("labels") or {}), **labels}
                meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
                pod["metadata"] = meta
            try:
                gates = webhooks.pod_gates(pod, job_managed=controller.owners.job_managed)
            except webhooks.Rejected as exc:
                raise kopf.AdmissionError(str(exc), code=422) from exc
            if gates is not None:
                patch.spec["schedulingGates"] = gates
                if any(g.get("name") == names.TOPOLOGY_GATE for g in gates):
                    patch.meta.setdefault("labels", {})[names.TOPOLOGY_LABEL] = "true"

        for res in pods.TEMPLATED.values():
            async def mark_template(body: kopf.Body, patch: kopf.Patch, namespace: str | None,
                                    **kwargs: Any) -> None:
                if not controller.manages(namespace) or not operator.options.queues_pods(
                        str(body.get("kind")), namespace, _labels_of(controller, namespace)):
                    return
                old = kwargs.get("old")  # (given on UPDATE)
                obj = dict(body)
                queue = pods.default_queue(
                    obj, enabled=old is None and operator.options.default_queue,
                    queue_exists=controller.owners.queue_exists)
                if queue is not None:  # labelled as its user would: everything follows
                    patch.meta.setdefault("labels", {})[names.QUEUE_LABELS[0]] = queue
                    obj = pods.with_queue(obj, queue)
                problem = pods.refusal(obj) or (
                    pods.scaling_error(dict(old), obj) if old is not None else None)
                if problem is not None:
                    raise kopf.AdmissionError(problem, code=422)
                spec_patch = pods.template_patch(obj)
                if spec_patch is not None:  # its pods are queued: they carry what says how
                    _merge(patch.setdefault("spec", {}), spec_patch)

            kopf.on.mutate(res.group, res.version, res.plural, id=f"queue-{res.plural}",
                           operations=["CREATE", "UPDATE"], registry=registry)(mark_template)

    return registry
