"""The Language Server is an optional extra: the linter runs without ever importing pygls."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_linting_never_imports_the_server(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text('import jax\n\ng = jax.checkpoint(print, policy="dots_saveable")\n')
    script = textwrap.dedent(f"""
        import sys
        from remat_lint import cli, flake8_plugin  # noqa: F401
        code = cli.main(["--no-cache", {str(tmp_path / "model.py")!r}])
        print(code, sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol") or m.startswith("remat_lint.server")))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-1] == "1 []"


def test_server_rejects_unknown_arguments() -> None:
    run = subprocess.run([sys.executable, "-m", "remat_lint", "server", "--tcp"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "usage: remat-lint server" in run.stderr
