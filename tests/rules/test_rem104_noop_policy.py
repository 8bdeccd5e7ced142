"""REM104's wording for a project that targets a JAX before 0.10.2, where
`save_anything_except_these_names` still saved less; in the test process (written against
surviving mutants)."""

from __future__ import annotations

import json

from remat_lint.cli import command as cli


def test_an_older_target_jax_words_anything_except_as_breaking_on_upgrade(tmp_path, capsys, monkeypatch) -> None:
    (tmp_path / "m.py").write_text(
        "from jax import checkpoint_policies as cp\np = cp.save_anything_except_these_names('a')\n"
    )
    monkeypatch.chdir(tmp_path)
    args = ["--no-cache", "--select", "REM104", "--output-format", "json", "--target-jax-version", "0.10.1", "m.py"]
    assert cli.main(args) == 1
    [finding] = json.loads(capsys.readouterr().out)
    assert (
        finding["message"]
        == "`cp.save_anything_except_these_names(...)` saves everything from JAX 0.10.2 — breaks on upgrade"
    )
    assert finding["detail"] == (
        "Up to 0.10.1 it saves every value except the given names; from 0.10.2 its body is `lambda *_, **__: True`, "
        "so it saves these names too, like `everything_saveable`, and the checkpoint's memory saving is silently lost; "
        "to save only named values minus these, use `save_any_names_but_these`"
    )
