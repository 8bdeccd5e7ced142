"""The output formats CI systems read, each checked against its consumer's format: ``gitlab``
(GitLab Code Quality's required fields), ``junit`` (parsed as XML, ruff's layout), ``pylint``,
``rdjson`` (reviewdog's JSON schema), ``azure`` (Azure Pipelines logging commands) and
``grouped`` (ruff's layout); each is accepted by ``--output-format`` and ``--extra-output``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from remat_lint.cli import command as cli

STRING_POLICY = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
# Two identical findings in a.py; in b.py a non-ASCII character before the finding on its line.
SOURCES = {
    "a.py": STRING_POLICY + "h = jax.checkpoint(lambda x: x, policy='dots_saveable')\n",
    "b.py": "import jax\n" + "\n" * 8 + "é = 1; g = jax.checkpoint(lambda x: x, policy='dots_saveable')\n",
}

# GitLab's Code Quality report format: the fields it requires of each issue and the severities it
# knows (docs.gitlab.com/ci/testing/code_quality, "Code Quality report format").
GITLAB_ISSUE = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string"},
        "check_name": {"type": "string"},
        "fingerprint": {"type": "string"},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path", "lines"],
            "properties": {
                "path": {"type": "string"},
                "lines": {"type": "object", "required": ["begin"], "properties": {"begin": {"type": "integer"}}},
            },
        },
    },
}

# reviewdog's proto/rdf/jsonschema/DiagnosticResult.json, its definitions as they are, with what
# reviewdog.proto calls required made required (a diagnostic's message and location, a range's
# start, a suggestion's range and text) and no property beyond the format's.
_POSITION = {
    "type": "object",
    "properties": {"line": {"type": "integer"}, "column": {"type": "integer"}},
    "additionalProperties": False,
}
_RANGE = {
    "type": "object",
    "required": ["start"],
    "properties": {"start": _POSITION, "end": _POSITION},
    "additionalProperties": False,
}
_SEVERITY = {"enum": ["UNKNOWN_SEVERITY", 0, "ERROR", 1, "WARNING", 2, "INFO", 3]}
_SOURCE = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
}
RDJSON = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "properties": {
        "source": _SOURCE,
        "severity": _SEVERITY,
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message", "location"],
                "additionalProperties": False,
                "properties": {
                    "message": {"type": "string"},
                    "location": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {"path": {"type": "string"}, "range": _RANGE},
                        "additionalProperties": False,
                    },
                    "severity": _SEVERITY,
                    "source": _SOURCE,
                    "code": {"type": "object", "properties": {"value": {"type": "string"}, "url": {"type": "string"}}},
                    "suggestions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["range", "text"],
                            "properties": {"range": _RANGE, "text": {"type": "string"}},
                            "additionalProperties": False,
                        },
                    },
                    "original_output": {"type": "string"},
                },
            },
        },
    },
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in SOURCES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def lint(capsys: pytest.CaptureFixture[str], form: str, *paths: str) -> tuple[int, str, str]:
    code = cli.main(["--no-cache", "-j", "1", "--output-format", form, *(paths or SOURCES)])
    out, err = capsys.readouterr()
    return code, out, err


def test_gitlab_issues_have_the_fields_gitlab_requires(project, capsys):
    code, out, _ = lint(capsys, "gitlab")
    issues = json.loads(out)
    assert code == 1
    for issue in issues:
        jsonschema.validate(issue, GITLAB_ISSUE)
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("REM001", "a.py", 2),
        ("REM001", "a.py", 3),
        ("REM001", "b.py", 10),
    ]
    assert issues[0]["description"] == "REM001: `policy='dots_saveable'` is a string, not a policy"
    assert {i["severity"] for i in issues} == {"major"}  # an error


def test_gitlab_fingerprints_are_unique_and_survive_lines_added_above(project, capsys):
    before = [i["fingerprint"] for i in json.loads(lint(capsys, "gitlab")[1])]
    assert len(set(before)) == len(before) == 3  # two identical findings in a.py are told apart
    assert [i["fingerprint"] for i in json.loads(lint(capsys, "gitlab")[1])] == before
    (project / "a.py").write_text("# a new first line\n" + SOURCES["a.py"])
    assert [i["fingerprint"] for i in json.loads(lint(capsys, "gitlab")[1])] == before


def test_gitlab_paths_are_relative_to_the_ci_project_dir(project, capsys, monkeypatch):
    monkeypatch.setenv("CI_PROJECT_DIR", str(project.parent))
    assert {i["location"]["path"] for i in json.loads(lint(capsys, "gitlab")[1])} == {
        f"{project.name}/a.py",
        f"{project.name}/b.py",
    }


def test_junit_is_xml_with_a_suite_per_file_and_a_failing_case_per_finding(project, capsys):
    code, out, _ = lint(capsys, "junit")
    root = ET.fromstring(out)
    assert code == 1
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "3", "3")
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("a.py", "2", "2"),
        ("b.py", "1", "1"),
    ]
    case = suites[0].find("testcase")
    assert case is not None
    assert (case.get("name"), case.get("classname"), case.get("line"), case.get("column")) == (
        "org.remat-lint.REM001",
        "a",
        "2",
        "5",
    )
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == "`policy='dots_saveable'` is a string, not a policy"
    assert (failure.text or "").startswith("line 2, col 5, `policy='dots_saveable'` is a string, not a policy. JAX")


def test_junit_without_findings_is_one_passing_case(project, capsys):
    (project / "clean.py").write_text("x = 1\n")
    code, out, _ = lint(capsys, "junit", "clean.py")
    root = ET.fromstring(out)
    assert code == 0
    assert [(c.get("name"), c.find("failure")) for c in root.iter("testcase")] == [("No errors found", None)]


def test_pylint_lines(project, capsys):
    assert lint(capsys, "pylint")[1] == (
        "a.py:2: [REM001] `policy='dots_saveable'` is a string, not a policy\n"
        "a.py:3: [REM001] `policy='dots_saveable'` is a string, not a policy\n"
        "b.py:10: [REM001] `policy='dots_saveable'` is a string, not a policy\n"
    )


def test_rdjson_validates_against_reviewdogs_schema(project, capsys):
    result = json.loads(lint(capsys, "rdjson")[1])
    jsonschema.validate(result, RDJSON)
    assert result["source"]["name"] == "remat-lint"
    first, _, last = result["diagnostics"]
    assert first["location"] == {
        "path": "a.py",
        "range": {"start": {"line": 2, "column": 5}, "end": {"line": 2, "column": 56}},
    }
    assert first["severity"] == "ERROR"
    assert first["code"]["value"] == "REM001"
    assert first["suggestions"] == [
        {
            "range": {"start": {"line": 2, "column": 40}, "end": {"line": 2, "column": 55}},
            "text": "jax.checkpoint_policies.dots_saveable",
        }
    ]
    # rdjson counts columns in UTF-8 bytes: `é` is two, so `jax.checkpoint` starts at byte 13, not 12
    assert last["location"]["range"]["start"] == {"line": 10, "column": 13}


def test_azure_logging_commands(project, capsys):
    lines = lint(capsys, "azure")[1].splitlines()
    assert lines[0] == (
        "##vso[task.logissue type=error;sourcepath=a.py;linenumber=2;columnnumber=5;code=REM001;]"
        "`policy='dots_saveable'` is a string, not a policy"
    )
    assert lines[2].startswith("##vso[task.logissue type=error;sourcepath=b.py;linenumber=10;columnnumber=12;")


def test_azure_escapes_what_ends_a_property(project, capsys):
    (project / "odd;name].py").write_text(STRING_POLICY)
    line = lint(capsys, "azure", "odd;name].py")[1]
    assert "sourcepath=odd%3Bname%5D.py;linenumber=2;" in line


def test_grouped_aligns_rows_and_columns_per_file(project, capsys):
    code, out, err = lint(capsys, "grouped")
    assert code == 1
    assert out == (
        "a.py:\n"
        "  2:5 REM001 [*] `policy='dots_saveable'` is a string, not a policy\n"
        "  3:5 REM001 [*] `policy='dots_saveable'` is a string, not a policy\n"
        "\n"
        "b.py:\n"
        "  10:12 REM001 [*] `policy='dots_saveable'` is a string, not a policy\n"
        "\n"
    )
    assert err.startswith("Found 3 errors.")


def test_grouped_pads_short_rows_and_columns(project, capsys):
    wide = SOURCES["b.py"].splitlines(keepends=True)[-1]
    (project / "c.py").write_text("import jax\n" + "\n" * 7 + wide + STRING_POLICY.replace("import jax\n", ""))
    assert lint(capsys, "grouped", "c.py")[1] == (
        "c.py:\n"
        "   9:12 REM001 [*] `policy='dots_saveable'` is a string, not a policy\n"
        "  10:5  REM001 [*] `policy='dots_saveable'` is a string, not a policy\n"
        "\n"
    )


@pytest.mark.parametrize("form", ["gitlab", "junit", "pylint", "rdjson", "azure", "grouped"])
def test_each_format_is_an_extra_output(project, capsys, form):
    code = cli.main(
        ["--no-cache", "-j", "1", "--output-format", "concise", "--extra-output", f"{form}=report.out", "a.py"]
    )
    capsys.readouterr()
    assert code == 1
    assert (project / "report.out").read_text() == lint(capsys, form, "a.py")[1]
