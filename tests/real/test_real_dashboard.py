"""``kuota dashboard --kubeconfig`` on a real API server, seen in Debian's chromium.

The operator admits real Jobs; the dashboard, reading only with the admin
kubeconfig's list and get calls, shows the ClusterQueue's bar grow when a Job
is admitted and its pending count when the next one must wait — without a
reload — with the node it runs on and the reason the operator wrote (the words
``kuota why`` prints), and a workload's conditions. Screenshot:
dashboard-real-<version>-clusterqueue.png under $KUOTA_TEST_ARTIFACTS/dashboard
(a failure leaves test_real_dashboard-<version>-failure.png).
"""

from __future__ import annotations

from kuota import explanation
from quota import api
from tests.cluster.controlplane import ControlPlane, node
from tests.cluster.kube import Kube
from tests.integration.dashboard import browser
from tests.real import builders as b
from tests.real.operator import OperatorProcess


def test_real_dashboard(control_plane: ControlPlane, kube: Kube, namespace: str,
                        operator: OperatorProcess) -> None:
    version = control_plane.binaries.version
    pool = f"{namespace}-pool"
    control_plane.add_nodes(node(f"{namespace}-n1", cpu="8", labels={"pool": pool}))
    rf, cq = f"{namespace}-rf", f"{namespace}-cq"
    kube.apply(b.flavor(rf, labels={"pool": pool}), b.cluster_queue(cq, quotas={rf: {"cpu": 4}}),
               b.local_queue("main", cq, namespace))
    with browser.dashboard("--kubeconfig", str(control_plane.admin_kubeconfig),
                           "--interval", "0.5") as dash, browser.launch() as context:
        browser.wait_ready(dash.url)
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            page.goto(f"{dash.url}/clusterqueues/{cq}")
            page.evaluate("window.notReloaded = true")
            assert page.locator(f'div.bar[data-cell="{rf}/cpu"] .seg.used').count() == 0

            kube.create(b.job("first", namespace, cpu="2", run_for="1h"))
            page.wait_for_function(
                f"""() => {{ const s = document.querySelector(
                               'div.bar[data-cell="{rf}/cpu"] .seg.used');
                            return s && s.style.width === '50%'; }}""")  # 2 of 4
            assert page.locator("#cq-admitted").inner_text() == "1"
            # Where it runs: the node its pod was bound to.
            page.wait_for_function(
                f"""() => [...document.querySelectorAll('table.running td')]
                          .some(td => td.textContent === '{namespace}-n1')""")

            kube.create(b.job("second", namespace, cpu="4", run_for="1h"))
            page.wait_for_function(
                "() => document.querySelector('#cq-pending').textContent === '1'")
            waiting = kube.wait_for(
                lambda: b.workload_of(kube.list(b.API, "Workload", namespace), "second"),
                what="the second Job's Workload")
            obj = api.parse_object(waiting, source="test")
            assert isinstance(obj, api.Workload)

            def same_words() -> bool:
                shown = page.locator("table.pending td.reason").first.inner_text()
                fresh = kube.get(b.API, "Workload", obj.metadata.name, namespace)
                why = explanation.why(explanation.from_object(
                    api.parse_object(fresh, source="test")))  # type: ignore[arg-type]
                return f"Reason: {shown}" in why

            kube.wait_for(same_words, what="the page showing what kuota why says")
            assert page.evaluate("window.notReloaded") is True
            path = browser.artifacts() / f"dashboard-real-{version}-clusterqueue.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"screenshot: {path}")

            first = b.workload_of(kube.list(b.API, "Workload", namespace), "first")
            assert first is not None
            page.goto(f"{dash.url}/workloads/{namespace}/{first['metadata']['name']}")
            events = page.locator("table.history td.event").all_inner_texts()
            assert "QuotaReserved=True" in events and "Admitted=True" in events, events
        except BaseException:
            failure = browser.artifacts() / f"test_real_dashboard-{version}-failure.png"
            page.screenshot(path=str(failure), full_page=True)
            print(f"screenshot of the failure: {failure}\n{dash.errors()}")
            raise
