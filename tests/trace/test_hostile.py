"""--trace against user code that fights its worker (remat_lint/trace/isolation.py, driver.py):
children that fork, leave the session (``start_new_session``, ``setsid``), ``os._exit``, a
segfault, a ``chdir``, megabytes of output, 3 GiB at once. Each module's findings say what
happened, the run goes on with the right exit code, and no process the user's code started is left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("jax")
psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process sessions and /proc: Linux")

BAD_POLICY = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy="dots_saveable")
    def block(x):
        return jnp.sin(x @ x)

    """
)
SLEEPER = "import time; time.sleep(600)"

HOSTILE = {
    # children that keep running after the module is imported, each noting its pid in pids/
    "forks.py": "import os, time\nif os.fork() == 0:\n    open(f'pids/{os.getpid()}', 'w').close()\n    time.sleep(600)\n",
    "new_session.py": (
        "import subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], start_new_session=True)\n"
        "open(f'pids/{child.pid}', 'w').close()\n"
    ),
    "setsid.py": (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:  # a daemon: two forks, a session of its own, its parent gone\n"
        "        open(f'pids/{os.getpid()}', 'w').close()\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
    ),
    "empty_env.py": (  # a daemon exec'd with an environment of its own: it carries no token
        "import os, subprocess, sys\n"
        "if os.fork() == 0:\n"
        f"    child = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], env={{}}, start_new_session=True)\n"
        "    open(f'pids/{child.pid}', 'w').close()\n"
        "    os._exit(0)\n"
    ),
    "exits.py": "import os\nos._exit(3)\n",
    "segfault.py": "import ctypes\nctypes.string_at(0)\n",
    "chdir.py": "import os\nos.chdir('/')\n",
    "prints.py": "import sys\nsys.stdout.write('x' * 4_000_000)\nprint('{\"not\": \"a result\"}', end='')\n",
}


def trace(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, dict]]:
    """``remat-lint --trace --output-format json ARGS`` in ``folder``: the process, and each file's trace."""
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--trace", "--output-format", "json", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=600,
    )
    return proc, {Path(item["filename"]).name: item["trace"] for item in json.loads(proc.stdout)}


def _left(pids: Path) -> list[int]:
    """The recorded children still alive (a zombie is dead: its parent reaps it)."""
    alive = []
    for entry in pids.iterdir():
        try:
            if psutil.Process(int(entry.name)).status() != psutil.STATUS_ZOMBIE:
                alive.append(int(entry.name))
        except psutil.NoSuchProcess:
            pass
    return alive


def test_hostile_modules_leave_unconfirmed_findings_saying_why_and_no_process_behind(tmp_path: Path):
    (tmp_path / "pids").mkdir()
    for name, code in HOSTILE.items():
        (tmp_path / name).write_text(BAD_POLICY + code)
    (tmp_path / "fine.py").write_text(BAD_POLICY)
    proc, traces = trace(tmp_path, "--trace-timeout", "120", ".")
    assert proc.returncode == 1, proc.stderr  # REM001 confirmed in fine.py (and those that keep running)
    assert traces["fine.py"]["status"] == "confirmed"
    assert traces["exits.py"]["status"] == "unconfirmed" and traces["exits.py"]["reason"].startswith(
        "the worker failed (exit 3)"
    )
    assert traces["segfault.py"] == {
        "status": "unconfirmed",
        "evidence": None,
        "reason": "the worker crashed (SIGSEGV)",
    }
    for name in ("forks.py", "new_session.py", "setsid.py", "empty_env.py", "chdir.py", "prints.py"):  # it runs on
        assert traces[name]["status"] == "confirmed", (name, traces[name])
    recorded = sorted(int(p.name) for p in (tmp_path / "pids").iterdir())
    assert len(recorded) == 4  # the four children did start
    deadline = time.monotonic() + 5  # SIGKILL is delivered at once; the table may lag a moment
    while _left(tmp_path / "pids") and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _left(tmp_path / "pids")
    for pid in left:  # not to leave them to the next test either
        os.kill(pid, 9)
    assert left == []


def test_a_process_out_of_the_workers_session_is_swept(tmp_path: Path):
    from remat_lint.trace import isolation

    env = dict(os.environ)
    token = isolation.mark(env)
    child = subprocess.Popen([sys.executable, "-c", SLEEPER], env=env, start_new_session=True)
    other = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)  # not the worker's
    try:
        time.sleep(0.2)
        isolation.sweep(token)
        assert child.wait(timeout=5) == -9
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_an_allocation_faster_than_the_poll_fails_at_once_on_cpu(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint.trace]\nmemory-limit-mb = 512\n")
    (tmp_path / "grab.py").write_text(BAD_POLICY + "hoard = b'x' * (3 * 2**30)  # 3 GiB at once\n")
    proc, traces = trace(tmp_path, "--backend", "cpu", "grab.py")
    assert proc.returncode == 1
    assert traces["grab.py"] == {
        "status": "unconfirmed",
        "evidence": {"exception": "MemoryError", "lines": [12], "stage": "import"},  # the line that allocates
        "reason": "importing the module fails: MemoryError",
    }


def test_a_process_the_first_round_of_a_sweep_missed_is_killed_in_a_later_one(monkeypatch):
    """A child forked after the processes were listed (while the others are stopped and killed)."""
    from remat_lint.trace import isolation

    env = dict(os.environ)
    token = isolation.mark(env)
    first, late = (subprocess.Popen([sys.executable, "-c", SLEEPER], env=env, start_new_session=True) for _ in "12")
    listings, real = [[first.pid]], isolation._processes  # the first listing misses `late`, as if forked after it
    monkeypatch.setattr(isolation, "_processes", lambda: listings.pop() if listings else real())
    try:
        time.sleep(0.2)
        isolation.sweep(token)
        assert (first.wait(timeout=5), late.wait(timeout=5)) == (-9, -9)
    finally:
        for process in (first, late):
            process.kill()
            process.wait()


def test_the_data_limit_is_hard_so_the_traced_code_cannot_raise_it_again():
    from remat_lint.trace import isolation

    check = (
        "import resource\n"
        "from remat_lint.trace import isolation\n"
        "isolation.limit_memory()\n"
        "print(resource.getrlimit(resource.RLIMIT_DATA))\n"
    )
    env = {**os.environ, isolation.MEMORY_VARIABLE: "4096"}
    run = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=60)
    assert run.stdout.splitlines() == [str((4096 * 2**20, 4096 * 2**20))]  # soft and hard
