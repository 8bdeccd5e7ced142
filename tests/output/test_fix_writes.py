"""--fix keeps the user's file as it was, except the fix (remat_lint/output/rewrite.py): the old or the
new text whenever the run is killed and when two runs fix one tree at once, no temporary file
left, mode and owner kept, read-only files and files with hard links refused with a message."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from tests.output.test_fix import FIXED, MODULE

FILES = 30


def fix(capsys, *args: str) -> tuple[int, str]:
    code = main(["--no-cache", "--fix", *args])
    return code, capsys.readouterr().err


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_mode_and_owner_are_kept(here, capsys):
    path = here / "m.py"
    path.write_text(MODULE)
    path.chmod(0o640)
    owner = (12345, 12345) if os.geteuid() == 0 else (os.getuid(), os.getgid())  # root fixing another user's file
    os.chown(path, *owner)
    assert fix(capsys, "m.py")[0] == 0
    st = path.stat()
    assert path.read_text() == FIXED and (st.st_mode & 0o777, st.st_uid, st.st_gid) == (0o640, *owner)


def test_a_read_only_file_is_never_rewritten(here, capsys):
    path = here / "m.py"
    path.write_text(MODULE)
    path.chmod(0o444)  # also as root, whom the permission would not stop
    code, err = fix(capsys, "m.py")
    assert code == 2 and "cannot write fixes to m.py: the file is read-only (not rewritten)" in err
    assert path.read_text() == MODULE and [p.name for p in here.iterdir()] == ["m.py"]


def test_a_file_with_hard_links_is_refused_and_both_names_keep_their_text(here, capsys):
    path, other = here / "m.py", here / "other.py"
    path.write_text(MODULE)
    os.link(path, other)
    code, err = fix(capsys, "m.py")
    assert code == 2 and "cannot write fixes to m.py: the file has 2 hard links" in err
    assert path.read_text() == other.read_text() == MODULE and os.path.samefile(path, other)


def _tree(root: Path) -> list[Path]:
    paths = [root / f"m{i}.py" for i in range(FILES)]
    for path in paths:
        path.write_text(MODULE)
    return paths


def _fix_process(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "remat_lint", "--no-cache", "--fix", "-j", "1", "."],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _left(root: Path, paths: list[Path]) -> tuple[set[str], list[str]]:
    """The texts the files hold, and whatever else is in the folder."""
    names = {p.name for p in paths}
    return {p.read_text() for p in paths}, sorted(p.name for p in root.iterdir() if p.name not in names)


@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL at random moments: Linux only")
def test_a_fix_killed_at_random_moments_leaves_each_file_its_old_or_new_text_and_no_temporary_file(tmp_path):
    paths = _tree(tmp_path)
    rng = random.Random(30)
    during_writes = 0
    killed: list[int] = []
    for _ in range(20):
        for path in paths:
            path.write_text(MODULE)
        process = _fix_process(tmp_path)
        while process.poll() is None and all(path.read_text() == MODULE for path in paths):
            time.sleep(0.001)  # until the first file is rewritten: the kill lands among the writes
        time.sleep(rng.uniform(0, 0.05))
        during_writes += process.poll() is None
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed.append(process.pid)
        texts, others = _left(tmp_path, paths)
        assert texts <= {MODULE, FIXED}
        # A kill between naming the new text and renaming it over the file leaves its name: the
        # next rewrite of that file removes it (a later run killed before that file leaves it there).
        pids = "|".join(map(str, killed))
        assert all(re.fullmatch(rf"\.m\d+\.py\.({pids})\.\d+\.tmp", name) for name in others), others
    assert during_writes >= 5, "the kills fell after the run: the harness tested nothing"
    for path in paths:
        path.write_text(MODULE)
    assert _fix_process(tmp_path).wait() == 0
    assert _left(tmp_path, paths) == ({FIXED}, [])


@pytest.mark.skipif(sys.platform != "linux", reason="forks two runs")
def test_two_concurrent_fix_runs_leave_every_file_fixed_and_no_temporary_file(tmp_path):
    paths = _tree(tmp_path)
    first, second = _fix_process(tmp_path), _fix_process(tmp_path)
    assert (first.wait(), second.wait()) == (0, 0)
    assert _left(tmp_path, paths) == ({FIXED}, [])


def test_a_temporary_file_a_killed_run_left_is_removed_by_the_next_rewrite(here, capsys):
    path = here / "m.py"
    path.write_text(MODULE)
    dead, running = here / ".m.py.999999999.3.tmp", here / f".m.py.{os.getpid()}.3.tmp"  # pid_max is below 2**22
    dead.write_text(FIXED)
    running.write_text(FIXED)  # a concurrent run's, about to be renamed: not touched
    assert fix(capsys, "m.py")[0] == 0
    assert path.read_text() == FIXED and sorted(p.name for p in here.iterdir()) == sorted(["m.py", running.name])
