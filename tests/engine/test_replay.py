"""An unchanged invocation replays its last output (remat_lint/cache/replay.py): byte for byte, with the
same exit code; never after anything it read, listed or looked for has changed."""

from __future__ import annotations

import io
import marshal
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from remat_lint.cache import recording, replay
from remat_lint.cache import result_cache as cache
from remat_lint.cli import command as cli
from remat_lint.cli import launch

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
QUIET = "import jax\ng = jax.checkpoint(lambda x: x, policy= dots_saveable )\n"  # as long as BAD, no finding
assert len(QUIET) == len(BAD)


@dataclass
class Run:
    code: int
    out: str
    err: str
    replayed: bool  # the linter did not run


def age(*paths: Path) -> None:
    """Date the paths (and everything under them) a minute back: not 'racy', so a run records them."""
    past = time.time_ns() - 60_000_000_000
    for path in paths:
        for item in [path, *path.rglob("*")]:
            os.utime(item, ns=(past, past), follow_symlinks=False)


@pytest.fixture
def lint(monkeypatch, capsys, tmp_path) -> Callable[..., Run]:
    """Runs the launcher in this process. The linter's code is one aged file here: an engineer
    editing a rule beside a test run would make the real files 'racy'."""
    code = tmp_path / "code.py"
    code.write_text("x = 1\n")
    age(code)
    monkeypatch.setattr(cache, "code_paths", lambda: [(str(tmp_path), str(code))])
    # A file's change time cannot be set back as age() sets its modification time: the racy
    # window is the run's own here, its width is tested on its own.
    monkeypatch.setattr(recording, "RACY_NS", 0)
    runs = []
    real = cli.main
    monkeypatch.setattr(cli, "main", lambda argv: runs.append(argv) or real(argv))

    def run(*args: str) -> Run:
        before = len(runs)
        code = launch.main(list(args))
        out, err = capsys.readouterr()
        return Run(code, out, err, replayed=len(runs) == before)

    return run


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "model.py").write_text(BAD)
    (root / "pkg" / "clean.py").write_text("x = 1\n")
    age(tmp_path)
    monkeypatch.chdir(root)
    return root


def primed(lint: Callable[..., Run], *args: str) -> Run:
    """The first run's result, once the next identical run has replayed it."""
    first = lint(*args)
    assert not first.replayed
    again = lint(*args)
    assert again.replayed and (again.code, again.out, again.err) == (first.code, first.out, first.err)
    return first


def test_replay_prints_what_the_run_printed_with_its_exit_code(project, lint):
    findings = primed(lint, "pkg")
    assert (
        findings.code == 1 and "pkg/model.py:2:5: REM001" in findings.out and findings.err.startswith("Found 1 error")
    )
    clean = primed(lint, "--output-format", "concise", "pkg/clean.py")
    assert (clean.code, clean.out, clean.err) == (0, "", "All checks passed!\n")


def _edit_keeping_size_and_time(root: Path) -> None:
    path = root / "pkg" / "model.py"
    st = path.stat()
    path.write_text(QUIET)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _touch(root: Path) -> None:
    os.utime(root / "pkg" / "model.py", ns=(time.time_ns() - 30_000_000_000,) * 2)


def _new_file(root: Path) -> None:
    (root / "pkg" / "new.py").write_text(BAD)


def _config_in_the_folder(root: Path) -> None:
    (root / "pkg" / "pyproject.toml").write_text('[tool.remat-lint]\nignore = ["REM001"]\n')


def _config_above_the_working_directory(root: Path) -> None:
    (root.parent / "remat-lint.toml").write_text('ignore = ["REM001"]\n')


def _ignore_file_in_the_folder(root: Path) -> None:
    (root / "pkg" / ".ignore").write_text("model.py\n")


def _ignore_file_above_the_working_directory(root: Path) -> None:
    (root.parent / ".ignore").write_text("model.py\n")


@pytest.mark.parametrize(
    "change",
    [
        _edit_keeping_size_and_time,
        _touch,
        _new_file,
        _config_in_the_folder,
        _config_above_the_working_directory,
        _ignore_file_in_the_folder,
        _ignore_file_above_the_working_directory,
    ],
)
def test_a_changed_input_is_linted_again(project, lint, change):
    before = primed(lint, "pkg")
    change(project)
    after = lint("pkg")
    assert not after.replayed and (after.code, after.out) == (
        lint("--no-cache", "pkg").code,
        lint("--no-cache", "pkg").out,
    )
    assert (after.out == before.out) == (change is _touch)  # the others change the findings


def test_an_edited_configuration_is_read_again(project, lint):
    config = project / "pyproject.toml"
    config.write_text("[tool.remat-lint]\n")
    age(config, project)
    assert primed(lint, "pkg").code == 1
    config.write_text('[tool.remat-lint]\nignore = ["REM001"]\n')
    age(config)
    after = lint("pkg")
    assert not after.replayed and after.code == 0


def test_the_environment_the_terminal_and_the_arguments_are_part_of_the_invocation(project, lint, monkeypatch):
    plain = primed(lint, "pkg")
    assert "\x1b[" not in plain.out
    monkeypatch.setenv("FORCE_COLOR", "1")
    forced = lint("pkg")
    assert not forced.replayed and "\x1b[" in forced.out
    monkeypatch.delenv("FORCE_COLOR")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, pipe = Terminal(), sys.stdout
    sys.stdout = terminal
    try:
        assert not lint("pkg").replayed and "\x1b[" in terminal.getvalue()
    finally:
        sys.stdout = pipe
    assert not lint("--output-format", "json", "pkg").replayed


def test_a_change_of_the_linters_code_is_a_miss(project, lint, tmp_path):
    primed(lint, "pkg")
    (tmp_path / "code.py").write_text("x = 2\n")
    age(tmp_path / "code.py")
    assert not lint("pkg").replayed


def test_a_file_changed_within_the_timestamp_granularity_is_not_recorded(project, lint, monkeypatch):
    monkeypatch.setattr(recording, "RACY_NS", 300_000_000)  # narrower than the real one: the test waits it out
    (project / "pkg" / "model.py").write_text(BAD.replace("g =", "h ="))  # now: its next edit may keep this time
    assert not lint("pkg").replayed
    assert not lint("pkg").replayed
    age(project / "pkg" / "model.py")  # its modification time: its change time is now
    assert not lint("pkg").replayed
    assert not lint("pkg").replayed
    time.sleep(0.35)
    primed(lint, "pkg")


@pytest.mark.parametrize(
    "args",
    [
        ["--no-cache"],
        ["--fix"],
        ["--diff"],
        ["--trace"],
        ["-o", "report.txt"],
        ["--output-file=report.txt"],
        ["--extra-output", "json=report.json"],
    ],
)
def test_a_run_that_writes_or_skips_the_cache_never_replays(project, lint, args):
    first = lint(*args, "pkg/clean.py")  # nothing to fix: the file stays as it is
    again = lint(*args, "pkg/clean.py")
    assert not again.replayed and (again.code, again.out) == (first.code, first.out)
    assert not (project / ".remat_lint_cache" / "replay").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked on Linux only")
@pytest.mark.parametrize("unseen", ["prints", "reads"])
def test_a_run_whose_forked_worker_prints_or_reads_is_not_recorded(project, lint, monkeypatch, unseen):
    report = cli._report

    def forking(*args, **kwargs):
        pid = os.fork()
        if pid == 0:  # a worker: what it does is not seen by the run that records
            if unseen == "prints":
                print("a warning", file=sys.stderr)
            else:
                (project / "pkg" / "clean.py").read_text()
            os._exit(0)
        os.waitpid(pid, 0)
        return report(*args, **kwargs)

    monkeypatch.setattr(cli, "_report", forking)
    lint("pkg")
    assert not lint("pkg").replayed
    monkeypatch.setattr(cli, "_report", report)
    lint("pkg")
    assert lint("pkg").replayed


def test_a_run_that_writes_a_file_besides_the_cache_is_not_recorded(project, lint, monkeypatch):
    report = cli._report

    def logging(*args, **kwargs):
        (project / "lint.log").write_text("linted\n")
        return report(*args, **kwargs)

    monkeypatch.setattr(cli, "_report", logging)
    lint("pkg")
    assert not lint("pkg").replayed


def test_stdin_is_never_replayed(project, lint, monkeypatch):
    for _ in range(2):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BAD.encode())))
        run = lint("-")
        assert not run.replayed and run.code == 1


def test_a_corrupt_or_foreign_record_is_a_miss(project, lint):
    first = primed(lint, "pkg")
    [record] = (project / ".remat_lint_cache" / "replay").iterdir()
    for content in (
        b"\x00garbage",
        marshal.dumps(("another format", "key", (), ((1, "forged\n"),), 0)),
        record.read_bytes()[:-9],
    ):
        record.write_bytes(content)
        run = lint("pkg")
        assert not run.replayed and (run.code, run.out, run.err) == (first.code, first.out, first.err)
    assert lint("pkg").replayed  # written again


LOSSES = """
import jax
import jax.numpy as jnp


@jax.checkpoint
def loss_fn(params, x):
    return jnp.sum(jnp.tanh(x @ params))
"""
TRAIN = "import jax\nfrom .losses import loss_fn\n\n\ndef step(params, x):\n    return jax.value_and_grad(loss_fn)(params, x)\n"


def test_editing_the_module_a_finding_depends_on_is_a_miss(tmp_path, lint, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "losses.py").write_text(textwrap.dedent(LOSSES))
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    age(tmp_path)
    monkeypatch.chdir(tmp_path)
    staged = ["--select", "ALL", "--output-format", "concise", "pkg/losses.py"]  # train.py is not named
    lint(*staged)
    age(tmp_path)  # the cache was just made in the project's folder, which the project pass lists
    assert "REM101" in primed(lint, *staged).out
    (tmp_path / "pkg" / "train.py").write_text(TRAIN.replace("jax.value_and_grad(loss_fn)", "loss_fn"))
    after = lint(*staged)
    assert not after.replayed and "REM101" not in after.out


SHOW_IMPORTS = (
    "import sys\nfrom remat_lint.cli.launch import main\ncode = main()\n"
    "print(sorted(m for m in sys.modules if m.startswith('remat_lint') or m in ('hashlib', 'argparse')), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def test_the_launcher_replays_importing_nothing_but_itself(project):
    def launch_(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-c", SHOW_IMPORTS, *args], cwd=project, capture_output=True)

    time.sleep(recording.RACY_NS / 1e9)  # the project's files were just made: their change times are 'racy'
    first = launch_("pkg")  # creates the cache in the working directory, which Python lists for imports
    replayed = str(
        ["remat_lint", "remat_lint.cache", "remat_lint.cache.replay"]
        + ["remat_lint.cli", "remat_lint.cli.broken_pipe", "remat_lint.cli.launch"]
    )
    for _ in range(3):  # a run records unless someone edited remat-lint's code in the last 2 s (a shared tree)
        again = launch_("pkg")
        if again.stderr.decode().splitlines()[-1] == replayed:
            break
    assert first.returncode == again.returncode == 1
    assert again.stdout == first.stdout and b"REM001" in first.stdout
    assert (
        again.stderr.splitlines()[:-1]
        == first.stderr.splitlines()[:-1]
        == [b"Found 1 error.", b"[*] 1 fixable with the `--fix` option."]
    )
    assert "remat_lint.cli.command" in first.stderr.decode()
    assert again.stderr.decode().splitlines()[-1] == replayed
    [record] = (project / ".remat_lint_cache" / "replay").iterdir()
    inputs = {path for path, *_ in marshal.loads(record.read_bytes()[replay.TAG_BYTES :])[2]}
    assert {path for _, path in cache.code_paths()} <= inputs  # the linter's own code
    module = subprocess.run([sys.executable, "-m", "remat_lint", "pkg"], cwd=project, capture_output=True)
    assert (module.returncode, module.stdout) == (1, first.stdout)


# Replays (remat_lint/cache/replay.py, recording.py) pinned where hand-made edits of 2026-11-25 passed
# tests/engine/test_replay.py: the invocation's key (working directory, HOME, import path), records found
# from a subfolder, the newest records kept, and runs that must leave no record (a write opened
# read-write, bytes printed past the text stream, an error exit, a probe relative to a folder
# descriptor, a folder listed with os.listdir).


def test_the_working_directory_is_part_of_the_invocation_and_a_record_is_found_only_in_the_named_cache_folder(
    tmp_path, lint, monkeypatch
):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.remat-lint]\n")  # the cache is made here, above sub/
    (root / "model.py").write_text(BAD)
    (root / "sub" / "model.py").write_text(QUIET)
    age(tmp_path)
    monkeypatch.chdir(root)
    assert primed(lint, "model.py").code == 1
    monkeypatch.chdir(root / "sub")
    here = lint("model.py")  # the same arguments name another file
    assert not here.replayed and (here.code, here.out) == (0, "")
    again = lint("model.py")  # sub/.remat_lint_cache is where a record would be: the cache is root's, no record
    assert not again.replayed and (again.code, again.out) == (0, "")
    assert primed(lint, "--cache-dir", "../.remat_lint_cache", "model.py").code == 0  # named: recorded there
    absolute = str(root / "model.py")  # the same file from both folders, shown relative to each
    monkeypatch.chdir(root)
    assert primed(lint, absolute).out.startswith("model.py:2:5: REM001")
    monkeypatch.chdir(root / "sub")
    there = lint("--cache-dir", "../.remat_lint_cache", absolute)
    assert not there.replayed and there.out.startswith(f"{absolute}:2:5: REM001")


def test_home_is_part_of_the_invocation(project, lint, monkeypatch, tmp_path):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend = "~/remat-lint.toml"\n')
    for home, ignore in (("a", "[]"), ("b", '["REM001"]')):
        (tmp_path / home).mkdir()
        (tmp_path / home / "remat-lint.toml").write_text(f"ignore = {ignore}\n")
    age(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "a"))
    assert primed(lint, "pkg").code == 1
    monkeypatch.setenv("HOME", str(tmp_path / "b"))
    other = lint("pkg")
    assert not other.replayed and (other.code, other.out) == (0, "")


def test_the_import_path_is_part_of_the_invocation(project, monkeypatch, tmp_path):
    before = replay.key(["pkg"])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert replay.key(["pkg"]) != before


def test_the_newest_records_are_kept(project, lint, monkeypatch):
    monkeypatch.setattr(replay, "KEPT", 1)
    lint("pkg/model.py")
    lint("pkg/clean.py")  # newer: the record of pkg/model.py goes
    assert lint("pkg/clean.py").replayed
    assert not lint("pkg/model.py").replayed


def _open_read_write(project: Path) -> None:
    log = project / "lint.log"
    times = log.stat().st_atime_ns, log.stat().st_mtime_ns
    with open(log, "r+") as handle:
        handle.write("linted\n")
    os.utime(log, ns=times)  # not 'racy': only its opening for writing keeps the run from a record


def _print_bytes(project: Path) -> None:
    sys.stdout.buffer.write(b"past the text stream\n")


def _probe_by_folder_descriptor(project: Path) -> None:
    folder = os.open(project / "pkg", os.O_RDONLY)
    try:
        os.stat("clean.py", dir_fd=folder)
    finally:
        os.close(folder)


@pytest.mark.parametrize("unrecorded", [_open_read_write, _print_bytes, _probe_by_folder_descriptor])
def test_a_run_that_does_what_a_record_cannot_hold_is_not_recorded(project, lint, monkeypatch, unrecorded):
    (project / "lint.log").write_text("")
    age(project / "lint.log")
    report = cli._report

    def reporting(*args, **kwargs):
        unrecorded(project)
        return report(*args, **kwargs)

    monkeypatch.setattr(cli, "_report", reporting)
    lint("pkg")
    assert not lint("pkg").replayed


def test_a_run_that_exits_with_an_error_is_not_recorded(project, lint, monkeypatch):
    monkeypatch.setattr(cli, "_report", lambda *args, **kwargs: cli.EXIT_ERROR)
    assert lint("pkg").code == cli.EXIT_ERROR
    again = lint("pkg")
    assert not again.replayed and again.code == cli.EXIT_ERROR


def test_a_folder_listed_with_listdir_is_an_input(project, lint, monkeypatch):
    (project / "other").mkdir()
    age(project)
    report = cli._report

    def counting(*args, **kwargs):
        print(f"{len(os.listdir(project / 'other'))} entries")
        return report(*args, **kwargs)

    monkeypatch.setattr(cli, "_report", counting)
    assert primed(lint, "pkg").out.startswith("0 entries")
    (project / "other" / "new.txt").write_text("")
    after = lint("pkg")
    assert not after.replayed and after.out.startswith("1 entries")
