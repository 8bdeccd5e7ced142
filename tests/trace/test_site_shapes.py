"""A checkpoint site's table says whether its shapes were guessed, and recommends only from shapes a
project declared or ran (a table at ``f32[8]`` guesses measures nothing the project runs)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.trace_cases import lint

pytest.importorskip("jax")

MODULE = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def block(w, x):
        return jnp.tanh(x @ w)


    layer = jax.checkpoint(block)


    def loss(w, x):
        return jnp.mean(layer(w, jnp.sin(x)) ** 2)


    @jax.checkpoint
    def logged(x):
        print(x)
        return x
    """
)
DECLARED = '[[tool.remat-lint.trace.targets]]\nfunction = "m:loss"\nargs = ["f32[16,16]", "f32[4,16]"]\n'


def _site(tmp_path: Path, config: str) -> tuple[dict, str]:
    (tmp_path / "m.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n" + config, encoding="utf-8")
    # one traced run gives the text report (stdout) and the JSON one (--extra-output)
    text = lint("--trace", "--extra-output", "json=out.json", "m.py", cwd=tmp_path).stdout
    (finding,) = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    (site,) = [s for s in finding["trace"]["sites"] if s["line"] == 9]
    return site, text


def test_a_table_at_guessed_shapes_says_so_and_recommends_nothing(tmp_path: Path) -> None:
    site, text = _site(tmp_path, "")
    assert site["shapes"] == "guessed"
    assert site["recommendation"].startswith("none: the shapes were guessed (shape search)")
    assert "m.py:9: checkpoint site (traced as loss(f32[8], f32[8]), at guessed shapes)" in text
    assert "remove the checkpoint" not in text


def test_a_table_at_declared_shapes_recommends(tmp_path: Path) -> None:
    site, text = _site(tmp_path, DECLARED)
    assert site["shapes"] == "declared" and not site["recommendation"].startswith("none:")
    assert "m.py:9: checkpoint site (traced as loss(f32[16,16], f32[4,16]))\n" in text


def test_removing_a_checkpoint_within_the_slack_says_what_it_saves() -> None:
    """A decoder's nothing_saveable at 616.7 KiB vs 672.5 KiB without it (bench/done_when/p4): the
    fewest FLOPs within 10 % is "none", but the checkpoint does save 8 %; saying "no memory" was false."""
    from remat_lint.trace.worker.residuals import _recommend

    def row(policy: str, temp: int, flops: float) -> dict[str, object]:
        return {"policy": policy, "temp_bytes": temp, "flops": flops, "compiled": True}

    class Site:
        prevent_cse = True

    saving = [row("none", 688_640, 5.06e7), row("nothing_saveable", 631_504, 5.48e7)]
    assert _recommend(Site(), saving).endswith("; the checkpoint saves at most 8% of temp memory here")  # type: ignore[arg-type]
    equal = [row("none", 631_504, 5.06e7), row("nothing_saveable", 631_504, 5.48e7)]
    assert _recommend(Site(), equal).endswith("; the checkpoint saves no memory here")  # type: ignore[arg-type]
