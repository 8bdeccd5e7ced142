"""REM005 (removed API): each check stays quiet where the code expects the very error it predicts,
and reports the same code where another error is expected (found by mutation testing: a
misspelled or dropped exception name kept a check quiet nowhere, or under any handler)."""

from __future__ import annotations

import json

import pytest

from remat_lint.cli import command as cli
from tests.helpers import lint

GUARDED = """
import jax
try:
    {line}
except {error}:
    pass
"""

# (the use of a removed API, the error it raises on jax 0.10.2)
REMOVED = [
    ("import jax.checkpoint_policies", "ImportError"),
    ("from jax.checkpoint_policies import dots_saveable", "ModuleNotFoundError"),
    ("from jax.ad_checkpoint import checkpoint", "ImportError"),
    ("g = jax.ad_checkpoint.checkpoint(f)", "AttributeError"),
    ("g = jax.checkpoint(f, concrete=True)", "NotImplementedError"),
    ("jax.config.update('jax_new_checkpoint', True)", "AttributeError"),
]


def rem005(line: str, error: str) -> list[str]:
    return [f.message for f in lint(GUARDED.format(line=line, error=error), {"REM005"})]


@pytest.mark.parametrize(("line", "error"), REMOVED)
def test_quiet_where_the_predicted_error_is_caught(line: str, error: str) -> None:
    assert rem005(line, error) == []


@pytest.mark.parametrize(("line", "error"), REMOVED)
def test_reported_where_another_error_is_caught(line: str, error: str) -> None:
    assert len(rem005(line, "KeyError")) == 1


def test_an_older_target_jax_words_each_removed_api_as_breaking_on_upgrade(tmp_path, capsys, monkeypatch) -> None:
    """In the test process (tests/config/test_jax_version.py runs the CLI as a program, which a mutation run cannot see)."""
    (tmp_path / "m.py").write_text(
        "import jax\nimport jax.ad_checkpoint\nfrom jax.ad_checkpoint import remat\ng = jax.ad_checkpoint.checkpoint(f)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert (
        cli.main(["--no-cache", "--select", "REM005", "--output-format", "json", "--target-jax-version", "0.8", "m.py"])
        == 1
    )
    assert [item["message"] for item in json.loads(capsys.readouterr().out)] == [  # the first sentence
        "`jax.ad_checkpoint.remat` is deprecated, removed in JAX 0.10.0 — breaks on upgrade",
        "`jax.ad_checkpoint.checkpoint` is deprecated, removed in JAX 0.10.0 — breaks on upgrade",
    ]


def test_a_namespace_imported_after_a_module_in_one_statement_is_reported_without_a_fix() -> None:
    [finding] = lint("import os, jax.checkpoint_policies\n", {"REM005"})
    assert finding.message == (
        "`jax.checkpoint_policies` is a namespace object, not a module. This import raises `ModuleNotFoundError: No "
        "module named 'jax.checkpoint_policies'`; use `from jax import checkpoint_policies`"
    )
    assert finding.fix is None  # the statement imports `os` too
