"""The result cache and the worker pool change how fast a run is, never what it reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remat_lint.cache import result_cache as cache
from remat_lint.cache.result_cache import Cache
from remat_lint.cli.command import main
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import RuleSelection, Settings
from remat_lint.engine import runner

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
ROOT = Path(__file__).resolve().parents[2]
# REM008 is project-wide: b.py's name is declared in a.py (or, with the typo, nowhere).
DECLARES = "from jax.ad_checkpoint import checkpoint_name\ndef f(x):\n    return checkpoint_name(x, 'hidden')\n"
USES = "import jax\npolicy = jax.checkpoint_policies.save_only_these_names('{name}')\ng = jax.checkpoint(lambda x: x, policy=policy)\n"


def cli(*args: str, cwd: Path) -> tuple[int, list[tuple[str, int, str]]]:
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--output-format", "json", *args], cwd=cwd, capture_output=True, text=True
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, sorted((f["filename"], f["location"]["row"], f["code"]) for f in json.loads(proc.stdout))


def entries(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file() and p.parent.parent.parent == directory]


def test_warm_run_reports_the_same_and_edits_invalidate(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "a.py").write_text(DECLARES)
    (tmp_path / "b.py").write_text(USES.format(name="hidden"))
    cold = cli(".", cwd=tmp_path)
    assert cold == (1, [("bad.py", 2, "REM001")])
    assert entries(tmp_path / ".remat_lint_cache")
    assert cli(".", cwd=tmp_path) == cold  # warm: project-wide facts come from the cache too
    (tmp_path / "b.py").write_text(USES.format(name="hiden"))
    assert cli(".", cwd=tmp_path) == (1, [("b.py", 2, "REM008"), ("bad.py", 2, "REM001")])
    (tmp_path / "bad.py").write_text(BAD.replace("'dots_saveable'", "None"))
    assert cli(".", cwd=tmp_path) == (1, [("b.py", 2, "REM008")])


def test_a_moved_file_hit_in_the_cache_reports_its_project_wide_finding_at_its_new_path(tmp_path):
    # The cache key does not hold the path: the entry of b.py serves c.py, its candidate too.
    (tmp_path / "a.py").write_text(DECLARES)
    (tmp_path / "b.py").write_text(USES.format(name="hiden"))
    assert cli(".", cwd=tmp_path) == (1, [("b.py", 2, "REM008")])
    (tmp_path / "b.py").rename(tmp_path / "c.py")
    assert cli(".", cwd=tmp_path) == (1, [("c.py", 2, "REM008")])


def test_cache_key_covers_the_rule_selection(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    assert cli("bad.py", cwd=tmp_path)[1] == [("bad.py", 2, "REM001")]
    assert cli("--ignore", "REM001", "bad.py", cwd=tmp_path) == (0, [])


def test_no_cache_and_cache_dir(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    cli("--no-cache", "bad.py", cwd=tmp_path)
    assert not (tmp_path / ".remat_lint_cache").exists()
    (tmp_path / "pyproject.toml").write_text('[tool.remat-lint]\ncache-dir = "build/lint-cache"\n')
    cli("bad.py", cwd=tmp_path)
    assert entries(tmp_path / "build" / "lint-cache") and not (tmp_path / ".remat_lint_cache").exists()
    assert (tmp_path / "build" / "lint-cache" / "CACHEDIR.TAG").is_file()


def test_corrupt_entries_are_misses(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    cold = cli("bad.py", cwd=tmp_path)
    for entry in entries(tmp_path / ".remat_lint_cache"):
        entry.write_bytes(b"\x80garbage")
    assert cli("bad.py", cwd=tmp_path) == cold


def test_unwritable_cache_is_ignored(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / ".remat_lint_cache").write_text("a file where the directory should be")
    assert cli("bad.py", cwd=tmp_path) == (1, [("bad.py", 2, "REM001")])


def test_pool_gives_the_same_findings_in_the_same_order(monkeypatch, tmp_path):
    files = sorted(str(p) for p in (ROOT / "fixtures").rglob("*.py"))
    resolver = Resolver.of(Settings(root=ROOT, selection=[RuleSelection(extend_select=("REM301", "REM302"))]))
    serial = runner.run(files, resolver, jobs=1)
    monkeypatch.setattr(runner, "POOL_MIN_LINES", 0)
    pooled = runner.run(files, resolver, jobs=2, cache=Cache(tmp_path / "cache"))
    assert [(f.path, f.start, f.code, f.message) for f in pooled.findings] == [
        (f.path, f.start, f.code, f.message) for f in serial.findings
    ]
    warm = runner.run(files, resolver, jobs=2, cache=Cache(tmp_path / "cache"))
    assert [(f.path, f.start, f.code) for f in warm.findings] == [(f.path, f.start, f.code) for f in serial.findings]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_positive(tmp_path, value):
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "-j", value, "."], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2 and "--jobs" in proc.stderr


def test_entries_of_other_versions_are_pruned(tmp_path):
    old, recent = tmp_path / "0123456789abcdef", tmp_path / "fedcba9876543210"
    for directory in (old, recent):
        (directory / "ab").mkdir(parents=True)
    os.utime(old, (0, 0))
    cache = Cache(tmp_path)
    cache.put(cache.key(b"x", frozenset(), False), runner.FileResult("x.py"))
    assert not old.exists() and recent.exists() and cache.directory.exists()


# The result cache as a user sees it when writing an entry fails: the run reports as without a
# cache and leaves no temporary file. In-process (``cli.main``), so that mutation testing sees it;
# written against surviving mutants of ``remat_lint/cache/result_cache.py`` (docs/mutation-testing.md).


def test_a_failed_cache_write_reports_as_usual_and_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.pickle, "dumps", disk_full)  # as on a full disk
    assert main(["bad.py", "-j", "1", "--output-format", "concise", "-q"]) == 1
    assert capsys.readouterr().out == "bad.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy\n"
    left = [p.name for p in (tmp_path / ".remat_lint_cache").rglob("*") if p.is_file()]
    assert sorted(left) == [".gitignore", "CACHEDIR.TAG"]
