"""`--output-format github`: workflow commands that GitHub Actions turns into annotations."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pytest

from remat_lint.cli.command import main
from remat_lint.findings import Finding, Position, Severity
from remat_lint.output.reporters.github import github
from remat_lint.trace.protocol import Verdict

ANNOTATION = re.compile(
    r"^::(?P<level>error|warning|notice) "
    r"file=(?P<file>[^,]*),line=(?P<line>\d+)(?:,col=(?P<col>\d+))?,endLine=(?P<endLine>\d+)(?:,endColumn=(?P<endColumn>\d+))?,"
    r"title=(?P<title>[^,]*)::(?P<message>.*)$"
)
BAD_LINE = "g = jax.checkpoint(lambda x: x, policy='dots_saveable')"


def unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def annotate(tmp_path, monkeypatch, capsys, *args: str) -> tuple[int, list[str]]:
    monkeypatch.chdir(tmp_path)
    code = main(["--output-format", "github", *args])
    return code, capsys.readouterr().out.splitlines()


def test_annotation_is_a_well_formed_workflow_command(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.py").write_text(f"import jax\n{BAD_LINE}\n")
    code, [line] = annotate(tmp_path, monkeypatch, capsys, "bad.py")
    assert code == 1
    match = ANNOTATION.match(line)
    assert match, line
    assert match["level"] == "error" and match["file"] == "bad.py"
    # 1-based line and column; the end column is one past the call's last character.
    assert (match["line"], match["col"], match["endLine"]) == ("2", "5", "2")
    assert int(match["endColumn"]) == len(BAD_LINE) + 1
    assert unescape(match["title"]) == "REM001 `policy='dots_saveable'` is a string, not a policy"
    message = unescape(match["message"])
    assert message.startswith("bad.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy")
    assert message.endswith("\nhelp: Use `jax.checkpoint_policies.dots_saveable`")
    assert "\n" not in match["message"]


def test_properties_and_data_are_escaped(tmp_path, monkeypatch, capsys):
    (tmp_path / "odd,name:v2.py").write_text("import jax\ng = jax.checkpoint(f, policy='50%')\n")
    _, [line] = annotate(tmp_path, monkeypatch, capsys, "odd,name:v2.py")
    assert "file=odd%2Cname%3Av2.py," in line
    assert "policy='50%25'" in line
    assert unescape(ANNOTATION.match(line)["file"]) == "odd,name:v2.py"


def test_escaping_of_carriage_returns_and_newlines():
    finding = Finding(
        "REM001", "policy-not-callable", Severity.ERROR, "a: 100%\r\nb, c", "dir/a.py", Position(1, 0), Position(1, 3)
    )
    [line] = github([finding], {}).splitlines()
    assert line.endswith("::dir/a.py:1:1: REM001 a: 100%25%0D%0Ab, c")  # data: %, CR and LF only
    assert "title=REM001 a%3A 100%25%0D%0Ab%2C c::" in line  # properties: also : and ,


def test_most_severe_first(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("import jax\nh = jax.remat(f)\ng = jax.checkpoint(f, policy='dots_saveable')\n")
    _, lines = annotate(tmp_path, monkeypatch, capsys, "--extend-select", "REM302", "m.py")
    assert [ANNOTATION.match(line)["level"] for line in lines] == ["error", "notice"]
    assert [ANNOTATION.match(line)["line"] for line in lines] == ["3", "2"]


@pytest.mark.parametrize("count, summary", [(10, False), (12, True)])
def test_summary_when_github_would_hide_annotations(tmp_path, monkeypatch, capsys, count, summary):
    (tmp_path / "many.py").write_text("import jax\n" + f"{BAD_LINE}\n" * count)
    code, lines = annotate(tmp_path, monkeypatch, capsys, "many.py")
    assert code == 1
    annotations = [line for line in lines if line.startswith("::")]
    assert len(annotations) == count  # every finding stays in the log
    rest = lines[len(annotations) :]
    if summary:
        assert lines[: len(annotations)] == annotations  # the summary closes the output
        assert len(rest) == 1 and "2 errors not shown as annotations" in rest[0]
        assert "12 findings" in rest[0]
    else:
        assert rest == []


def test_clean_code_prints_nothing(tmp_path, monkeypatch, capsys):
    (tmp_path / "ok.py").write_text("import jax\ng = jax.checkpoint(f)\n")
    assert annotate(tmp_path, monkeypatch, capsys, "ok.py") == (0, [])


def test_trace_verdicts_are_shown_and_refuted_findings_are_notices():
    def finding(row: int, status: Literal["refuted", "confirmed"]) -> Finding:
        f = Finding("REM001", "policy-not-callable", Severity.ERROR, "msg", "a.py", Position(row, 0), Position(row, 1))
        f.trace = Verdict(status, f"{status} by tracing")
        return f

    lines = github([finding(1, "refuted"), finding(2, "confirmed")], {}).splitlines()
    assert [ANNOTATION.match(line)["level"] for line in lines] == ["error", "notice"]
    assert lines[0].endswith("::a.py:2:1: REM001 msg%0Atrace: confirmed: confirmed by tracing")
    assert lines[1].endswith("::a.py:1:1: REM001 msg%0Atrace: refuted: refuted by tracing")


def accepted_by_github(line: str) -> bool:
    """GitHub's rules for an annotation: 1-based lines, ``endLine >= line``; columns only on a
    one-line range, with ``endColumn >= col``."""
    match = ANNOTATION.match(line)
    if not match or not match["file"] or not match["title"]:
        return False
    first, last = int(match["line"]), int(match["endLine"])
    if match["col"] is None or match["endColumn"] is None:
        return match["col"] is None and match["endColumn"] is None and 1 <= first <= last
    return 1 <= first == last and 1 <= int(match["col"]) <= int(match["endColumn"])


def test_a_multi_line_finding_gets_lines_without_columns(tmp_path, monkeypatch, capsys):
    (tmp_path / "m.py").write_text("import jax\ng = jax.checkpoint(\n    f,\n    policy='dots_saveable',\n)\n")
    _, [line] = annotate(tmp_path, monkeypatch, capsys, "m.py")
    assert line.startswith(
        "::error file=m.py,line=2,endLine=5,title=REM001 `policy='dots_saveable'` is a string%2C not a policy::m.py:2:5: REM001 "
    )
    assert accepted_by_github(line)


def test_every_annotation_on_the_fixtures_is_accepted_by_github(monkeypatch, capsys):
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    assert main(["--output-format", "github", "--no-cache", "--select", "ALL", "fixtures"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::")]
    assert len(lines) > 150
    assert [line for line in lines if not accepted_by_github(line)] == []
    assert any(",endLine=" in line and ",col=" not in line for line in lines)  # multi-line ranges are there
