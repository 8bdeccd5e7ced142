from __future__ import annotations

import libcst as cst

from remat_lint.analysis.guards import expects_error
from remat_lint.analysis.sites import RematSite, missing_target
from remat_lint.analysis.static_args import fails_at_wrap
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule


class DiscardedCheckpoint(Rule):
    """
    ## What it does
    Flags a remat call used as a statement on its own (`jax.checkpoint(f)`, `nn.remat(Block)`,
    `hk.remat(layer)`, `functools.partial(jax.checkpoint, policy=p)(f)`): its result, the
    checkpointed function or Module class, is thrown away.

    ## Why is this bad?
    Remat APIs do not change their argument: they return a new function (Flax linen: a new
    Module class) that recomputes its intermediates under differentiation. Discarding it leaves
    `f` exactly as it was, so nothing is checkpointed and memory use is unchanged; nothing
    fails, so the mistake goes unnoticed until someone measures memory.

    Calling the result right away (`jax.checkpoint(f)(x)`) is not flagged: that does run the
    checkpointed function. Nor is a remat call under `pytest.raises` or in a `try` block
    (checks that the wrap succeeds or fails), nor anything in test files.

    ## Example
    ```python
    import jax

    def block(x, w):
        return jax.numpy.tanh(x @ w)

    jax.checkpoint(block)
    ```

    ## Use instead
    ```python
    import jax

    @jax.checkpoint
    def block(x, w):
        return jax.numpy.tanh(x @ w)
    ```

    ## Fix safety
    No fix: whether the checkpointed version should replace `f` everywhere, or only where it is
    called, is the author's decision.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    """

    code = "REM007"
    name = "discarded-checkpoint"
    severity = Severity.ERROR
    quiet_in_tests = True  # tests call remat APIs for their effect on purpose

    VALID = [
        "import jax\nblock = jax.checkpoint(block)",
        "import jax\n@jax.checkpoint\ndef g(x):\n    return x",
        "import jax\ndef apply(f, x):\n    return jax.checkpoint(f)(x)",
        "import jax\njax.checkpoint(f)(x)",
        "import flax.linen as nn\nBlock = nn.remat(Block)\nlayers = [nn.remat(Block)(8) for _ in range(2)]",
        "import jax\ntry:\n    jax.checkpoint(f, static_argnames=('n',))\nexcept TypeError:\n    pass",
        "import jax\nimport pytest\nwith pytest.raises(NotImplementedError):\n    jax.checkpoint(f, concrete=True)",
        "import torch\ntorch.utils.checkpoint.checkpoint(f, x)",
        "import jax\njax.checkpoint(policy=p)(f)",  # raises TypeError first: REM006
        "import jax\njax.checkpoint(f, save_policy=p)",  # raises TypeError first: REM002
        "import jax\njax.checkpoint(f, concrete=False)",  # raises NotImplementedError first: REM005
        "def checkpoint(f):\n    registry.append(f)\ncheckpoint(f)",
    ]
    INVALID = [
        Invalid("import jax\ndef block(x):\n    return x\njax.checkpoint(block)"),
        Invalid("import jax\ndef build(f):\n    jax.remat(f, prevent_cse=False)\n    return f"),
        Invalid("import flax.linen as nn\nnn.remat(Block, static_argnums=(2,))"),
        Invalid("import haiku as hk\ndef forward(x):\n    hk.remat(layer)\n    return layer(x)"),
        Invalid("import functools\nimport jax\nfunctools.partial(jax.checkpoint, policy=p)(f)"),
        Invalid("from flax import nnx\nnnx.remat(model)"),
        Invalid("import equinox as eqx\neqx.filter_checkpoint(f)"),
    ]

    def check(self) -> None:
        for site in self.ctx.sites:
            if site.call is None or not isinstance(self.ctx.model.parent(site.node), cst.Expr):
                continue
            if site.ref.factory is not None and missing_target(self.ctx.model, site.ref.factory):
                continue  # ``jax.checkpoint(policy=p)(f)`` raises first (REM006)
            if self._raises(site):
                continue  # nothing is returned to discard (REM002/REM005)
            if expects_error(self.ctx.model, site.node):
                continue
            target = f"`{self.ctx.code(site.target)}`" if site.target is not None else "its argument"
            self.report(
                site.node,
                f"The result of `{site.api.display}` is discarded. It returns a checkpointed version and leaves "
                f"{target} unchanged, so nothing is checkpointed; assign the result and use it, or apply it as a "
                "decorator",
            )

    def _raises(self, site: RematSite) -> bool:
        """The remat call raises instead of returning: an unknown keyword or positional argument, or
        ``concrete=`` on jax (``hk.remat`` checks its arguments only when its result is called)."""
        if site.api.family == "haiku":
            return False
        return fails_at_wrap(self.ctx.model, site) or (
            site.api.family == "jax" and site.keyword("concrete") is not None
        )
