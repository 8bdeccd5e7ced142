"""`remat-lint rule CODE` and `rule --all`: every rule's doc, each exactly once, in code order; a
prefix lists the rules it covers, and ``--output-format json`` prints ruff's ``rule --output-format
json`` fields (an object for one rule, a list for ``--all`` or a prefix)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from remat_lint.cli import command as cli
from remat_lint.docs import explain
from remat_lint.registry import RuleInfo, all_rules

RUFF_FIELDS = {
    "name",
    "code",
    "linter",
    "summary",
    "message_formats",
    "fix",
    "fix_availability",
    "explanation",
    "preview",
}
HEADER = re.compile(r"^# ([a-z0-9-]+) \((REM\d{3})\)$", re.MULTILINE)


def test_all_prints_every_rule_once_in_order(capsys):
    assert cli.main(["rule", "--all"]) == 0
    out = capsys.readouterr().out
    rules = sorted(all_rules(), key=lambda rule: rule.code)
    assert HEADER.findall(out) == [(rule.name, rule.code) for rule in rules]
    assert out.count("## What it does") == len(rules) >= 22
    assert out == "\n\n".join(explain(RuleInfo.of(rule)) for rule in rules) + "\n"


def test_one_rule_prints_its_doc(capsys):
    assert cli.main(["rule", "REM011"]) == 0
    out = capsys.readouterr().out
    assert HEADER.findall(out) == [("bad-static-argnums", "REM011")]
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in out
    assert cli.main(["rule", "rem011"]) == 0  # codes are read case-insensitively
    assert capsys.readouterr().out == out


def rule(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["rule", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_prefix_explains_the_rules_it_covers(capsys):
    code, out, _ = rule(capsys, "REM1")
    titles = [line for line in out.splitlines() if line.startswith("# ")]
    assert code == 0
    assert titles == [f"# {r.name} ({r.code})" for r in all_rules() if r.code.startswith("REM1")]
    assert len(titles) > 1


def test_all_as_json_lists_every_rule_with_ruffs_fields(capsys):
    code, out, _ = rule(capsys, "--all", "--output-format", "json")
    listed = json.loads(out)
    assert code == 0
    assert [entry["code"] for entry in listed] == [r.code for r in all_rules()]
    assert all(RUFF_FIELDS <= set(entry) for entry in listed)
    rem001 = listed[0]
    assert rem001["name"] == "policy-not-callable"
    assert rem001["linter"] == "remat-lint"
    assert rem001["fix"] == "Fix is sometimes available."
    assert rem001["explanation"].startswith("## What it does")


def test_one_rule_as_json_is_an_object_and_a_prefix_a_list(capsys):
    assert json.loads(rule(capsys, "policy-not-callable", "--output-format", "json")[1])["code"] == "REM001"
    assert [entry["code"] for entry in json.loads(rule(capsys, "rem10", "--output-format", "json")[1])] == [
        r.code for r in all_rules() if r.code.startswith("REM10")
    ]


def test_a_prefix_of_no_rule_is_a_usage_error(capsys):
    code, _, err = rule(capsys, "REM9")
    assert code == 2
    assert "unknown rule 'REM9'" in err


def test_explaining_a_rule_imports_no_rule_module_and_no_libcst():
    """The docs are read from the rules' sources: `remat-lint rule CODE` answers without the 0.3 s
    libcst import."""
    script = (
        "import json, sys\n"
        "from remat_lint.cli.command import main\n"
        "code = main(['rule', 'REM001'])\n"
        "loaded = [m for m in sys.modules if m == 'libcst' or m.startswith('remat_lint.rules.')]\n"
        "print(json.dumps([code, loaded]), file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert json.loads(run.stderr.strip().splitlines()[-1]) == [0, []]
    assert HEADER.findall(run.stdout) == [("policy-not-callable", "REM001")]
