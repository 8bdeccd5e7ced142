"""Replays (remat_lint/replay.py, recording.py) pinned where hand-made edits of 2026-11-25 passed
tests/test_replay.py: the invocation's key (working directory, HOME, import path), records found
from a subfolder, the newest records kept, and runs that must leave no record (a write opened
read-write, bytes printed past the text stream, an error exit, a probe relative to a folder
descriptor, a folder listed with os.listdir)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from remat_lint import cli, replay
from tests import test_replay
from tests.test_replay import BAD, QUIET, age, primed

lint, project = test_replay.lint, test_replay.project  # the fixtures of test_replay, here too


def test_the_working_directory_is_part_of_the_invocation_and_a_record_is_found_only_in_the_named_cache_folder(tmp_path, lint, monkeypatch):
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
