"""`--fix`, `--unsafe-fixes`, `--diff`, `--exit-non-zero-on-fix` as a user meets them."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from remat_lint.cli.command import main
from remat_lint.engine.sources import SourceFile
from remat_lint.findings import Applicability, Finding, Fix, Position, Severity, TextEdit
from remat_lint.output import autofix
from remat_lint.output.autofix import fixable
from remat_lint.output.fixes import apply_edits, non_overlapping

MODULE = """\
import jax
from jax import checkpoint_policies as cp

a = jax.checkpoint(f, policy="dots_saveable")
b = jax.checkpoint(f, save_policy=cp.nothing_saveable)
c = jax.checkpoint(f, policy=cp.dots_saveable())
d = jax.checkpoint(f, policy=cp.save_only_these_names(["x", "y"]))
"""
FIXED = """\
import jax
from jax import checkpoint_policies as cp

a = jax.checkpoint(f, policy=cp.dots_saveable)
b = jax.checkpoint(f, policy=cp.nothing_saveable)
c = jax.checkpoint(f, policy=cp.dots_saveable)
d = jax.checkpoint(f, policy=cp.save_only_these_names("x", "y"))
"""


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def call(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return call


def test_fix_leaves_valid_python_and_a_second_fix_changes_nothing(tmp_path, cli):
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    code, out, err = cli("--fix", "m.py")
    assert code == 0
    assert path.read_text() == FIXED
    ast.parse(path.read_text())
    assert out == ""  # fixed findings are not reported
    assert "Found 4 errors (4 fixed, 0 remaining)." in err
    assert cli("--fix", "m.py") == (0, "", "All checks passed!\n")
    assert path.read_text() == FIXED


def test_fixes_build_on_each_other_until_stable(tmp_path, cli):
    # Renaming checkpoint_policy= to policy= exposes the string policy, fixed on the next pass.
    path = tmp_path / "m.py"
    path.write_text('import jax\ng = jax.checkpoint(f, checkpoint_policy="dots_saveable")\n')
    code, _, err = cli("--fix", "m.py")
    assert code == 0 and "(2 fixed, 0 remaining)" in err
    assert path.read_text() == "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)\n"


def test_remaining_findings_are_reported_and_set_the_exit_code(tmp_path, cli):
    path = tmp_path / "m.py"
    path.write_text(MODULE + "e = jax.checkpoint(f, policy=True)\n")
    code, out, err = cli("--fix", "--output-format", "concise", "m.py")
    assert code == 1
    assert out.splitlines() == ["m.py:8:5: REM001 `policy=True` is not a policy"]
    assert "Found 5 errors (4 fixed, 1 remaining)." in err


def test_exit_non_zero_on_fix(tmp_path, cli):
    (tmp_path / "m.py").write_text(MODULE)
    assert cli("--fix", "--exit-non-zero-on-fix", "m.py")[0] == 1
    assert cli("--fix", "--exit-non-zero-on-fix", "m.py")[0] == 0  # nothing left to fix


def test_unsafe_fixes_only_when_asked(tmp_path, cli):
    path = tmp_path / "m.py"
    source = "import jax\nfrom jax import checkpoint_policies as cp\ng = jax.checkpoint(f, policy=cp.save_only_these_names(('x', 'y')))\n"
    path.write_text(source)
    code, _, err = cli("m.py")
    assert code == 1 and "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option)." in err
    code, out, _ = cli("--fix", "--output-format", "json", "m.py")
    assert code == 1 and path.read_text() == source
    [finding] = json.loads(out)
    assert finding["fix"]["applicability"] == "unsafe"  # JSON still describes the fix not applied
    assert cli("--fix", "--unsafe-fixes", "m.py")[0] == 0
    assert "save_only_these_names('x', 'y')" in path.read_text()


def test_diff_writes_nothing_and_exits_1(tmp_path, cli):
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    code, out, err = cli("--diff", "m.py")
    assert code == 1 and path.read_text() == MODULE
    assert out.startswith("--- a/m.py\n+++ b/m.py\n@@ ")
    assert '\n-a = jax.checkpoint(f, policy="dots_saveable")\n' in out
    assert "\n+a = jax.checkpoint(f, policy=cp.dots_saveable)\n" in out
    assert "Would fix 4 findings." in err
    if shutil.which("git"):  # the diff is a patch git applies
        subprocess.run(["git", "apply", "-"], input=out, text=True, cwd=tmp_path, check=True)
        assert path.read_text() == FIXED
        assert cli("--diff", "m.py") == (0, "", "No fixes available.\n")


def test_crlf_line_endings_are_kept(tmp_path, cli):
    path = tmp_path / "m.py"
    source = "import functools\nfrom flax import nnx\n\n@functools.partial(nnx.remat, policy='dots_saveable')\ndef f(x):\n    return x\n"
    path.write_bytes(source.replace("\n", "\r\n").encode())
    assert cli("--fix", "m.py")[0] == 0
    data = path.read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n") == source.count("\n") + 1  # one import added
    assert data.startswith(b"import functools\r\nimport jax\r\nfrom flax import nnx\r\n")  # where isort puts it


def test_bom_and_coding_cookie_are_kept(tmp_path, cli):
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbfimport jax\ng = jax.checkpoint(f, policy='dots_saveable')\n")
    latin = tmp_path / "latin.py"
    latin.write_bytes(
        b"# -*- coding: latin-1 -*-\nimport jax\n# caf\xe9\ng = jax.checkpoint(f, policy='dots_saveable')\n"
    )
    assert cli("--fix", "bom.py", "latin.py")[0] == 0
    assert (
        bom.read_bytes()
        == b"\xef\xbb\xbfimport jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)\n"
    )
    assert latin.read_bytes().startswith(b"# -*- coding: latin-1 -*-\nimport jax\n# caf\xe9\n")


def test_noqa_lines_are_never_touched(tmp_path, cli):
    path = tmp_path / "m.py"
    kept = "b = jax.checkpoint(f, policy='dots_saveable')  # noqa: E501"
    path.write_text(
        "import jax\n"
        "a = jax.checkpoint(f, policy='dots_saveable')  # noqa: REM001\n"
        f"{kept}\n"
        "c = jax.checkpoint(\n    f, policy='dots_saveable')  # noqa: E501\n"
    )
    before = path.read_text()
    code, out, err = cli("--fix", "--output-format", "concise", "m.py")
    assert path.read_text() == before
    # REM001 suppressed on `a`; `b` and `c` are reported but their lines carry a noqa.
    assert code == 1 and [line.split(":")[1] for line in out.splitlines()] == ["3", "4"]
    assert "fixable" not in err


def test_permissions_kept_symlink_followed_no_temporary_files(tmp_path, cli):
    real = tmp_path / "real.py"
    real.write_text(MODULE)
    real.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    assert cli("--fix", "link.py")[0] == 0
    assert link.is_symlink() and real.read_text() == FIXED
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.py", "real.py"]


def test_a_file_that_cannot_be_written_is_an_error_and_left_intact(tmp_path, cli, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(MODULE)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # what a read-only folder does (tests may run as root)
    code, _, err = cli("--fix", "m.py")
    assert code == 2 and "cannot write fixes to m.py: Permission denied" in err
    assert path.read_text() == MODULE and [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_stdin_fix_prints_the_fixed_source(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--fix", "--stdin-filename", "m.py", "-"],
        input=MODULE,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout == FIXED
    assert "(4 fixed, 0 remaining)" in done.stderr


def test_statistics_like_ruff(tmp_path, cli):
    (tmp_path / "m.py").write_text(MODULE + "e = jax.checkpoint(f, policy=True)\n")
    code, out, err = cli("--statistics", "m.py")
    assert code == 1
    assert out.splitlines() == [
        "2\tREM001\t[*] policy-not-callable",
        "2\tREM003\t[*] policy-misuse",
        "1\tREM002\t[*] unknown-keyword",
    ]
    assert err == "Found 5 errors.\n[*] 4 fixable with the `--fix` option.\n"
    (tmp_path / "m.py").write_text("import jax\ne = jax.checkpoint(f, policy=True)\n")
    assert cli("--statistics", "m.py")[1] == "1\tREM001\t[ ] policy-not-callable\n"


def test_a_fix_that_would_break_the_code_is_not_applied(tmp_path, cli, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    monkeypatch.setattr(
        SourceFile, "apply", lambda self, edits: SourceFile(self.text + "def broken(:\n", self.encoding)
    )
    code, _, err = cli("--fix", "m.py")
    assert code == 1 and path.read_text() == MODULE
    assert "m.py: a fix produced code that does not parse; not applied" in err


def test_fixes_that_never_settle_stop_with_a_warning(tmp_path, cli, monkeypatch):
    (tmp_path / "m.py").write_text(MODULE)
    monkeypatch.setattr(
        SourceFile, "apply", lambda self, edits: SourceFile(self.text + "#\n", self.encoding)
    )  # the findings never go
    code, _, err = cli("--fix", "m.py")
    assert code == 1 and f"fixes did not converge after {autofix.MAX_PASSES} passes" in err


def test_fix_and_trace_do_not_mix(tmp_path, cli):
    (tmp_path / "m.py").write_text(MODULE)
    code, _, err = cli("--fix", "--trace", "m.py")
    assert code == 2 and "--trace cannot be combined with --fix" in err
    assert (tmp_path / "m.py").read_text() == MODULE


def test_an_added_import_goes_where_isort_puts_it_and_never_rebinds_a_name(tmp_path, cli):
    (tmp_path / "m.py").write_text(
        '"""Doc."""\nimport os\n\nimport flax.linen as nn\nfrom flax import nnx\n\n'
        'g = nn.remat(f, policy="dots_saveable")\n'
    )
    assert cli("--fix", "m.py")[0] == 0
    assert (tmp_path / "m.py").read_text() == (
        '"""Doc."""\nimport os\n\nimport flax.linen as nn\nimport jax\nfrom flax import nnx\n\n'
        "g = nn.remat(f, policy=jax.checkpoint_policies.dots_saveable)\n"
    )
    rebound = 'import flax.linen as nn\n\njax = load_backend()\ng = nn.remat(f, policy="dots_saveable")\n'
    (tmp_path / "r.py").write_text(rebound)
    assert cli("--fix", "r.py")[0] == 1 and (tmp_path / "r.py").read_text() == rebound


def test_a_fix_that_noqa_blocks_is_shown_as_display_only(tmp_path, cli):
    # The finding is on line 2; the fix changes line 3, whose `# noqa` (for another code) --fix respects.
    (tmp_path / "m.py").write_text('import jax\ng = jax.checkpoint(\n    f, policy="dots_saveable")  # noqa: REM999\n')
    _, out, _ = cli("--output-format", "json", "m.py")
    [item] = json.loads(out)
    assert item["fix"]["applicability"] == "display-only"
    code, out, err = cli("m.py")
    assert "(not applied: a `# noqa` covers a line it changes)" in out and "fixable" not in err
    assert cli("--fix", "m.py")[0] == 1


# Applying fixes together (remat_lint/output/fixes.py), pinned where a hand-made edit of 2026-11-25
# passed the suite: two insertions at one point are not applied in the same pass (the same import
# would be added twice; the second waits for the re-lint); a whole line inserted above a line with a
# ``# noqa`` changes no line the noqa covers, so ``--fix`` applies it.


def _fixing(start: Position, end: Position, content: str) -> Finding:
    fix = Fix("fix", Applicability.SAFE, (TextEdit(start, end, content),))
    return Finding("REM005", "removed-api", Severity.ERROR, "m", "m.py", start, end, fix)


def test_insertions_at_one_point_go_one_per_pass():
    top = Position(1, 0)
    twice = [_fixing(top, top, "import jax\n"), _fixing(top, top, "import jax\n")]
    [chosen] = non_overlapping(twice)
    assert apply_edits("x = 1\n", chosen.fix.edits) == "import jax\nx = 1\n"
    apart = [_fixing(Position(1, 0), Position(1, 1), "y"), _fixing(Position(1, 2), Position(1, 3), "z")]
    assert non_overlapping(apart) == apart


def test_a_line_inserted_above_a_noqa_line_is_still_fixed():
    source = "import jax\ng = jax.checkpoint(f)  # noqa: REM999\n"
    above = _fixing(Position(2, 0), Position(2, 0), "import functools\n")
    inside = _fixing(Position(2, 4), Position(2, 6), "h")
    assert fixable([above, inside], {"m.py": source}, unsafe=False) == [above]
