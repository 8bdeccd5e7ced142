"""Per-file ignores (remat_lint/config/settings.py), pinned where hand-made edits of 2026-11-25 passed the
suite: every code a pattern lists is ignored, a pattern with a slash matches a folder above the
file, and a code both selected and ignored as specifically is ignored (as in ruff)."""

from __future__ import annotations

from remat_lint.cli.command import main

TWO_FINDINGS = (
    "import jax\nimport jax.ad_checkpoint\ng = jax.ad_checkpoint.checkpoint(f)\n"
    'h = jax.checkpoint(f, policy="dots_saveable")\n'
)  # REM005, then REM001


def test_per_file_ignores_list_several_codes_and_match_folders(tmp_path, monkeypatch, capsys):
    for path in ("gen_a.py", "model.py", "sub/gen/x.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(TWO_FINDINGS)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.remat-lint]\nper-file-ignores = {"gen_*.py" = ["REM005", "REM001"], "sub/gen" = ["REM"]}\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["--no-cache", "--output-format", "concise", "."]) == 1
    assert [line.split(" `")[0] for line in capsys.readouterr().out.splitlines()] == [
        "model.py:3:5: REM005",
        "model.py:4:5: REM001",
    ]


def test_ignore_wins_over_a_select_as_specific(tmp_path, monkeypatch, capsys):
    (tmp_path / "model.py").write_text(TWO_FINDINGS)
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            ["--no-cache", "--output-format", "concise", "--select", "REM001,REM005", "--ignore", "REM001", "model.py"]
        )
        == 1
    )
    assert [line.split(" `")[0] for line in capsys.readouterr().out.splitlines()] == ["model.py:3:5: REM005"]
