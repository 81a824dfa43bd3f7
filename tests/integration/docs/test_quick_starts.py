"""The quick starts run as written (issue 41, scope 7): a doc that drifts fails here.

Each test takes its commands from the Markdown itself (tests/markdown_blocks.py), by the
heading a reader finds them under, and runs them in a shell as a user would paste them:

* the README's "Try it" block, in the repository, with the ``.venv`` ``make`` set up;
* docs/redis-mode.md's Quickstart, in an empty directory: queues applied, a scheduler and
  two workers started in the background, a gang submitted and waited on, listed, its logs
  read; then that section's Python snippet against the same pool, and the embedded mode's
  snippet (an in-process pool, no Redis).

The one thing put in place of what a doc says is the Redis: the quick start starts a
redis-server with AOF on the default port, the test starts one with AOF on a free port
(tests/integration/redis/server.py) and points ``REDIS_URL`` at it. The scheduler and
workers the quick start leaves running are stopped at the end with their process group.
The Kubernetes quick start (docs/operator.md, on ``make sandbox``) runs in the real tier:
tests/real/test_real_sandbox.py.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.redis.server import RedisServer
from tests.markdown_blocks import blocks_under

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"
REDIS_MODE = REPO / "docs" / "redis-mode.md"
#: The interpreter's scripts (kuota, python): on the PATH as after activating the venv.
BIN = Path(sys.executable).parent


def user_env(**extra: str) -> dict[str, str]:
    """A user's shell: the venv's scripts first on the PATH, no Redis or prefix of the
    suite's (the docs name their own), and ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "KUOTA_PREFIX")}
    env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(extra)
    return env


def test_the_readme_try_it_block_runs_as_written(tmp_path: Path) -> None:
    [block] = blocks_under(README, "Try it", "sh")
    assert "make demo" in block.text
    # `make demo` on a .venv whose install is not current would install packages from here.
    stale = subprocess.run(["make", "--question", ".venv/.installed-demo"], cwd=REPO,
                           capture_output=True, check=False)
    if stale.returncode != 0:
        pytest.skip("the repository's .venv is not set up or not current (`make setup`)")
    log = tmp_path / "readme.out"
    with log.open("w") as out:
        done = subprocess.run(["bash", "-e", "-c", block.text], cwd=REPO, env=user_env(),
                              stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False)
    text = log.read_text()
    assert done.returncode == 0, f"README.md:{block.line}: the Try it block failed:\n{text}"
    assert "What to notice" in text and "kuota on worker pools" in text  # both demo parts
    assert '"pendingReason": "ExceedsMaxQuota"' in text  # simulate -o json
    assert "usage: kuota" in text  # --help


def _redis_mode_script(server: RedisServer) -> str:
    """The Quickstart's shell block with the test's Redis for the doc's."""
    [block] = blocks_under(REDIS_MODE, "Quickstart", "sh")
    script = block.text
    starts = re.compile(r"^redis-server --appendonly yes\b.*$", re.MULTILINE)
    exports = re.compile(r"^export REDIS_URL=\S+", re.MULTILINE)
    assert starts.search(script) and exports.search(script), (
        f"docs/redis-mode.md:{block.line}: the quick start no longer starts a Redis with AOF "
        "and exports REDIS_URL: update this test with it")
    script = starts.sub(f"# (the test's redis-server with AOF, port {server.port})", script)
    return exports.sub(f"export REDIS_URL={server.url}", script)


@pytest.fixture
def session_group() -> Iterator[Callable[[subprocess.Popen[bytes]], None]]:
    """Stops, at the end, the process groups of the shells given to it (and whatever
    they left running in the background: a scheduler, workers)."""
    groups: list[int] = []
    yield lambda proc: groups.append(proc.pid)
    for group in groups:
        _stop_group(group)


def _stop_group(group: int) -> None:
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
    raise AssertionError(f"process group {group} outlived SIGKILL")


@pytest.mark.redis
def test_the_redis_mode_quick_start_and_its_python_snippets_run_as_written(
        redis_factory: Callable[..., RedisServer], tmp_path: Path,
        session_group: Callable[[subprocess.Popen[bytes]], None]) -> None:
    server = redis_factory(appendonly=True).start()
    env = user_env(REDIS_URL=server.url)
    log = tmp_path / "quickstart.out"
    with log.open("w") as out:
        # A session of its own: the background scheduler and workers stay in its group.
        shell = subprocess.Popen(["bash", "-e", "-c", _redis_mode_script(server)],
                                 cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    session_group(shell)
    try:
        status = shell.wait(timeout=180)
    except subprocess.TimeoutExpired:
        status = None
    text = log.read_text()
    assert status == 0, f"docs/redis-mode.md's Quickstart ended with {status}:\n{text}"
    for created in ("ResourceFlavor/a100 created", "ClusterQueue/research created",
                    "LocalQueue/default/team-a created"):
        assert created in text
    assert re.search(r"default/train\s+\S+\s+Succeeded", text), text  # get workloads -a
    for pod in (0, 1):  # kuota logs train: each pod's line, its GPU, the arguments
        assert re.search(rf"pod {pod} of 2 on box-[12], GPU [01]: \['--epochs', '3'\]", text), text

    [snippet] = blocks_under(REDIS_MODE, "Quickstart", "python")
    done = subprocess.run([sys.executable, "-c", snippet.text], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"docs/redis-mode.md:{snippet.line}:\n{done.stderr}"
    assert done.stdout.startswith("Succeeded "), done.stdout
    assert "pod 0 of 2" in done.stdout and "pod 1 of 2" in done.stdout

    [embedded] = blocks_under(REDIS_MODE, "Without a Redis: the embedded mode", "python")[:1]
    done = subprocess.run([sys.executable, "-c", embedded.text], cwd=tmp_path,
                          env=user_env(), capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, f"docs/redis-mode.md:{embedded.line}:\n{done.stderr}"
    assert done.stdout.strip().splitlines()[-1] == "Succeeded", done.stdout
