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
        from remat_lint.cli import command as cli  # noqa: F401
        from remat_lint import flake8_plugin
        code = cli.main(["--no-cache", {str(tmp_path / "model.py")!r}])
        print(code, sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol") or m.startswith("remat_lint.server")))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-1] == "1 []"


def test_server_rejects_unknown_arguments() -> None:
    run = subprocess.run([sys.executable, "-m", "remat_lint", "server", "--tcp"], capture_output=True, text=True)
    assert run.returncode == 2
    assert "usage: remat-lint server" in run.stderr


def _message(payload: str) -> bytes:
    body = payload.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_server_ends_quietly_when_the_client_says_exit(tmp_path: Path) -> None:
    messages = [
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}, "processId": null, '
        f'"rootUri": "{tmp_path.as_uri()}"}}}}',
        '{"jsonrpc": "2.0", "method": "initialized", "params": {}}',
        '{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}',
        '{"jsonrpc": "2.0", "method": "exit"}',
    ]
    run = subprocess.run(
        [sys.executable, "-m", "remat_lint", "server"],
        input=b"".join(_message(m) for m in messages),
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert b'"id": 2' in run.stdout.replace(b'"id":2', b'"id": 2')
    assert b"Traceback" not in run.stderr, run.stderr.decode()
    assert run.returncode == 0
