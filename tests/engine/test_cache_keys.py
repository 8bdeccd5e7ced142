"""A cached result is served only when nothing that changes findings changed: the file's bytes, the
codes linted in it (selection, per-file settings), whether it is test code, the codes whose
project-wide facts are collected, and the linter itself (its version). Each test fills the cache,
changes one input and checks the warm run reports what a cold run would. Run in-process so that a
mutation run sees the cache code under test."""

from __future__ import annotations

import json
import os
import pickle
import re
from pathlib import Path

import pytest

from remat_lint.cache import replay
from remat_lint.cache import result_cache as cache_module
from remat_lint.cache.result_cache import Cache
from remat_lint.cli import command as cli
from remat_lint.engine.results import FileResult

DISCARDED = "import jax\ndef f(x):\n    return x\njax.checkpoint(f)\n"  # REM007, quiet in test files
POLICY = "import jax\ng = jax.remat(lambda x: x, policy='dots_saveable')\n"  # REM001 (REM302 when selected)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    """Findings of a run with the cache on (the default): (path, row, code)."""
    code = cli.main(["--output-format", "json", "-j", "1", *args])
    found = json.loads(capsys.readouterr().out)
    assert code == (1 if found else 0)
    return sorted((f["filename"], f["location"]["row"], f["code"]) for f in found)


def cache_entries(root: Path) -> list[Path]:
    """The entries under a cache directory (``<fingerprint>/<key[:2]>/<key>``)."""
    return [p for p in root.glob("*/*/*") if p.is_file()]


def poison(root: Path) -> None:
    """Replace every entry with an empty result, so a run that is served from the cache shows it."""
    entries = cache_entries(root / cache_module.DEFAULT_DIR)
    assert entries, "nothing was cached"
    payload, secret = pickle.dumps(FileResult("x.py")), replay.secret()
    assert secret is not None
    for entry in entries:  # signed as the user's linter signs an entry (cache._tag): else never read
        entry.write_bytes(replay.tag(secret, entry.name.encode() + b"\0" + payload) + payload)


def test_a_warm_run_is_served_from_the_cache(project, capsys):
    (project / "m.py").write_text(DISCARDED)
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]
    poison(project)
    assert lint(capsys, "m.py") == []  # the (poisoned) entry was read: the tests below can trust a miss


@pytest.mark.parametrize(
    ("first", "second"), [("src/model.py", "tests/test_model.py"), ("tests/test_model.py", "src/model.py")]
)
def test_same_bytes_as_test_code_and_as_library_code_do_not_share_entries(project, capsys, first, second):
    for name in (first, second):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(DISCARDED)
    expected = {"src/model.py": [("src/model.py", 4, "REM007")], "tests/test_model.py": []}
    assert lint(capsys, first) == expected[first]
    assert lint(capsys, second) == expected[second]


def test_test_paths_setting_changes_what_is_test_code(project, capsys):
    (project / "m.py").write_text(DISCARDED)
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]
    (project / "pyproject.toml").write_text('[tool.remat-lint]\ntest-paths = ["m.py"]\n')
    assert lint(capsys, "m.py") == []


def test_edited_bytes_are_linted_again(project, capsys):
    (project / "m.py").write_text(DISCARDED)
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]
    (project / "m.py").write_text(DISCARDED.replace("jax.checkpoint(f)", "g = jax.checkpoint(f)"))
    assert lint(capsys, "m.py") == []
    (project / "m.py").write_text(DISCARDED)
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]


def test_selection_on_the_command_line(project, capsys):
    (project / "m.py").write_text(POLICY)
    assert lint(capsys, "m.py") == [("m.py", 2, "REM001")]
    assert lint(capsys, "--ignore", "REM001", "m.py") == []
    assert lint(capsys, "--extend-select", "REM302", "m.py") == [("m.py", 2, "REM001"), ("m.py", 2, "REM302")]
    assert lint(capsys, "m.py") == [("m.py", 2, "REM001")]


def test_per_file_settings(project, capsys):
    (project / "gen_m.py").write_text(POLICY)
    assert lint(capsys, "gen_m.py") == [("gen_m.py", 2, "REM001")]
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nper-file-ignores = {"gen_*.py" = ["REM001"]}\n')
    assert lint(capsys, "gen_m.py") == []
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend-select = ["REM302"]\n')
    assert lint(capsys, "gen_m.py") == [("gen_m.py", 2, "REM001"), ("gen_m.py", 2, "REM302")]


def test_another_version_never_reads_the_entries(project, capsys, monkeypatch):
    (project / "m.py").write_text(DISCARDED)
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]
    poison(project)  # stands for what an older remat-lint found
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    assert lint(capsys, "m.py") == [("m.py", 4, "REM007")]


def test_every_input_of_the_key_changes_it(tmp_path):
    cache = Cache(tmp_path)
    base = {
        "data": b"import jax\n",
        "codes": frozenset({"REM001"}),
        "is_test_file": False,
        "facts": frozenset({"REM008"}),
    }
    changed = [
        {"data": b"import jax \n"},
        {"codes": frozenset({"REM001", "REM002"})},
        {"codes": frozenset()},
        {"is_test_file": True},
        {"facts": frozenset()},
    ]
    keys = [cache.key(**base)] + [cache.key(**{**base, **change}) for change in changed]
    assert len(set(keys)) == len(keys)
    assert cache.key(**base) == cache.key(**{**base, "codes": frozenset({"REM001"})})  # deterministic


def test_fingerprint_covers_version_and_python(monkeypatch):
    before = cache_module.code_fingerprint()
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    assert cache_module.code_fingerprint() != before
    monkeypatch.setattr(cache_module.sys, "version", "0.0.1 (other)")
    bumped = cache_module.code_fingerprint()
    monkeypatch.setattr(cache_module.sys, "version", "0.0.2 (other)")
    assert cache_module.code_fingerprint() != bumped


def test_an_entry_is_read_back_under_the_new_path(tmp_path):
    from remat_lint.findings import Finding, Position, Severity

    cache = Cache(tmp_path / "cache")
    finding = Finding(
        "REM007", "discarded-checkpoint", Severity.ERROR, "msg", "old/m.py", Position(4, 0), Position(4, 17)
    )
    key = cache.key(b"x", frozenset({"REM007"}), False)
    cache.put(key, FileResult("old/m.py", [finding], parsed=True))
    result = cache.get(key, "new/m.py")
    assert result is not None and result.path == "new/m.py"
    assert [(f.path, f.code, f.start) for f in result.findings] == [("new/m.py", "REM007", Position(4, 0))]
    assert cache.get(cache.key(b"y", frozenset({"REM007"}), False), "new/m.py") is None
    assert (tmp_path / "cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert (tmp_path / "cache" / ".gitignore").read_text() == "# Created by remat-lint\n*\n"


def test_fingerprint_covers_the_package_sources(tmp_path, monkeypatch):
    """An edited rule invalidates the cache without a version bump; bytecode and other files do not."""
    import remat_lint.rules

    (tmp_path / "sub").mkdir()
    (tmp_path / "rem999_x.py").write_text("x = 1\n")
    (tmp_path / "sub" / "helper.py").write_text("y = 1\n")
    monkeypatch.setattr(remat_lint.rules, "__path__", [str(tmp_path)])
    before = cache_module.code_fingerprint()
    assert cache_module.code_fingerprint() == before
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "rem999_x.py").write_text("stale\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    assert cache_module.code_fingerprint() == before
    (tmp_path / "sub" / "helper.py").write_text("y = 22\n")
    edited = cache_module.code_fingerprint()
    assert edited != before
    os.utime(tmp_path / "rem999_x.py", ns=(0, 0))  # same size, other mtime (a checkout, an editor's save)
    assert cache_module.code_fingerprint() != edited
    assert re.fullmatch(r"[0-9a-f]{16}", edited)


def test_an_unusable_cache_is_switched_off_for_the_run(tmp_path):
    (tmp_path / "cache").write_text("a file where the directory should be")
    cache = Cache(tmp_path / "cache")
    key = cache.key(b"x", frozenset({"REM007"}), False)
    cache.put(key, FileResult("m.py"))  # no exception: the cache is an optimisation only
    assert cache.enabled is False and cache.get(key, "m.py") is None


def test_unreadable_or_foreign_entries_are_misses(tmp_path):
    cache = Cache(tmp_path / "cache")
    key = cache.key(b"x", frozenset({"REM007"}), False)
    cache.put(key, FileResult("m.py"))
    [entry] = cache_entries(tmp_path / "cache")
    assert not [p for p in entry.parent.iterdir() if p != entry]  # no temporary file left behind
    entry.write_bytes(b"\x80garbage")
    assert cache.get(key, "m.py") is None
    entry.write_bytes(pickle.dumps({"not": "a result"}))
    assert cache.get(key, "m.py") is None


def test_a_nested_cache_dir_is_created_and_entries_share_folders(tmp_path):
    cache = Cache(tmp_path / "build" / "lint-cache")  # cache-dir = "build/lint-cache" in a fresh checkout
    by_folder: dict[str, list[str]] = {}
    for i in range(64):  # sha256 keys: some two of them share a folder (key[:2])
        key = cache.key(str(i).encode(), frozenset(), False)
        by_folder.setdefault(key[:2], []).append(key)
    first, twin = next(keys for keys in by_folder.values() if len(keys) > 1)[:2]
    for key in (first, twin):
        cache.put(key, FileResult(f"{key}.py"))
    assert cache.enabled
    assert [cache.get(key, "m.py") is not None for key in (first, twin)] == [True, True]
