"""REM103 on a helper that returns `jax.checkpoint(f, prevent_cse=False)`: judged by the calls of
the project, including a result called at once, and the message names the first caller by path;
the fix's title and applicability; written against surviving mutants."""

from __future__ import annotations

import os
import textwrap

from remat_lint.findings import Applicability
from tests.analysis.test_project import HELPERS, cli, make_project
from tests.helpers import lint


def test_a_helper_whose_result_is_called_at_once_is_reported(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (tmp_path / "pkg" / "model.py").write_text(
        "from .helpers import make_block\ndef forward(w, x):\n    return make_block(f)(w, x)\n"
    )
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--no-cache", ".")
    assert (path, row) == (os.path.join("pkg", "helpers.py"), 6)
    assert message.startswith(
        "REM103 `prevent_cse=False` on the checkpoint `make_block` returns makes it save no memory"
    )
    assert "(model.py, in `forward`)" in message


def test_the_message_names_the_caller_first_by_path(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    for module, function in (("zmodel", "zeta"), ("amodel", "alpha")):
        (tmp_path / "pkg" / f"{module}.py").write_text(
            f"from .helpers import make_block\ndef {function}(w, x):\n    return make_block(f)(w, x)\n"
        )
    monkeypatch.chdir(tmp_path)
    [(_, row, message)] = cli(capsys, "--no-cache", ".")
    assert row == 6 and "(amodel.py, in `alpha`)" in message


def test_the_fix_removes_prevent_cse_and_is_unsafe():
    code = "import jax\nblock = jax.checkpoint(block, prevent_cse=False)\nfor p in ps:\n    x = block(p, x)\n"
    [finding] = lint(code, {"REM103"})
    assert finding.fix is not None
    assert (finding.fix.message, finding.fix.applicability) == ("Remove `prevent_cse=False`", Applicability.UNSAFE)
