"""Every rule's embedded VALID/INVALID examples (Fixit style) and its documentation."""

from __future__ import annotations

import re

import pytest

from remat_lint.registry import all_rules
from tests.helpers import fix_all, lint

CASES_VALID = [
    pytest.param(rule, code, id=f"{rule.code}-valid-{i}") for rule in all_rules() for i, code in enumerate(rule.VALID)
]
CASES_INVALID = [
    pytest.param(rule, case, id=f"{rule.code}-invalid-{i}")
    for rule in all_rules()
    for i, case in enumerate(rule.INVALID)
]


@pytest.mark.parametrize(("rule", "code"), CASES_VALID)
def test_valid_example_is_quiet(rule, code):
    assert [f.message for f in lint(code, {rule.code})] == []


@pytest.mark.parametrize(("rule", "case"), CASES_INVALID)
def test_invalid_example_is_reported(rule, case):
    findings = lint(case.code, {rule.code})
    assert findings, f"{rule.code} missed:\n{case.code}"
    assert all(f.code == rule.code for f in findings)
    if case.fixed is not None:
        assert fix_all(case.code, {rule.code}) == case.fixed
    else:
        assert all(f.fix is None for f in findings), "a fix exists but the example does not state its result"


SECTIONS = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## References"]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented(rule):
    doc = rule.doc()
    positions = [doc.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), f"{rule.code} doc lacks one of {SECTIONS}"
    assert positions == sorted(positions), f"{rule.code} doc sections out of order"
    assert re.fullmatch(r"REM\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.VALID and (rule.INVALID or rule.dynamic_only), f"{rule.code} needs embedded valid and invalid examples"
