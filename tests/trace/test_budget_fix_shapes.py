"""--memory-budget --fix on every argument shape a checkpoint call takes: the file written parses and
holds the chosen policy at that call; a fix that would not parse is refused (exit 2), never written."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from remat_lint.cli import command as cli
from remat_lint.engine.sources import SourceFile
from remat_lint.output.autofix import FixedFile
from remat_lint.trace.driver import budget_fix
from remat_lint.trace.driver.budget_fix import Change, rewrite

DOTS = "jax.checkpoint_policies.dots_saveable"
HEADER = "import functools\nfrom functools import partial\n\nimport flax.linen as nn\nimport jax\n\n\n"

# (the site's source, the text the fixed file must hold); the site is on the first line after HEADER.
SHAPES = {
    "a tuple keyword": (
        "Block = nn.remat(Mlp, static_argnums=(2,))\n",
        f"nn.remat(Mlp, static_argnums=(2,), policy={DOTS})",
    ),
    "a tuple keyword, trailing comma": (
        "Block = nn.remat(Mlp, static_argnums=(2,),)\n",
        f"nn.remat(Mlp, static_argnums=(2,), policy={DOTS},)",
    ),
    "one argument per line": (
        "Block = nn.remat(\n    Mlp,\n    static_argnums=(1, 2),\n)\n",
        f"nn.remat(\n    Mlp,\n    static_argnums=(1, 2),\n    policy={DOTS},\n)",
    ),
    "a positional argument alone": ("block = jax.checkpoint(layer)\n", f"jax.checkpoint(layer, policy={DOTS})"),
    "a positional argument, trailing comma": (
        "block = jax.checkpoint(layer,)\n",
        f"jax.checkpoint(layer, policy={DOTS},)",
    ),
    "a parenthesised target": ("block = jax.checkpoint((layer))\n", f"jax.checkpoint((layer), policy={DOTS})"),
    "keywords": (
        "block = jax.checkpoint(layer, prevent_cse=False, static_argnums=(0,))\n",
        f"jax.checkpoint(layer, prevent_cse=False, static_argnums=(0,), policy={DOTS})",
    ),
    "a parenthesised call": (
        "block = (jax.checkpoint(layer, static_argnums=(0,)))\n",
        f"(jax.checkpoint(layer, static_argnums=(0,), policy={DOTS}))",
    ),
    "a bare decorator": (
        "@jax.checkpoint\ndef block(x):\n    return x\n",
        f"@functools.partial(jax.checkpoint, policy={DOTS})\ndef block",
    ),
    "a partial decorator with a tuple": (
        "@partial(jax.checkpoint, static_argnums=(1,))\ndef block(x, n):\n    return x\n",
        f"@partial(jax.checkpoint, static_argnums=(1,), policy={DOTS})\ndef block",
    ),
    "functools.partial, trailing comma": (
        "@functools.partial(nn.remat, static_argnums=(2,),)\nclass Block(nn.Module):\n    pass\n",
        f"@functools.partial(nn.remat, static_argnums=(2,), policy={DOTS},)\nclass Block",
    ),
    "a policy written at the call": (
        "block = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable,)\n",
        f"jax.checkpoint(layer, policy={DOTS},)",
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_policy_is_written_into_every_argument_shape(tmp_path: Path, shape: str) -> None:
    site, expected = SHAPES[shape]
    path = tmp_path / "model.py"
    path.write_text(HEADER + site, encoding="utf-8")
    line = HEADER.count("\n") + 1
    made, notes = rewrite(str(path), {line: Change("dots_saveable", DOTS)})
    assert notes == [] and made is not None
    ast.parse(made.fixed.text)
    assert expected in made.fixed.text
    assert made.fixed.text.startswith(HEADER)


def _budget_fix(
    tmp_path: Path, fixed_text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """cli._budget_fix with a plan for model.py whose rewrite gives ``fixed_text``."""
    path = tmp_path / "model.py"
    path.write_text(HEADER + "block = jax.checkpoint(layer)\n", encoding="utf-8")
    before = SourceFile(path.read_text(encoding="utf-8"), "utf-8")
    monkeypatch.setattr(
        budget_fix, "changes_by_file", lambda plans: ({str(path): {8: Change("dots_saveable", DOTS)}}, [])
    )
    monkeypatch.setattr(
        budget_fix, "rewrite", lambda p, changes: (FixedFile(p, before, SourceFile(fixed_text, "utf-8")), [])
    )
    code = cli._budget_fix(argparse.Namespace(budget_diff=False), [], 1)
    return code, capsys.readouterr().err


def test_a_fix_that_does_not_parse_is_refused_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = HEADER + "block = jax.checkpoint(layer, static_argnums=(2,, policy=x))\n"
    code, err = _budget_fix(tmp_path, broken, monkeypatch, capsys)
    assert code == 2
    assert "model.py not written: the fix does not parse (line 8:" in err
    assert "policies written in 0 files." in err
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == HEADER + "block = jax.checkpoint(layer)\n"


def test_a_fix_that_parses_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    good = HEADER + f"block = jax.checkpoint(layer, policy={DOTS})\n"
    code, err = _budget_fix(tmp_path, good, monkeypatch, capsys)
    assert code == 1 and "policies written in 1 file." in err
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == good


def test_lint_fixes_that_do_not_parse_are_not_written(tmp_path: Path) -> None:
    from remat_lint.output.autofix import write_fixes

    path = tmp_path / "a.py"
    path.write_text("x = 1\n", encoding="utf-8")
    errors = write_fixes([FixedFile(str(path), SourceFile("x = 1\n", "utf-8"), SourceFile("x = (1\n", "utf-8"))])
    assert len(errors) == 1 and "a.py not written: the fix does not parse (line 1:" in errors[0]
    assert path.read_text(encoding="utf-8") == "x = 1\n"
