"""Submissions a pool could never run, or should not hold, are refused at the door naming the
field (issue 42, finding 5): a 50 MB manifest was accepted, grew the scheduler by 500 MB,
and its pod could never start ("Argument list too long").

The bounds are checked against the kernel itself: an argument of the largest accepted size
starts a process, one byte more does not.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess

import fakeredis
import pytest

from kuota.service import runnable, submission
from kuota.service.intake import Intake
from queueing.store import Store
from quota import api

WHERE = "spec.podSets[0].template.spec.containers[0]"
KiB = 1024


def check(command: list[str], *, env: dict[str, str] | None = None,
          annotation: str = "") -> submission.Submission:
    manifest = submission.from_args(command, queue="team/lq", name="job",
                                    requests={"cpu": 1}, env=env)
    if annotation:
        manifest["metadata"]["annotations"]["note"] = annotation
    return submission.check(manifest, {})


def problems(command: list[str], **options: object) -> list[tuple[str, str]]:
    with pytest.raises(api.ObjectError) as caught:
        check(command, **options)  # type: ignore[arg-type]
    return [(p.field, p.message) for p in caught.value.problems]


def test_the_longest_argument_accepted_is_the_longest_the_kernel_starts() -> None:
    subprocess.run(["true", "x" * runnable.MAX_ARG_BYTES], check=True)
    with pytest.raises(OSError) as caught:
        subprocess.run(["true", "x" * (runnable.MAX_ARG_BYTES + 1)], check=True)
    assert caught.value.errno == errno.E2BIG
    assert os.sysconf("SC_ARG_MAX") >= runnable.MAX_EXEC_BYTES * 2


def test_an_argument_longer_than_the_kernel_takes_is_named() -> None:
    check(["echo", "x" * runnable.MAX_ARG_BYTES])
    [(field, message)] = problems(["echo", "x" * (runnable.MAX_ARG_BYTES + 1)])
    assert field == f"{WHERE}.command[1]"
    assert message.startswith("is 131,072 bytes; a process argument or environment variable "
                              "holds at most 131,071 (Linux's MAX_ARG_STRLEN)")
    assert "Argument list too long" in message


def test_non_ascii_arguments_are_counted_in_bytes() -> None:
    [(field, _)] = problems(["echo", "é" * (runnable.MAX_ARG_BYTES // 2 + 1)])
    assert field == f"{WHERE}.command[1]"


def test_an_environment_variable_too_long_is_named() -> None:
    value = "v" * (runnable.MAX_ARG_BYTES - len("BIG="))
    check(["env"], env={"BIG": value})
    [(field, message)] = problems(["env"], env={"BIG": value + "v"})
    assert field == f"{WHERE}.env[0].value"
    assert "MAX_ARG_STRLEN" in message


def test_arguments_and_environment_together_past_the_bound_are_named() -> None:
    part = "x" * (120 * KiB)
    check(["echo", *[part] * 7], env={"A": part[:-2]})  # 8 strings of 120 KiB: 0.94 MiB
    [(field, message)] = problems(["echo", *[part] * 8], env={"A": part[:-2]})
    assert field == f"{WHERE}.command"
    # "echo", nine strings of 120 KiB (eight arguments, A=...), and per string a NUL and a
    # pointer: 4 + 9 * 122,880 + 10 * 9
    assert message.startswith("command, args and env take 1,106,014 bytes; at most 1,048,576, "
                              "half of the kernel's ARG_MAX")


def test_a_manifest_past_one_and_a_half_mib_is_refused_naming_its_largest_field() -> None:
    room = runnable.MAX_MANIFEST_BYTES - runnable.json_bytes(check(["echo"]).manifest)
    check(["echo"], annotation="n" * (room - 100))
    [(field, message)] = problems(["echo"], annotation="n" * (2 * 1024 * KiB))
    assert field == ""
    assert message.startswith("the manifest is 2,0")
    assert message.endswith("bytes of JSON; at most 1,572,864 (1.5 MiB, the most Kubernetes "
                            "stores in an object); its largest field is "
                            "metadata.annotations.note (2,097,152 bytes)")


def test_a_tenants_huge_manifest_is_refused_by_the_scheduler_before_decoding() -> None:
    """A submitter limited to its namespace sends its manifest through a request stream;
    the scheduler refuses one of several MiB by its length alone, and applies the exact
    bound (as ``kuota submit`` does) to one it decodes."""
    store = Store(fakeredis.FakeRedis(decode_responses=True), "t")
    store.objects.apply([{"apiVersion": "kuota.dev/v1alpha1", "kind": "LocalQueue",
                          "metadata": {"name": "lq", "namespace": "team-a"},
                          "spec": {"clusterQueue": "cq"}}], {})

    def answer(note_bytes: int) -> str:
        manifest = submission.from_args(["true"], queue="team-a/lq", name="x",
                                        requests={"cpu": 1})
        manifest["metadata"]["annotations"]["note"] = "n" * note_bytes
        rid = store.requests.post("team-a", "submit", key="team-a/x",
                                  manifest=json.dumps(manifest), submission=str(note_bytes))
        Intake(store, lambda: 5.0, ["team-a"]).step(10.0)
        reply = store.requests.answer("team-a", rid)
        assert reply is not None and reply["ok"] is False, reply
        return str(reply["error"])

    huge = answer(50 * 1024 * KiB)
    assert huge.startswith("manifest: 52,429,")
    assert huge.endswith("characters; a Workload manifest may hold at most 1,572,864 bytes of "
                         "JSON")
    assert "the manifest is 1,7" in answer(1700 * KiB)
    assert store.workloads.find("team-a/x") is None
