"""--add-noqa: adopting remat-lint on existing code (ruff's semantics)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SOURCE = '''import jax

a = jax.checkpoint(f, policy='dots_saveable')
b = jax.checkpoint(f, policy='x')  # noqa: REM002
c = jax.checkpoint(f, policy="x", doc="""
multi-line
""")
d = jax.checkpoint(
    f,
    policy='x',
)
e = jax.checkpoint(f, policy='x')  # a comment
jax.checkpoint(f, policy='x')
'''
EXPECTED = '''import jax

a = jax.checkpoint(f, policy='dots_saveable')  # noqa: REM001
b = jax.checkpoint(f, policy='x')  # noqa: REM002, REM001
c = jax.checkpoint(f, policy="x", doc="""
multi-line
""")  # noqa: REM001, REM002
d = jax.checkpoint(  # noqa: REM001
    f,
    policy='x',
)
e = jax.checkpoint(f, policy='x')  # a comment  # noqa: REM001
jax.checkpoint(f, policy='x')  # noqa: REM001, REM007
'''


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True
    )


def test_add_noqa_appends_merges_and_keeps_multi_line_strings_whole(tmp_path):
    (tmp_path / "m.py").write_bytes(SOURCE.replace("\n", "\r\n").encode())  # line endings kept
    proc = cli("--add-noqa", ".", cwd=tmp_path)
    assert proc.returncode == 0 and "Added 6 noqa directives." in proc.stderr
    assert (tmp_path / "m.py").read_bytes() == EXPECTED.replace("\n", "\r\n").encode()
    assert cli(".", cwd=tmp_path).returncode == 0  # nothing left to report
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=REM", "m.py"], cwd=tmp_path, capture_output=True, text=True
    )
    # flake8 reads the same directives; --select=REM enables REM100 too, which finds that the
    # `# noqa: REM002` the file had suppresses nothing
    assert flake8.stdout == "m.py:4:36: REM100 Unused `noqa` directive (unused: `REM002`)\n"


def test_add_noqa_is_idempotent(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    cli("--add-noqa", "m.py", cwd=tmp_path)
    once = (tmp_path / "m.py").read_text()
    proc = cli("--add-noqa", "m.py", cwd=tmp_path)
    assert proc.returncode == 0 and "Added 0 noqa directives." in proc.stderr
    assert (tmp_path / "m.py").read_text() == once


def test_add_noqa_does_not_mix_with_fix(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    assert cli("--add-noqa", "--fix", "m.py", cwd=tmp_path).returncode == 2
    assert (tmp_path / "m.py").read_text() == SOURCE


def test_a_noqa_inside_a_string_is_text_and_never_edited(tmp_path):
    source = 'import jax\nc = jax.checkpoint(f, policy="x", doc="# noqa: REM002")\n'
    (tmp_path / "m.py").write_text(source)
    cli("--add-noqa", "m.py", cwd=tmp_path)
    assert (tmp_path / "m.py").read_text() == source.replace(")\n", ")  # noqa: REM001\n")  # the string stays as it was
