"""YAML "billion laughs" documents for the tests of the bounded YAML reader
(:mod:`quota.api.yaml_input`) and of the commands that read user YAML."""

from __future__ import annotations

import itertools

LOL = '["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
LEVELS = "abcdefghi"


def laughs(indent: str = "") -> str:
    """Nine anchors, each nine aliases of the one before: 9^9 (387 million) leaves."""
    lines = [f"{indent}a: &a {LOL}"] + [
        f"{indent}{level}: &{level} [" + ",".join([f"*{below}"] * 9) + "]"
        for below, level in itertools.pairwise(LEVELS)]
    return "\n".join(lines) + "\n"


#: The bomb inside a Workload, about the 630 bytes of the issue.
BOMB_WORKLOAD = ("apiVersion: kuota.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: lol\n"
                 "  namespace: default\nlol:\n" + laughs("  ") +
                 "spec:\n  queueName: lq\n  podSets:\n  - name: main\n"
                 "    count: 1\n    template:\n      spec:\n        containers:\n"
                 "        - name: main\n          command: *i\n"
                 "          resources: {requests: {cpu: '1'}}\n")
