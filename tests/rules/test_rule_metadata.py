"""Rule metadata is declared on the rule class, and what it declares is what the rule does: the
generated table that runs read instead of importing the rules is current, quiet rules are quiet
in test code, fix availability matches the fixes the rules produce, and a warm json/sarif run
imports neither a rule module nor libcst."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from remat_lint import registry
from remat_lint.config import settings as config
from remat_lint.config.settings import RuleSelection, Settings
from remat_lint.engine.lint import lint_source
from remat_lint.registry import TABLE, _imported_index, all_rules, rule_class, rule_index, rule_info, table_source
from remat_lint.rule import FixAvailability
from tests.helpers import lint

ROOT = Path(__file__).resolve().parents[2]


def test_generated_table_is_current():
    assert TABLE.read_text(encoding="utf-8") == table_source(), "run `python -m remat_lint.docs`"
    assert rule_index() == _imported_index()


def test_docs_read_without_importing_a_rule_are_the_rules_docs():
    """SARIF and editor hovers read a rule's doc and summary from its module's source, not from
    the imported class."""
    for info, rule in zip(rule_index(), all_rules(), strict=True):
        assert (info.code, info.doc, info.summary) == (rule.code, rule.doc(), rule.summary())
        assert "## What it does" in info.doc, info.code


def test_without_installed_sources_a_rules_doc_comes_from_its_class(monkeypatch):
    """An install of ``.pyc`` files only: no source to read the docstring from."""
    info = rule_info("REM001")
    sourceless = importlib.machinery.ModuleSpec(
        info.module, importlib.machinery.SourcelessFileLoader(info.module, "x.pyc")
    )
    monkeypatch.setattr(registry.importlib.util, "find_spec", lambda name: sourceless)
    assert registry.rule_doc.__wrapped__(info.module, info.class_name) == rule_class("REM001").doc()


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.quiet_in_tests], ids=lambda r: r.code)
def test_quiet_rules_are_quiet_in_test_code(rule):
    for case in rule.INVALID:
        source = case.code
        assert lint(source, {rule.code}), source
        assert lint_source("tests/test_model.py", source, frozenset({rule.code}), is_test_file=True).findings == []


def test_declared_fix_availability_matches_the_fixes_produced(cli_results):
    """Over every rule's INVALID examples and every fixture: a rule that declares no fix never has
    one, ``always`` has one on every finding, ``sometimes`` has at least one, and the fixes'
    applicabilities are exactly the declared ones."""
    seen: dict[str, list[str | None]] = {rule.code: [] for rule in all_rules()}
    for rule in all_rules():
        for case in rule.INVALID:
            seen[rule.code] += [f.fix.applicability.value if f.fix else None for f in lint(case.code, {rule.code})]
    for findings in cli_results.values():
        for item in findings:
            if item["code"] in seen:
                seen[item["code"]].append(item["fix"]["applicability"] if item["fix"] else None)
    for rule in all_rules():
        kinds = set(seen[rule.code])
        assert {k for k in kinds if k} == {a.value for a in rule.fix_applicability}, rule.code
        if rule.fix is FixAvailability.NONE:
            assert kinds <= {None}, rule.code
        elif rule.fix is FixAvailability.ALWAYS:
            assert None not in kinds, rule.code


def test_a_preview_rule_runs_only_when_its_own_code_is_selected(monkeypatch):
    infos = list(_imported_index())
    code = infos[0].code
    infos[0] = dataclasses.replace(infos[0], preview=True)
    monkeypatch.setattr(config, "rule_index", lambda: tuple(infos))
    assert code not in Settings().enabled_codes()
    for selectors in (("ALL",), (code[:4],)):
        assert code not in RuleSelection(select=selectors).apply(frozenset())
    assert code in RuleSelection(select=(code,)).apply(frozenset())
    assert code in RuleSelection(extend_select=(code,)).apply(frozenset())


# A finding of a rule decided file by file, in a module that exports no checkpoint: the findings
# of a project-wide rule, and a module-level checkpoint (a candidate for REM101 across modules),
# are decided by the project phase, which imports that rule.
SAMPLE_CODE = "REM010"
SAMPLE = """\
import jax


def build(f):
    return jax.checkpoint(f, static_argnames="train")
"""


@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_warm_run_imports_no_rule_module_and_no_libcst(tmp_path, output_format):
    assert not rule_info(SAMPLE_CODE).project_wide
    (tmp_path / "model.py").write_text(SAMPLE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n", encoding="utf-8")
    script = (
        "import json, sys\n"
        "from remat_lint.cli.command import main\n"
        "try:\n"
        f"    main(['--output-format', {output_format!r}, 'model.py'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in sys.modules if m == 'libcst' or m.startswith('remat_lint.rules.')]\n"
        "print(json.dumps(loaded), file=sys.stderr)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path) for _ in range(2)
    ]
    cold, warm = (json.loads(run.stderr.strip().splitlines()[-1]) for run in runs)
    assert "libcst" in cold  # the first run parsed the file: the check below can fail
    assert warm == []
    assert runs[0].stdout.count(SAMPLE_CODE) == runs[1].stdout.count(SAMPLE_CODE) > 0
    if output_format == "sarif":  # the rule's whole doc, read without importing the rule
        (descriptor,) = json.loads(runs[1].stdout)["runs"][0]["tool"]["driver"]["rules"]
        assert descriptor["help"]["text"] == rule_class(SAMPLE_CODE).doc()
    shutil.rmtree(tmp_path / ".remat_lint_cache", ignore_errors=True)
