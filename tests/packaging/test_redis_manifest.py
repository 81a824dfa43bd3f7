"""The Redis kuota ships for Kubernetes (manifests/redis/redis.yaml) asks for a password
and is reachable only by kuota's own pods and pods that say they are its clients."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MANIFEST = Path(__file__).resolve().parents[2] / "manifests" / "redis" / "redis.yaml"


def objects() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc}


def test_redis_requires_the_password_from_its_secret() -> None:
    container = objects()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"]}
    want = {"name": "kuota-redis", "key": "password"}
    assert env == {"REDIS_PASSWORD": want, "REDISCLI_AUTH": want}
    args = container["args"]
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    assert container["readinessProbe"]["exec"]["command"] == ["redis-cli", "ping"]


def test_only_kuota_pods_and_labelled_clients_reach_redis() -> None:
    docs = objects()
    policy = docs["NetworkPolicy"]["spec"]
    pod_labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    peers = [(p.get("namespaceSelector"), p["podSelector"]["matchLabels"]) for p in rule["from"]]
    assert peers == [(None, {"app.kubernetes.io/part-of": "kuota"}),
                     ({}, {"kuota.dev/redis-client": "true"})]
    assert rule["ports"] == [{"port": "redis"}]
