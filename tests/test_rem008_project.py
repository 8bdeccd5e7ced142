"""REM008 across files: what the CLI reports for a set of files, and that flake8 reports nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

from remat_lint.config import Settings
from remat_lint.flake8_plugin import Plugin
from remat_lint.runner import run

LAYERS = """
from jax.ad_checkpoint import checkpoint_name

def mlp(x):
    return checkpoint_name(x, "mlp_out")
"""
POLICY = """
import jax
policy = jax.checkpoint_policies.save_only_these_names("mlp_outt", "attn_out")
"""


def lint(tmp_path: Path, **files: str) -> list[tuple[str, str]]:
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(str(path))
    result = run(paths, Settings(), frozenset({"REM008"}))
    return [(Path(f.path).stem, f.message) for f in result.findings]


def test_names_declared_in_another_file_count_and_suggest(tmp_path):
    (first, second) = lint(tmp_path, layers=LAYERS, policy=POLICY)
    assert first[0] == second[0] == "policy"
    assert "'mlp_outt'" in first[1] and "did you mean 'mlp_out'?" in first[1]
    assert "'attn_out'" in second[1] and "did you mean" not in second[1]


def test_a_name_declared_elsewhere_is_not_reported(tmp_path):
    attention = "from jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'attn_out')\n"
    found = lint(tmp_path, layers=LAYERS, policy=POLICY, attention=attention)
    assert len(found) == 1 and "'mlp_outt'" in found[0][1]


def test_a_non_literal_name_in_any_file_silences_the_project(tmp_path):
    tagged = "from jax.ad_checkpoint import checkpoint_name\ndef tag(x, name):\n    return checkpoint_name(x, name)\n"
    assert lint(tmp_path, layers=LAYERS, policy=POLICY, tagged=tagged) == []


def test_no_declaration_in_the_linted_files_is_silent(tmp_path):
    # The names come from code that was not linted (another package, a library).
    assert lint(tmp_path, policy=POLICY) == []


def test_flake8_does_not_report_rem008(tmp_path):
    source = textwrap.dedent(LAYERS + POLICY)
    assert codes(source) == []
    assert lint(tmp_path, both=LAYERS + POLICY) != []  # the CLI does, for the same file


def codes(source: str) -> list[str]:
    lines = source.splitlines(keepends=True)
    return [message.split()[0] for _, _, message, _ in Plugin(None, lines, "policy.py").run()]  # type: ignore[arg-type]
