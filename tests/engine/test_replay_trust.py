"""Only what a real run of this user recorded is replayed (remat_lint/cache/replay.py, docs/cache.md):
forged records, records in a parent's cache folder, invocations that are never recorded, stale
inputs, untrusted folders, and where the cache folder is (--cache-dir, REMAT_LINT_CACHE_DIR)."""

from __future__ import annotations

import marshal
import os
import pickle
import subprocess
from pathlib import Path

import pytest

import remat_lint
from remat_lint.cache import recording, replay
from remat_lint.cache import result_cache as cache
from remat_lint.cli import command as cli
from remat_lint.engine.results import FileResult
from tests.engine import test_replay
from tests.engine.test_replay import BAD, QUIET, age, primed

lint, project = test_replay.lint, test_replay.project  # the fixtures of test_replay, here too

PASSED = ((2, "All checks passed!\n"),)


def forge(folder: Path, argv: list[str], secret: bytes, inputs: tuple = ()) -> Path:
    """A record saying the invocation passed, in ``folder``'s replay folder, signed with ``secret``."""
    invocation = replay.Invocation(replay.key(argv), str(folder), [])
    payload = marshal.dumps((replay.FORMAT, invocation.key, inputs, PASSED, 0))
    path = Path(replay.record_path(invocation, secret))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(replay.tag(secret, payload) + payload)
    return path


def full_inputs(*paths: str) -> tuple:
    """Inputs a record must list: the linted paths and the linter's folder, as they are now."""
    return tuple(
        (path, True, True, replay.signature(path)) for path in [*map(os.path.abspath, paths), replay.own_folder()]
    )


def test_a_record_signed_with_another_secret_is_never_replayed(project, lint):
    for folder in (project / ".remat_lint_cache", project.parent / ".remat_lint_cache"):
        forge(folder, ["pkg"], os.urandom(replay.SECRET_BYTES), full_inputs("pkg"))
    run = lint("pkg")
    assert not run.replayed and run.code == 1 and "REM001" in run.out


def test_a_record_without_the_linted_paths_or_the_linters_folder_is_not_replayed(project, lint):
    secret = replay.secret(create=True)
    for inputs in ((), full_inputs("pkg")[:1], full_inputs("pkg")[1:]):
        forge(project / ".remat_lint_cache", ["pkg"], secret, inputs)
        run = lint("pkg")
        assert not run.replayed and run.code == 1
    forge(project / ".remat_lint_cache", ["pkg"], secret, full_inputs("pkg"))
    assert lint("pkg").replayed  # the shape the tests above forge is one a replay reads


def test_a_record_whose_bytes_were_changed_after_signing_is_not_replayed(project, lint):
    """Its place is named with the secret, so only the tag tells a record edited there."""
    primed(lint, "pkg")
    (path,) = (project / ".remat_lint_cache" / replay.DIRECTORY).iterdir()
    data = path.read_bytes()
    tag, payload = data[: replay.TAG_BYTES], data[replay.TAG_BYTES :]
    record = marshal.loads(payload)
    path.write_bytes(tag + marshal.dumps((*record[:3], PASSED, 0)))  # "passed", under the old tag
    run = lint("pkg")
    assert not run.replayed and run.code == 1 and "REM001" in run.out


def test_a_record_moved_to_another_invocations_place_is_not_replayed(project, lint):
    primed(lint, "pkg")
    quiet = primed(lint, "--exit-zero", "pkg")
    folder = project / ".remat_lint_cache" / replay.DIRECTORY
    secret = replay.secret()
    assert secret is not None
    places = {
        argv[0]: Path(
            replay.record_path(replay.Invocation(replay.key(argv), str(project / ".remat_lint_cache"), []), secret)
        )
        for argv in (["--exit-zero", "pkg"], ["pkg"])
    }
    assert sorted(folder.iterdir()) == sorted(places.values())
    places["--exit-zero"].replace(places["pkg"])  # the exit-zero run's output (and code 0) under pkg's name
    run = lint("pkg")
    assert not run.replayed and run.code == 1 and quiet.code == 0


def test_a_record_in_a_parent_folders_cache_is_not_looked_for(project, lint):
    forge(project.parent / ".remat_lint_cache", ["pkg"], replay.secret(create=True), full_inputs("pkg"))
    run = lint("pkg")
    assert not run.replayed and run.code == 1


NEVER_RECORDED = [
    ["--fix", "pkg"],
    ["--diff", "pkg"],
    ["--add-noqa", "pkg"],
    ["--trace", "pkg"],
    ["-o", "out.txt", "pkg"],
    ["--output-file=out.txt", "pkg"],
    ["--fi", "pkg"],
    ["--no-cache", "pkg"],
    ["--show-files", "pkg"],
    ["--extra-output", "json=out.json", "pkg"],
    ["--output-format", "github", "--stdin-filename", "x.py", "pkg"],
    ["--quiet=1", "pkg"],
    ["--select"],
    ["-"],
    ["--", "-"],  # stdin after the end of options too
    ["rule", "REM001"],
]


@pytest.mark.parametrize("argv", NEVER_RECORDED, ids=" ".join)
def test_an_invocation_that_is_never_recorded_is_never_replayed(project, argv, monkeypatch):
    assert replay.plan(argv) is None
    secret = replay.secret(create=True)
    for folder in (project / ".remat_lint_cache", project.parent / ".remat_lint_cache"):
        forge(folder, argv, secret, full_inputs("pkg"))
    monkeypatch.setattr(replay, "replay", lambda invocation: pytest.fail("a record was looked for"))
    from remat_lint.cli import launch

    monkeypatch.setattr(cli, "main", lambda argv: 7)
    assert launch.main(argv) == 7


def test_fix_and_github_output_with_forged_records_still_report_and_fix(project, lint):
    secret = replay.secret(create=True)
    for argv in (["--output-format", "github", "pkg"], ["--fix", "pkg"]):
        for folder in (project / ".remat_lint_cache", project.parent / ".remat_lint_cache"):
            forge(folder, argv, os.urandom(replay.SECRET_BYTES), full_inputs("pkg"))
            forge(folder, argv, secret)  # no inputs
    github = lint("--output-format", "github", "pkg")
    assert not github.replayed and github.code == 1 and "::error" in github.out
    fixed = lint("--fix", "pkg")
    assert not fixed.replayed and "jax.checkpoint_policies.dots_saveable" in (project / "pkg" / "model.py").read_text()


def test_a_cache_folder_others_may_write_to_is_not_trusted(project, lint):
    primed(lint, "pkg")
    folder = project / ".remat_lint_cache"
    folder.chmod(0o777)
    run = lint("pkg")
    assert not run.replayed and run.code == 1
    folder.chmod(0o755)
    assert lint("pkg").replayed


def test_the_secret_is_made_once_the_users_alone_and_a_shared_one_is_not_used(project, lint, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    primed(lint, "pkg")
    secret = tmp_path / "xdg" / "remat-lint" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == replay.SECRET_BYTES
    assert [p.name for p in secret.parent.iterdir()] == ["secret"]  # no temporary left
    for mode in (0o644, 0o640):  # others, or the group, can read it: they could sign a record
        secret.chmod(mode)
        assert not lint("pkg").replayed
        assert not lint("pkg").replayed


# The second: no racy window at all (a change time read from the kernel's coarse clock may fall
# before the run's start): the signature taken when the file was first read still tells.
@pytest.mark.parametrize("racy_ns", [0, -60_000_000_000])
def test_a_file_rewritten_during_the_run_with_its_times_restored_does_not_replay_stale_output(
    project, lint, monkeypatch, tmp_path, racy_ns
):
    monkeypatch.setattr(recording, "RACY_NS", racy_ns)
    report = cli._report
    model, copy = project / "pkg" / "model.py", tmp_path / "model.py"
    copy.write_text(QUIET)
    st = model.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same times: only the change time tells

    def rewriting(*args, **kwargs):  # another process (the run's own writes keep it from a record) copies it in
        subprocess.run(["cp", "-p", str(copy), str(model)], check=True)
        return report(*args, **kwargs)

    monkeypatch.setattr(cli, "_report", rewriting)
    assert lint("pkg").code == 1  # linted the old text
    monkeypatch.setattr(cli, "_report", report)
    after = lint("pkg")
    assert not after.replayed and after.code == 0


def test_a_forged_result_cache_entry_is_never_unpickled(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    store = cache.Cache(tmp_path / "cache")
    key = store.key(BAD.encode(), frozenset({"REM001"}), False)
    store.put(key, FileResult(path="model.py", findings=[]))
    assert store.get(key, "model.py") is not None
    entry = store._path(key)
    payload = pickle.dumps(Payload())
    for forged in (
        bytes(replay.TAG_BYTES) + payload,
        replay.tag(os.urandom(replay.SECRET_BYTES), key.encode() + b"\0" + payload) + payload,
    ):
        entry.write_bytes(forged)
        assert store.get(key, "model.py") is None
    assert not marker.exists()


def test_cache_dir_option_and_variable_name_the_cache_folder(project, lint, monkeypatch):
    assert primed(lint, "--cache-dir", "build/lint", "pkg").code == 1
    assert (project / "build" / "lint" / "replay").is_dir() and not (project / ".remat_lint_cache").exists()
    monkeypatch.setenv("REMAT_LINT_CACHE_DIR", str(project / "env-cache"))
    assert primed(lint, "pkg").code == 1
    assert (project / "env-cache" / "replay").is_dir() and not (project / ".remat_lint_cache").exists()
    lint("--cache-dir", "cli-cache", "pkg")  # the option over the variable
    assert (project / "cli-cache").is_dir()


def test_cache_dir_variable_over_the_configuration(project, lint, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\ncache-dir = "from-config"\n')
    age(project)
    lint("pkg")
    assert (project / "from-config").is_dir() and not (project / ".remat_lint_cache").exists()
    assert not lint("pkg").replayed  # the launcher reads records only where the invocation names them
    monkeypatch.setenv("REMAT_LINT_CACHE_DIR", "env-cache")
    assert primed(lint, "pkg").code == 1
    assert (project / "env-cache" / "replay").is_dir()


def test_the_cache_folder_of_the_cli_and_the_flake8_plugin(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REMAT_LINT_CACHE_DIR", raising=False)
    root = tmp_path / "project"
    assert cache.folder(root, None) == root / ".remat_lint_cache"
    assert cache.folder(root, "build/c") == root / "build" / "c"  # the configuration's: from the project's root
    monkeypatch.setenv("REMAT_LINT_CACHE_DIR", "env")
    assert cache.folder(root, "build/c") == tmp_path / "env"  # the variable's: from the working directory
    assert cache.folder(root, "build/c", "cli") == tmp_path / "cli"


def test_a_record_lists_the_whole_package_folder_among_its_inputs():
    """The folder a replay lists is remat_lint/ itself, not the cache/ folder its module sits in."""
    assert replay.own_folder() == os.path.dirname(os.path.abspath(remat_lint.__file__))
