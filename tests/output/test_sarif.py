"""`--output-format sarif`: SARIF 2.1.0 that GitHub code scanning accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.registry import rule_by_code

# The OASIS SARIF 2.1.0 schema (errata01), vendored: https://docs.oasis-open.org/sarif/sarif/v2.1.0/
SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json"
BAD_LINE = "g = jax.checkpoint(lambda x: x, policy='dots_saveable')"
MODULE = f"""import jax
from jax import checkpoint_policies as cp

{BAD_LINE}
h = jax.checkpoint(f, checkpoint_policy=cp.dots_saveable)
k = jax.remat(f)
"""


def sarif(tmp_path, monkeypatch, capsys, *args: str) -> dict:
    monkeypatch.chdir(tmp_path)
    main(["--output-format", "sarif", *args])
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def log(tmp_path, monkeypatch, capsys) -> dict:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(MODULE)
    (tmp_path / "pkg" / "broken.py").write_text("import jax\ng = jax.checkpoint(f\ndef f(:\n")  # REM000: no rule class
    return sarif(tmp_path, monkeypatch, capsys, "--extend-select", "REM302", "pkg")


def test_valid_against_the_sarif_schema(log):
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")


def test_what_github_code_scanning_requires(log, tmp_path):
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "remat-lint" and driver["version"] and driver["informationUri"].startswith("https://")
    assert run["columnKind"] == "unicodeCodePoints"
    root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root.startswith("file://") and root.endswith("/") and Path(root[len("file://") :]) == tmp_path.resolve()
    # Only the rules that fired, with the metadata the code scanning UI shows.
    assert [rule["id"] for rule in driver["rules"]] == ["REM000", "REM001", "REM002", "REM302"]
    for rule in driver["rules"]:
        assert 0 < len(rule["shortDescription"]["text"]) <= 1024
        assert 0 < len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert 0 < len(rule["properties"]["tags"]) <= 20
    for rule in driver["rules"][1:]:
        assert rule["help"]["markdown"] == rule_by_code(rule["id"]).doc() == rule["help"]["text"]
        assert rule["name"] == rule_by_code(rule["id"]).name
    assert driver["rules"][3]["defaultConfiguration"]["level"] == "note"  # info -> note
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"]
        assert result["partialFingerprints"]["primaryLocationLineHash"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] in ("pkg/model.py", "pkg/broken.py")
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert location["region"]["startColumn"] >= 1


def test_regions_are_one_based_with_exclusive_end(log):
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "REM001")
    region = result["locations"][0]["physicalLocation"]["region"]
    start = BAD_LINE.index("jax.checkpoint")
    assert region == {"startLine": 4, "startColumn": start + 1, "endLine": 4, "endColumn": len(BAD_LINE) + 1}


def test_columns_count_code_points(tmp_path, monkeypatch, capsys):
    line = 'x = "é😀"; g = jax.checkpoint(f, policy="dots_saveable")'
    (tmp_path / "u.py").write_text(f"import jax\n{line}\n", encoding="utf-8")
    [result] = sarif(tmp_path, monkeypatch, capsys, "u.py")["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region["startColumn"] == line.index("jax.checkpoint") + 1 == 15
    assert region["endColumn"] == len(line) + 1


def fingerprints(log: dict) -> list[str]:
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in log["runs"][0]["results"]]


def test_fingerprints_survive_moved_lines_and_tell_repeats_apart(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(f"import jax\n{BAD_LINE}\n{BAD_LINE}\n")
    before = fingerprints(sarif(tmp_path, monkeypatch, capsys, "m.py"))
    path.write_text(f"import jax\n\n\n# a comment\n{BAD_LINE}\n\n{BAD_LINE}\n")
    after = fingerprints(sarif(tmp_path, monkeypatch, capsys, "m.py"))
    assert before == after
    assert len(set(before)) == 2  # the same line twice: two alerts, not one
    path.write_text(f"import jax\n{BAD_LINE.replace('dots', 'nothing')}\n")
    assert fingerprints(sarif(tmp_path, monkeypatch, capsys, "m.py"))[0] not in before


def test_fixes_are_replacements_that_reproduce_fix(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(f"import jax\n{BAD_LINE}\n")
    [result] = sarif(tmp_path, monkeypatch, capsys, "m.py")["runs"][0]["results"]
    [fix] = result["fixes"]
    assert fix["description"]["text"] == "Use `jax.checkpoint_policies.dots_saveable`"
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "m.py"
    lines = path.read_text().splitlines(keepends=True)
    for replacement in reversed(change["replacements"]):
        region = replacement["deletedRegion"]
        assert region["startLine"] == region["endLine"]
        line = lines[region["startLine"] - 1]
        lines[region["startLine"] - 1] = (
            line[: region["startColumn"] - 1] + replacement["insertedContent"]["text"] + line[region["endColumn"] - 1 :]
        )
    assert main(["--fix", "-q", "m.py"]) == 0
    assert "".join(lines) == path.read_text()


def test_no_findings_is_still_a_valid_log(tmp_path, monkeypatch, capsys):
    (tmp_path / "ok.py").write_text("import jax\ng = jax.checkpoint(f)\n")
    log = sarif(tmp_path, monkeypatch, capsys, "ok.py")
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


def test_trace_verdict_travels_with_the_result():
    from remat_lint.findings import Finding, Position, Severity
    from remat_lint.output.reporters.sarif import sarif_log
    from remat_lint.trace.protocol import Verdict

    f = Finding("REM001", "policy-not-callable", Severity.ERROR, "msg", "a.py", Position(1, 0), Position(1, 1))
    f.trace = Verdict("refuted", "grad ran", {"error": None})
    [result] = sarif_log([f], {"a.py": "x\n"})["runs"][0]["results"]
    assert result["level"] == "note"
    assert result["properties"]["trace"] == {"status": "refuted", "evidence": {"error": None}, "reason": "grad ran"}
