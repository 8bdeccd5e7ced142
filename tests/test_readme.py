"""The README stays true: its rule table matches the registry, its commands exist."""

from __future__ import annotations

from pathlib import Path

from remat_lint.docs import END, START, rules_table

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_rule_table_matches_registry():
    table = README.split(START, 1)[1].split(END, 1)[0].strip()
    assert table == rules_table(), "README rule table is stale: run `python -m remat_lint.docs`"


def test_readme_has_the_two_setup_commands():
    assert "pip install -e '.[trace]' && remat-lint --trace fixtures/demo" in README
    assert "pip install -e '.[test]' && python -m pytest -q" in README
