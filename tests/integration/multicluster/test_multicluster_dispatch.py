"""Multi-cluster dispatch end to end: a manager and two emulated member clusters.

Each test submits Jobs to the manager and reads where their copies land in
the members; the shared fleet is left as found (every Job finished).
"""

from __future__ import annotations

from tests.integration.multicluster.fleet import ORIGIN, Fleet, gpu_job
from tests.integration.operator import harness as h


def scores(workload: dict) -> dict[str, dict]:
    return {c["name"]: c for c in workload["status"]["dispatch"]["clusters"]}


class TestChoice:
    def test_gpu_model_only_on_member_b(self, fleet: Fleet) -> None:
        fleet.submit(gpu_job("gpu-train", 2))
        assert fleet.placed("gpu-train") == "b"
        copy = fleet.copy("b", "gpu-train")
        assert copy is not None
        pod = copy["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"gpu-model": "a100"}
        assert copy["spec"]["suspend"] is False
        assert copy["metadata"]["labels"][ORIGIN] == "manager-1"
        assert "kuota.dev/queue-name" not in copy["metadata"]["labels"]
        assert copy["metadata"]["annotations"]["kuota.dev/origin-workload"] == \
            f"default/{fleet.workload('gpu-train')['metadata']['name']}"
        assert h.get_job(fleet.manager, "gpu-train")["spec"]["suspend"] is True
        wl = h.wait(fleet.manager, lambda: (w := fleet.workload("gpu-train"))
                    .get("status", {}).get("dispatch") and w, "the decision in status")
        assert wl["status"]["clusterName"] == "b"
        assert wl["status"]["dispatch"]["cluster"] == "b"
        assert scores(wl)["a"]["filteredBy"] == "Hardware"
        fleet.finish_all("gpu-train")
