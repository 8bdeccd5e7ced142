"""REM015 on layer classes of the linted module: a Haiku `hk.Module` subclass calling
`hk.get_parameter`, a Flax Module calling `self.param`; written against surviving mutants."""

from __future__ import annotations

from tests.helpers import lint


def _found(code: str) -> list[tuple[int, int, str]]:
    return [(f.start.row, f.start.column, f.message) for f in lint(code, {"REM015"})]


def test_a_haiku_module_of_this_file_that_gets_a_parameter():
    code = (
        "import haiku as hk, jax\nimport jax.numpy as jnp\nclass MyLinear(hk.Module):\n    def __call__(self, x):\n"
        "        w = hk.get_parameter('w', [4, 4], init=jnp.zeros)\n        return x @ w\n"
        "def forward(x):\n    return jax.checkpoint(lambda h: MyLinear()(h))(x)\n"
    )
    assert _found(code) == [
        (
            8,
            11,
            (
                "`jax.checkpoint` makes the first call of the Haiku layer `MyLinear`, so the parameters are tracers and `apply` "
                "raises `UnexpectedTracerError`. JAX's transforms do not lift Haiku variables: `init` creates the parameters "
                "while the checkpoint traces and returns tracers (a jitted `init` raises at once), and `apply` or any other use "
                "of them (`optax.apply_updates`) raises; use `hk.remat`"
            ),
        )
    ]


def test_a_flax_module_of_this_file_that_creates_a_param():
    code = (
        "import flax.linen as nn, jax\nclass Scale(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return x * self.param('s', nn.initializers.ones, (4,))\nclass B(nn.Module):\n    @nn.compact\n"
        "    def __call__(self, x):\n        return jax.checkpoint(lambda h: Scale()(h))(x)\n"
    )
    [(row, column, message)] = _found(code)
    assert (row, column) == (9, 15)
    assert message.startswith("`jax.checkpoint` makes the first call of the Flax layer `Scale`")
    assert message.endswith("use `nn.remat` (a lifted transform) on a Module class")
