"""--trace inputs: shape strings, inline ``# remat-lint: trace(...)`` comments, pyproject targets,
jaxtyping annotations (parsing only: no JAX here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remat_lint.trace.inputs import (
    inline_targets,
    jaxtyping_shape,
    parameter_examples,
    parse_inline,
    parse_targets,
    suggestion,
)
from remat_lint.trace.shapes import Shape


def test_inline_spec_mixes_shapes_literals_and_pytrees():
    spec = parse_inline('{"w": f32[8,8], "b": f32[8]}, i32[4], 3, train=True')
    assert spec.args == [{"w": Shape("float32", (8, 8)), "b": Shape("float32", (8,))}, Shape("int32", (4,)), 3]
    assert spec.kwargs == {"train": True}


def test_inline_comment_above_decorators_is_found_and_errors_are_kept():
    source = (
        "import jax\n"
        "# remat-lint: trace(f32[8,8])\n"
        "@jax.checkpoint\n"
        "def block(x):\n"
        "    return x\n"
        "\n"
        "# a comment in between\n"
        "# remat-lint: trace(f32[8)\n"
        "def broken(x):\n"
        "    return x\n"
        "\n"
        "def plain(x):  # remat-lint: trace(f32[8])  (not above the def: ignored)\n"
        "    return x\n"
    )
    found = {t.name: t for t in inline_targets(source)}
    assert set(found) == {"block", "broken"}
    assert found["block"].line == 4 and found["block"].spec.args == [Shape("float32", (8, 8))]
    assert found["broken"].spec is None and "cannot read trace(f32[8)" in found["broken"].error


def test_targets_from_pyproject(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text("def loss(x, y): ...\n")
    table = {
        "targets": [
            {
                "function": "pkg.model:loss",
                "args": ["f32[8,8]", "f32[32,8]"],
                "kwargs": {"w": "f32[8]"},
                "static": {"n": 3},
                "argnums": 0,
            },
            {"module": "pkg.model:MLP", "module_args": {"features": 8}, "init_args": ["f32[2,8]"]},
            {"function": "pkg.missing:loss"},
            {"function": "pkg.model.loss"},
            {"function": "pkg.model:loss", "args": ["f32[8"]},
            {"function": "pkg.model:loss", "colour": "red"},
        ]
    }
    specs, problems = parse_targets(table, tmp_path)
    assert [s.ref for s in specs] == ["pkg.model:loss", "pkg.model:MLP.apply"]
    first = specs[0]
    assert first.args == [Shape("float32", (8, 8)), Shape("float32", (32, 8))]
    assert first.kwargs == {"w": Shape("float32", (8,))} and first.static == {"n": 3} and first.argnums == (0,)
    assert first.path == str((tmp_path / "pkg" / "model.py").resolve())
    assert len(problems) == 4
    assert "cannot find module 'pkg.missing'" in problems[0]
    assert 'must look like "pkg.module:name"' in problems[1]
    assert "not a shape string" in problems[2] or "cannot" in problems[2]
    assert "unknown keys ['colour']" in problems[3]


def test_suggestion_declares_only_inferred_shapes():
    source = (
        'def step(x: Float[Array, "b 16"], labels, train: bool, w: jax.Array, n: int, y: Int[Array, "b"], k=3): ...\n'
    )
    examples = parameter_examples(source, "step")
    assert [(e.name, e.text) for e in examples] == [
        ("x", "f32[8,16]"),
        ("labels", "i32[8]"),
        ("train", "False"),
        ("w", None),
        ("n", "1"),
        ("y", "i32[8]"),
    ]
    declared = suggestion("pkg.model", "step", [e for e in examples if e.name != "w"])
    assert declared.startswith('take the shapes from a run of the project: --trace-run "python -m pytest -q tests"')
    assert "above `def step`:\n    # remat-lint: trace(f32[8,16], i32[8], False, 1, i32[8])\n" in declared
    assert 'function = "pkg.model:step"\n    args = ["f32[8,16]", "i32[8]", false, 1, "i32[8]"]' in declared
    assert "above `def f`:\n    # remat-lint: trace()\n" in suggestion("m", "f", [])  # nothing to infer


def test_suggestion_for_a_pytree_offers_the_run_instead():
    text = suggestion("pkg.model", "loss", parameter_examples("def loss(params, opt_state, x):\n    ...\n", "loss"))
    assert text.startswith('take the shapes from a run of the project: --trace-run "python -m pytest -q tests"')
    assert "# remat-lint: trace(" not in text and "args = [" not in text
    assert "`params`: a pytree" in text and "`opt_state`: a pytree" in text
    assert "`x`: neither its annotation nor its name says its shape" in text


def test_jaxtyping_annotations_share_named_dims():
    jaxtyping = pytest.importorskip("jaxtyping")
    sizes: dict[str, int] = {}
    x = jaxtyping_shape(jaxtyping.Float[jaxtyping.Array, "batch 16"], sizes)
    y = jaxtyping_shape(jaxtyping.Int[jaxtyping.Array, "batch"], sizes)
    assert (str(x), str(y)) == ("f32[8,16]", "i32[8]")
    assert jaxtyping_shape(int, sizes) is None
