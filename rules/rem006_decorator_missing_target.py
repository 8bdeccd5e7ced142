from __future__ import annotations

import libcst as cst

from remat_lint.analysis.guards import expects_error
from remat_lint.analysis.sites import missing_target
from remat_lint.apis import FUNCTION_NAMES
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule


class DecoratorMissingTarget(Rule):
    """
    ## What it does
    Flags `jax.checkpoint`, `jax.remat`, `hk.remat` and Flax linen `nn.remat` / `nn.checkpoint` /
    `nn_partitioning.remat` called with keywords only, as if they were decorator factories:
    `@jax.checkpoint(policy=...)`, `jax.remat(prevent_cse=False)(f)`,
    `remat = nn.remat(static_argnums=(2,))`.

    ## Why is this bad?
    These APIs take the function (Flax: the Module class or function) as their first argument.
    Called without it they raise `TypeError: checkpoint() missing 1 required positional
    argument: 'fun'` (`'target'` for Flax) right there: for a decorator, as soon as the module is
    imported. `nnx.remat(policy=...)` and `eqx.filter_checkpoint(policy=...)` do return a
    decorator, so they are not flagged.

    ## Example
    ```python
    import jax

    @jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)
    def block(x, w):
        return jax.numpy.tanh(x @ w)
    ```

    ## Use instead
    ```python
    import functools
    import jax

    @functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
    def block(x, w):
        return jax.numpy.tanh(x @ w)
    ```

    ## Fix safety
    Safe: the original always raises. `api(**kw)` becomes `functools.partial(api, **kw)`
    (through the module's `partial` or `functools` import; `import functools` is added when
    neither exists), `api(**kw)(f)` becomes `api(f, **kw)`, and `api()` becomes `api`.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [`functools.partial`](https://docs.python.org/3/library/functools.html#functools.partial)
    """

    code = "REM006"
    trace_check = Rule.TraceCheck(
        "exception", raises=(("TypeError", "missing 1 required positional argument"),), refutes=True
    )
    name = "decorator-missing-target"
    severity = Severity.ERROR
    fix = FixAvailability.ALWAYS
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import functools\nimport jax\n@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)\ndef g(x):\n    return x",
        "import jax\n@jax.checkpoint\ndef g(x):\n    return x",
        "import jax\ng = jax.checkpoint(fun=f, policy=p)",
        "from flax import nnx\n@nnx.remat(policy=p)\ndef g(x):\n    return x",
        "import equinox as eqx\n@eqx.filter_checkpoint(policy=p)\ndef g(x):\n    return x",
        "import jax\nopts = dict(policy=p)\ng = jax.checkpoint(**opts)",
        "import functools\nimport jax\nr = functools.partial(jax.checkpoint, f)\ng = r(policy=p)",
        "import jax\ng = jax.checkpoint(checkpoint_policy=p)",  # REM002 reports the unknown keyword
        "import jax\nimport pytest\nwith pytest.raises(TypeError):\n    jax.checkpoint(policy=p)",
        "def checkpoint(**kw):\n    return lambda f: f\n@checkpoint(policy=None)\ndef g(x):\n    return x",
    ]
    INVALID = [
        Invalid(
            "import jax\n@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)\ndef g(x):\n    return x",
            fixed="import functools\nimport jax\n@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)\n"
            "def g(x):\n    return x",
        ),
        Invalid(
            "from functools import partial\nfrom jax import remat\n@remat(prevent_cse=False)\ndef g(x):\n    return x",
            fixed="from functools import partial\nfrom jax import remat\n@partial(remat, prevent_cse=False)\ndef g(x):\n    return x",
        ),
        Invalid(
            "import functools\nimport flax.linen as nn\nclass M(nn.Module):\n    @nn.remat(static_argnums=(2,))\n"
            "    def __call__(self, x, train):\n        return x",
            fixed="import functools\nimport flax.linen as nn\nclass M(nn.Module):\n"
            "    @functools.partial(nn.remat, static_argnums=(2,))\n    def __call__(self, x, train):\n        return x",
        ),
        Invalid(
            "import jax\n@jax.checkpoint(\n    policy=p,\n    prevent_cse=False,\n)\ndef g(x):\n    return x",
            fixed="import functools\nimport jax\n@functools.partial(\n    jax.checkpoint,\n    policy=p,\n    prevent_cse=False,\n)\n"
            "def g(x):\n    return x",
        ),
        Invalid("import jax\ng = jax.remat(policy=p)(f)", fixed="import jax\ng = jax.remat(f, policy=p)"),
        Invalid(
            "import jax\n@jax.checkpoint()\ndef g(x):\n    return x",
            fixed="import jax\n@jax.checkpoint\ndef g(x):\n    return x",
        ),
        Invalid(
            "import functools\nimport haiku as hk\nremat = hk.remat(static_argnums=(1,))",
            fixed="import functools\nimport haiku as hk\nremat = functools.partial(hk.remat, static_argnums=(1,))",
        ),
        Invalid(
            "import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(policy=p)(Block)",
            fixed="import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block, policy=p)",
        ),
        Invalid(
            "import functools\nimport jax\nr = functools.partial(jax.checkpoint, prevent_cse=False)\n@r(policy=p)\ndef g(x):\n    return x",
            fixed="import functools\nimport jax\nr = functools.partial(jax.checkpoint, prevent_cse=False)\n"
            "@functools.partial(r, policy=p)\ndef g(x):\n    return x",
        ),
    ]

    def check(self) -> None:
        for call in self.ctx.model.calls:
            api = missing_target(self.ctx.model, call)
            if api is None or expects_error(self.ctx.model, call, frozenset({"TypeError"})):
                continue
            parent = self.ctx.model.parent(call)
            fix = self._fix(call, parent)
            what = "Module class or function" if api.family == "flax" else "function"
            self.report(
                parent if isinstance(parent, cst.Decorator) else call,
                f"`{self.ctx.code(call.func)}` is not a decorator factory. Called without the {what}, it raises `TypeError: "
                f"{FUNCTION_NAMES[api.qname]}() missing 1 required positional argument: '{api.target_param}'` right "
                f"here; {fix.message[0].lower()}{fix.message[1:]}",
                fix=fix,
            )

    def _fix(self, call: cst.Call, parent: cst.CSTNode | None) -> FixSpec:
        if isinstance(parent, cst.Call) and parent.func is call and _one_positional(parent):
            # ``api(**kw)(f)`` -> ``api(f, **kw)``
            target = parent.args[0].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if call.args else cst.MaybeSentinel.DEFAULT
            )
            new = call.with_changes(args=[target, *call.args])
            return FixSpec(f"Pass `{self.ctx.code(target.value)}` first: `{self.ctx.code(new)}`", [(parent, new)])
        if not call.args:  # ``api()`` -> ``api``
            return FixSpec(f"Use `{self.ctx.code(call.func)}` itself", [(call, call.func)])
        partial, module = self.ctx.spell("functools.partial")
        # The function becomes partial's first argument, laid out like the first keyword was.
        layout = call.whitespace_before_args
        after = layout if isinstance(layout, cst.ParenthesizedWhitespace) else cst.SimpleWhitespace(" ")
        first = cst.Arg(call.func, comma=cst.Comma(whitespace_after=after))
        new = call.with_changes(func=cst.parse_expression(partial), args=[first, *call.args])
        return FixSpec(f"Use `{partial}({self.ctx.code(call.func)}, ...)`", [(call, new)], add_import=module)


def _one_positional(call: cst.Call) -> bool:
    return len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star
