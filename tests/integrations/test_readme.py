"""The docs stay true: the README's rule table and docs/rules.md match the registry, every
finding's url has its anchor there, the README's commands exist, its GitHub annotation example is
what the tool prints, and no page names a path of a development machine."""

from __future__ import annotations

import re
from pathlib import Path

from remat_lint.cli import command as cli
from remat_lint.docs import END, START, rules_page, rules_table
from remat_lint.registry import all_rules

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_matches_registry():
    table = README.split(START, 1)[1].split(END, 1)[0].strip()
    assert table == rules_table(), "README rule table is stale: run `python -m remat_lint.docs`"


def test_readme_has_the_two_setup_commands():
    assert "pip install -e '.[trace]' && remat-lint --trace fixtures/demo" in README
    assert "pip install -e '.[test]' && python -m pytest -q" in README


def test_rules_page_matches_registry_and_every_url_has_its_anchor():
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == rules_page(), "docs/rules.md is stale: run `python -m remat_lint.docs`"
    for rule in all_rules():
        assert rule.url().endswith(f"docs/rules.md#{rule.code.lower()}")
        assert f'<a id="{rule.code.lower()}"></a>' in page


DEV_PATH = re.compile(r"(?<![\w.])/(?:work|root|home|tmp|Users)/[\w.-]+")


def test_no_absolute_path_of_a_development_machine_in_the_docs():
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {str(page.relative_to(ROOT)): DEV_PATH.findall(page.read_text(encoding="utf-8")) for page in pages}
    assert {name: paths for name, paths in found.items() if paths} == {}


def test_the_github_annotation_example_is_what_the_tool_prints(tmp_path, monkeypatch, capsys):
    example = next(line for line in README.splitlines() if line.startswith("::error "))
    layers = tmp_path / "model" / "layers.py"
    layers.parent.mkdir()
    # the example's line 12, with mlp defined above it and `cp` imported as the fix names it
    layers.write_text(
        "import jax\nfrom jax import checkpoint_policies as cp\n\n\ndef mlp(x, w):\n    return jax.nn.relu(x @ w)\n"
        + "\n" * 5
        + 'block = jax.checkpoint(mlp, policy="dots_saveable")\n'
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--no-cache", "--output-format", "github", "model/layers.py"]) == 1
    assert capsys.readouterr().out == example + "\n"
