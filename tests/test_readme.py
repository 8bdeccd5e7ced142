"""The docs stay true: the README's rule table and docs/rules.md match the registry, every
finding's url has its anchor there, the README's commands exist."""

from __future__ import annotations

from pathlib import Path

from remat_lint.docs import END, START, rules_page, rules_table
from remat_lint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
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
