"""Reporters pinned where hand-made edits of 2026-11-25 passed the suite: GitHub's annotation
limit at its boundary (one finding past it is summarised, in the singular); SARIF offers no fix
for a notebook's finding (its rows count within a cell, not in the .ipynb file a fix would edit)
and tags REM2xx rules "correctness"; JSON's end location, noqa row and null detail."""

from __future__ import annotations

import json
from pathlib import Path

from remat_lint.cli.command import main
from remat_lint.output.reporters.github import SHOWN_PER_LEVEL
from tests.engine.test_notebooks import NOTEBOOK

BAD_LINE = "g = jax.checkpoint(lambda x: x, policy='dots_saveable')"


def test_one_annotation_past_githubs_limit_is_summarised(tmp_path, monkeypatch, capsys):
    (tmp_path / "many.py").write_text("import jax\n" + f"{BAD_LINE}\n" * (SHOWN_PER_LEVEL + 1))
    monkeypatch.chdir(tmp_path)
    assert main(["--output-format", "github", "many.py"]) == 1
    *annotations, summary = capsys.readouterr().out.splitlines()
    assert len(annotations) == 11 and all(line.startswith("::error ") for line in annotations)
    assert summary.startswith(
        "remat-lint: 1 error not shown as annotations (GitHub shows 10 of each level per step); all 11 findings"
    )


def test_sarif_offers_no_fix_inside_a_notebook_and_one_in_a_python_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "model.py").write_text(f"import jax\n{BAD_LINE}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["--no-cache", "--output-format", "sarif", "train.ipynb", "model.py"]) == 1
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    fixes = {
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r.get("properties", {}).get("cell")): "fixes"
        in r
        for r in results
    }
    assert fixes == {("model.py", None): True, ("train.ipynb", 3): False, ("train.ipynb", 5): False}


def test_sarif_tags_body_rules_as_correctness(monkeypatch, capsys):
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    monkeypatch.chdir(fixtures)
    main(["--no-cache", "--select", "ALL", "--output-format", "sarif", "rem201_impure_checkpoint_body.py"])
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert {rule["id"]: rule["properties"]["tags"] for rule in rules}["REM201"] == [
        "jax",
        "gradient-checkpointing",
        "correctness",
    ]


def test_json_of_a_finding_over_several_lines_and_of_an_undecodable_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("import jax\ng = jax.checkpoint(\n    f,\n    policy='dots_saveable',\n)\n")
    (tmp_path / "bad.py").write_bytes(b'x = "\xff"\n')
    monkeypatch.chdir(tmp_path)
    main(["--no-cache", "--output-format", "json", "m.py", "bad.py"])
    bad, finding = json.loads(capsys.readouterr().out)
    assert (bad["code"], bad["detail"]) == ("REM000", None)
    assert (finding["location"], finding["end_location"], finding["noqa_row"]) == (
        {"row": 2, "column": 5},
        {"row": 5, "column": 2},
        2,
    )
