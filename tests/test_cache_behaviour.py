"""The result cache as a user sees it when writing an entry fails: the run reports as without a
cache and leaves no temporary file. In-process (``cli.main``), so that mutation testing sees it;
written against surviving mutants of ``remat_lint/cache.py`` (docs/mutation-testing.md)."""

from __future__ import annotations

from remat_lint import cache, cli

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def test_a_failed_cache_write_reports_as_usual_and_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.pickle, "dumps", disk_full)  # as on a full disk
    assert cli.main(["bad.py", "-j", "1", "--output-format", "concise", "-q"]) == 1
    assert capsys.readouterr().out == "bad.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy\n"
    left = [p.name for p in (tmp_path / ".remat_lint_cache").rglob("*") if p.is_file()]
    assert sorted(left) == [".gitignore", "CACHEDIR.TAG"]
