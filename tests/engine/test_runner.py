"""The runner (remat_lint/engine/runner.py), pinned where a hand-made edit of 2026-11-25 passed the
suite: a warm run (findings from the cache) shows the source lines of its findings and gives
SARIF the same fingerprints as the cold run."""

from __future__ import annotations

import json

from remat_lint.cli.command import main

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def test_a_warm_run_prints_what_the_cold_run_printed(tmp_path, monkeypatch, capsys):
    (tmp_path / "model.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    outputs = []
    for _ in range(2):  # cold, then warm
        assert main(["model.py"]) == 1
        full = capsys.readouterr().out
        main(["--output-format", "sarif", "model.py"])
        [result] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
        outputs.append((full, result["partialFingerprints"]))
    assert (tmp_path / ".remat_lint_cache").is_dir()
    assert outputs[0] == outputs[1]
    assert "2 | g = jax.checkpoint(lambda x: x, policy='dots_saveable')" in outputs[1][0]
