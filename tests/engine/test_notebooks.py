"""Jupyter notebooks: code cells linted like ruff does, findings at cell positions in every
format, fixes written back into the cells with outputs, metadata and JSON formatting kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "notes"]},
    {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {"scrolled": True},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": ["done\n"]}],
        "source": ["%matplotlib inline\n", "!pip install jax\n", "files = !ls\n", "import jax\n", "jax.checkpoint?"],
    },
    {
        "cell_type": "code",
        "execution_count": 2,
        "metadata": {},
        "outputs": [],
        "source": ["def f(x):\n", "    return x\n", 'g = jax.checkpoint(f, policy="dots_saveable")'],
    },
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["%%bash\n", "echo $HOME"]},
    {
        "cell_type": "code",
        "execution_count": 3,
        "metadata": {},
        "outputs": [],
        "source": [
            "h = jax.checkpoint(f, policy='nothing_saveable')  # noqa: REM001\n",
            "k = jax.checkpoint(f, policy='nothing_saveable')\n",
        ],
    },
]
NOTEBOOK = {
    "cells": CELLS,
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}
MESSAGE = "is a string, not a policy"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True
    )


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    # As Jupyter writes it: nbformat's json.dumps(indent=1, sort_keys=True, ensure_ascii=False) and a newline.
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps(NOTEBOOK, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_findings_are_reported_at_cell_positions(notebook):
    proc = cli("--output-format", "concise", ".", cwd=notebook.parent)
    assert proc.returncode == 1, proc.stderr
    assert [line.split(f" {MESSAGE}")[0].split(" `")[0] for line in proc.stdout.splitlines()] == [
        "train.ipynb:cell 3:3:5: REM001",  # markdown cells count, as in ruff
        "train.ipynb:cell 5:2:5: REM001",  # the noqa on the cell's first line holds
    ]


def test_full_output_shows_the_cell_line(notebook):
    out = cli("train.ipynb", cwd=notebook.parent).stdout
    assert '3 | g = jax.checkpoint(f, policy="dots_saveable")' in out
    assert "2 | k = jax.checkpoint(f, policy='nothing_saveable')" in out


def test_json_sarif_and_github_carry_cell_and_line(notebook):
    items = json.loads(cli("--output-format", "json", "train.ipynb", cwd=notebook.parent).stdout)
    assert [(i["filename"], i["cell"], i["location"]["row"]) for i in items] == [
        ("train.ipynb", 3, 3),
        ("train.ipynb", 5, 2),
    ]
    assert items[0]["fix"]["edits"][0]["location"] == {"row": 3, "column": 30}
    results = json.loads(cli("--output-format", "sarif", "train.ipynb", cwd=notebook.parent).stdout)["runs"][0][
        "results"
    ]
    assert [
        (r["properties"]["cell"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results
    ] == [(3, 3), (5, 2)]
    assert results[0]["message"]["text"].startswith("cell 3: ")
    github = cli("--output-format", "github", "train.ipynb", cwd=notebook.parent).stdout.splitlines()
    assert github[0].startswith("::error file=train.ipynb,line=3,col=5,endLine=3,endColumn=46,")
    assert "::train.ipynb:cell 3:3:5: REM001 " in github[0]


def test_fix_rewrites_only_the_cells_and_keeps_the_rest_of_the_json(notebook):
    before = notebook.read_text(encoding="utf-8")
    diff = cli("--diff", "train.ipynb", cwd=notebook.parent)
    assert diff.returncode == 1
    assert diff.stdout.splitlines()[:2] == ["--- a/train.ipynb:cell 3", "+++ b/train.ipynb:cell 3"]
    assert notebook.read_text(encoding="utf-8") == before
    fixed = cli("--fix", "train.ipynb", cwd=notebook.parent)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    after = json.loads(notebook.read_text(encoding="utf-8"))
    expected = json.loads(before)
    expected["cells"][2]["source"][2] = "g = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)"
    expected["cells"][4]["source"][1] = "k = jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)\n"
    assert after == expected  # outputs, metadata, magics and other cells untouched
    # Formatting kept: only the two fixed lines of the file differ.
    changed = [
        (a, b)
        for a, b in zip(before.splitlines(), notebook.read_text(encoding="utf-8").splitlines(), strict=False)
        if a != b
    ]
    assert len(changed) == 2 and len(before.splitlines()) == len(notebook.read_text(encoding="utf-8").splitlines())
    assert cli("--select", "REM001", "train.ipynb", cwd=notebook.parent).returncode == 0


def test_an_invalid_notebook_is_a_diagnostic(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json")
    proc = cli("--output-format", "concise", "broken.ipynb", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout.startswith("broken.ipynb:1:1: REM000 cannot read notebook:")


def test_trace_says_notebooks_are_not_traced(notebook):
    proc = cli("--trace", "--output-format", "concise", "train.ipynb", cwd=notebook.parent)
    assert "notebooks are not traced (their findings are static only): train.ipynb" in proc.stderr
    assert "train.ipynb:cell 3:3:5: REM001" in proc.stdout


@pytest.mark.parametrize("escaped", [True, False])
def test_non_ascii_text_is_written_back_as_it_was(tmp_path, escaped):
    notebook = {
        **NOTEBOOK,
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["Modèle — résumé"]}, *CELLS[1:3]],
    }
    path = tmp_path / "nb.ipynb"
    before = json.dumps(notebook, indent=2, ensure_ascii=escaped)  # another indent, no final newline
    path.write_text(before, encoding="utf-8")
    assert cli("--fix", "nb.ipynb", cwd=tmp_path).returncode == 0
    after = path.read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert len(changed) == 1 and "jax.checkpoint_policies.dots_saveable" in changed[0][1]
    assert not after.endswith("\n") and ("\\u00e8" in after) is escaped
