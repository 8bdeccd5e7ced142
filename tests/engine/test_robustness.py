"""Never crash on input: every bad file gives a REM000 diagnostic and linting goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from remat_lint.engine.lint import lint_source
from remat_lint.registry import all_rules

ALL = frozenset(rule.code for rule in all_rules())
BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"  # REM001 on line 2
# Makes any generated program pass the prefilter, so the engine and every rule really run on it.
HEADER = "import jax\nfrom flax import linen as nn\nckpt = jax.checkpoint\n"


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", "--output-format", "json", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def findings(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, int, str]]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return sorted((f["filename"], f["location"]["row"], f["code"]) for f in json.loads(proc.stdout))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_generated_programs_never_crash_the_engine(source):
    for text in (
        source,
        HEADER + source,
        HEADER + "def f(x):\n" + "".join(f"    {line}\n" for line in source.splitlines()),
    ):
        result = lint_source("generated.py", text, ALL)
        assert all(f.code != "REM000" or "internal error" not in f.message for f in result.findings), result.findings


def test_syntax_error_is_reported_and_other_files_are_linted(tmp_path):
    (tmp_path / "broken.py").write_text("import jax\njax.checkpoint(f\n")
    (tmp_path / "bad.py").write_text(BAD)
    proc = cli(".", cwd=tmp_path)
    assert proc.returncode == 1
    assert findings(proc) == [("bad.py", 2, "REM001"), ("broken.py", 2, "REM000")]


def test_encodings_bom_cookie_crlf(tmp_path):
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    (tmp_path / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD.encode())
    (tmp_path / "crlf.py").write_bytes(BAD.replace("\n", "\r\n").encode())
    (tmp_path / "latin1_without_cookie.py").write_bytes(b"# caf\xe9\n" + BAD.encode())
    (tmp_path / "unknown_codec.py").write_bytes(b"# -*- coding: no-such-codec -*-\n" + BAD.encode())
    proc = cli(".", cwd=tmp_path)
    assert findings(proc) == [
        ("bom.py", 2, "REM001"),
        ("cookie.py", 4, "REM001"),
        ("crlf.py", 2, "REM001"),
        ("latin1_without_cookie.py", 1, "REM000"),
        ("unknown_codec.py", 1, "REM000"),
    ]


def test_huge_file(tmp_path):
    body = "".join(f"v{i} = {i}\n" for i in range(50_000))
    (tmp_path / "huge.py").write_text(body + BAD)
    proc = cli("huge.py", cwd=tmp_path)
    assert findings(proc) == [("huge.py", 50_002, "REM001")]


@pytest.mark.parametrize(
    "nested",
    [
        "x = " + "(" * 3_000 + "1" + ")" * 3_000,  # libcst's parser overflows its stack on this
        "x = " + "-" * 100_000 + "1",
        "x = 1" + " + 1" * 20_000,  # libcst takes minutes on this
        "x = " + "f(" * 1_000 + ")" * 1_000,
    ],
    ids=["brackets", "unary", "binary", "calls"],
)
def test_deeply_nested_expressions_become_rem000(tmp_path, nested):
    (tmp_path / "deep.py").write_text(f"import jax\n{nested}\ng = jax.checkpoint(f)\n")
    (tmp_path / "bad.py").write_text(BAD)
    proc = cli(".", cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [("bad.py", 2, "REM001"), ("deep.py", 2 if "(" in nested else 1, "REM000")]


def test_symlink_loops(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    proc = cli(".", cwd=tmp_path, timeout=60)
    assert findings(proc) == [("pkg/bad.py", 2, "REM001")]
    proc = cli("a.py", "pkg", cwd=tmp_path, timeout=60)
    assert findings(proc) == [("a.py", 1, "REM000"), ("pkg/bad.py", 2, "REM001")]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tmp_path):
    (tmp_path / "secret.py").write_text(BAD)
    (tmp_path / "secret.py").chmod(0)
    (tmp_path / "bad.py").write_text(BAD)
    try:
        proc = cli(".", cwd=tmp_path)
    finally:
        (tmp_path / "secret.py").chmod(0o644)
    assert findings(proc) == [("bad.py", 2, "REM001"), ("secret.py", 1, "REM000")]


def test_empty_file_and_missing_directory(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    proc = cli("empty.py", cwd=tmp_path)
    assert proc.returncode == 0 and findings(proc) == []
    proc = cli("empty.py", "no_such_dir", cwd=tmp_path)
    assert proc.returncode == 1
    assert findings(proc) == [("no_such_dir", 1, "REM000")]
    assert "no such file or directory" in proc.stdout


def test_null_bytes(tmp_path):
    (tmp_path / "nul.py").write_bytes(b"import jax\njax.checkpoint(f)\n\0\n")
    assert findings(cli("nul.py", cwd=tmp_path)) == [("nul.py", 1, "REM000")]


def test_python_standard_library(tmp_path):
    """The whole standard library (including its deliberately broken test files) lints without a
    traceback; the prefilter keeps this to a few seconds."""
    proc = cli(sysconfig.get_paths()["stdlib"], cwd=tmp_path, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    json.loads(proc.stdout)
