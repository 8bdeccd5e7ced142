"""Which imported modules a file linted alone parses for the wraps judged at its calls
(``project/exports.py``): a rule's ``export_words`` count outside def and class bodies only, and
every doubt keeps the module."""

from __future__ import annotations

import pytest

from remat_lint.project.exports import may_export

NEEDS = [("static_argnums",), ("partitioning", "remat")]


@pytest.mark.parametrize(
    "source",
    [
        "@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, n):\n    return x\n",
        "R = nn.remat(\n    Block,\n    static_argnums=(2,),\n)\n",
        "if REMAT:\n    R = nn.remat(Block, static_argnums=(2,))\n",
        "def g():\n    pass\nckpt = functools.partial(jax.checkpoint, static_argnums=(1,))\n",
        "import flax.linen.partitioning as nn_partitioning\nR = nn_partitioning.remat(Mlp)\n",
        'def f():\n    """A docstring\nwhose line is not indented."""\n    return jax.jit(g, static_argnums=1)\n',
    ],
    ids=["decorator", "multi-line-call", "module-level-if", "after-a-def", "partitioning", "unindented-string"],
)
def test_a_module_that_may_bind_a_wrap_at_module_level_is_kept(source):
    assert may_export(source.encode(), NEEDS)


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    return jax.jit(g, static_argnums=(1,))(x)\n",
        "class Block(nn.Module):\n    def __call__(self, x):\n        return nn.remat(B, static_argnums=(2,))()(x)\n",
        "def f(\n    x,\n):\n    return jax.jit(g, static_argnums=(1,))(x)\n",
        "import flax.linen.partitioning as nn_partitioning\nx = nn_partitioning.with_sharding_constraint(y)\n",
        "import jax\nR = jax.checkpoint(f)\n",
    ],
    ids=["in-a-function", "in-a-method", "after-a-closing-bracket", "partitioning-without-remat", "no-word"],
)
def test_a_module_that_binds_none_at_module_level_is_not_parsed(source):
    assert not may_export(source.encode(), NEEDS)


def test_a_rule_without_words_keeps_every_module_and_no_rule_none():
    assert may_export(b"x = 1\n", [()])
    assert not may_export(b"R = nn.remat(Block, static_argnums=(2,))\n", [])
