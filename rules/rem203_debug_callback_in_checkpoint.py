from __future__ import annotations

from typing import Iterator

import libcst as cst

from remat_lint.analysis.bodies import CheckpointedFunction, Function
from remat_lint.analysis.guards import only_where_error_expected
from remat_lint.analysis.reaching import statement_of
from remat_lint.apis import policy_info
from remat_lint.apis.jax import DEBUG_CALLBACKS, IO_CALLBACKS
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

_IO_ERROR = frozenset({"NotImplementedError", "ValueError"})  # ValueError: a differentiated operand (no JVP)

TWICE = (
    "runs twice per step under `grad`. It runs once in the forward pass and again when the backward pass "
    "recomputes the function (with `policy=everything_saveable`, once if what it is given is computed in the function); "
    "expect duplicated output, or move it outside the checkpointed function"
)
IO_FAILS = (
    "fails under `grad`. The first `grad`/`vjp` raises `ValueError: IO callbacks do not support JVP.` when its operand "
    "depends on a differentiated value (checkpoint or not), and otherwise `NotImplementedError: Effects not supported "
    "in partial-eval of checkpoint/remat` (JAX cannot partially evaluate an `io_callback` inside a checkpoint); "
    "call it outside the checkpointed function"
)


class DebugCallbackInCheckpoint(Rule):
    """
    ## What it does
    Flags `jax.debug.print`, `jax.debug.callback` and `jax.experimental.io_callback` inside a
    checkpointed function (or in a same-module function it calls: reported at that call).

    ## Why is this bad?
    Unlike Python side effects, these run when the computation runs, and a checkpoint runs its
    function twice under `grad`: in the forward pass and again when the backward pass recomputes
    it. Measured (jax 0.10.2, with and without `jit`): a `jax.debug.print` or
    `jax.debug.callback` in a checkpointed function fires twice per `grad` step with the default
    policy and with `dots_saveable`; with `everything_saveable`, once when what it is given is
    computed in the function, and still twice when it is given one of the function's arguments
    as it is. Counters driven by callbacks double and logs show every line twice.

    `io_callback` is worse (measured, jax 0.10.2, with and without `jit`, under every policy): the
    first `grad` or `vjp` raises `ValueError: IO callbacks do not support JVP.` when its operand
    depends on a differentiated value (with or without the checkpoint; `jvp` too), and otherwise
    `NotImplementedError: Effects not supported in partial-eval of checkpoint/remat`: JAX
    cannot partially evaluate it inside a checkpoint (plain calls and `jit` work).

    Not reported when the checkpoint's policy is `everything_saveable` (its duplicates of an
    argument printed as it is are missed).

    ## Example
    ```python
    import jax

    @jax.checkpoint
    def block(x, w):
        y = jnp.tanh(x @ w)
        jax.debug.print("activation norm {n}", n=jnp.linalg.norm(y))
        return y
    ```

    ## Use instead
    ```python
    import jax

    @jax.checkpoint
    def block(x, w):
        return jnp.tanh(x @ w)

    def forward(x, w):
        y = block(x, w)
        jax.debug.print("activation norm {n}", n=jnp.linalg.norm(y))
        return y
    ```

    ## Fix safety
    No fix: the callback may be meant to observe the recomputation too.

    ## References
    - [`jax.debug.print`](https://docs.jax.dev/en/latest/_autosummary/jax.debug.print.html)
    - [External callbacks in JAX](https://docs.jax.dev/en/latest/external-callbacks.html)
    - [jax-ml/jax#5134: callbacks under checkpoint](https://github.com/jax-ml/jax/issues/5134)
    """

    code = "REM203"
    trace_check = Rule.TraceCheck(
        "callback-count",
        raises=(
            ("NotImplementedError", "Effects not supported"),
            ("ValueError", "IO callbacks do not support JVP"),
        ),
    )
    name = "debug-callback-in-checkpoint"
    severity = Severity.INFO

    VALID = [
        (
            "import jax, pytest\nfrom jax.experimental import io_callback\ndef test_fails():\n    @jax.checkpoint\n"
            "    def f(x, y):\n        io_callback(save, None, y)\n        return x\n"
            "    with pytest.raises(NotImplementedError):\n        jax.grad(f)(1.0, 2.0)"
        ),
        "import jax\n@jax.checkpoint\ndef f(x):\n    return x\ndef g(x):\n    y = f(x)\n    jax.debug.print('{y}', y=y)\n    return y",
        "import jax\n@jax.checkpoint\ndef f(x):\n    print(x)\n    return x",
        "import functools, jax\n"
        "@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.everything_saveable)\ndef f(x):\n"
        "    jax.debug.print('{x}', x=x)\n    return x",
        "from jax import debug\ndef checkpoint(f):\n    return f\n@checkpoint\ndef f(x):\n    debug.print('{x}', x=x)\n    return x",
    ]
    INVALID = [
        Invalid("import jax\n@jax.checkpoint\ndef f(x):\n    jax.debug.print('x={x}', x=x)\n    return x"),
        Invalid(
            "import jax\nfrom jax.experimental import io_callback\n@jax.checkpoint\ndef f(x):\n    io_callback(save, None, x)\n    return x"
        ),
        Invalid(
            "import jax\ndef trace(x):\n    jax.debug.callback(record, x)\n@jax.checkpoint\ndef f(x):\n    trace(x)\n    return x"
        ),
        Invalid(
            "import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        jax.debug.print('{x}', x=x)\n        return x\nR = nn.remat(Block)"
        ),
    ]

    def check(self) -> None:
        bodies = self.ctx.bodies
        for fn in bodies.functions:
            saves_everything = self._saves_everything(fn)
            for call, message in self._callbacks(fn.node, saves_everything):
                if not self._tests_the_error(call, message):
                    self.report(
                        statement_of(self.ctx.model, call),
                        f"`{self.ctx.code(call.func)}` in a checkpointed function {message}",
                    )
            for helper in bodies.helpers(fn.node):
                found = next(self._callbacks(helper.function, saves_everything), None)
                if found is not None and not self._tests_the_error(helper.call, found[1]):
                    call, message = found
                    self.report(
                        helper.call,
                        f"Calls `{self.ctx.code(helper.call.func)}` from a checkpointed function, and its "
                        f"`{self.ctx.code(call.func)}` {message}",
                    )

    def _callbacks(self, function: Function, saves_everything: bool) -> Iterator[tuple[cst.Call, str]]:
        for call in self.ctx.bodies.calls(function):
            qname = self.ctx.qualified_name(call.func)
            if qname in IO_CALLBACKS:
                yield call, IO_FAILS
            elif qname in DEBUG_CALLBACKS and not saves_everything:
                yield call, TWICE

    def _tests_the_error(self, node: cst.CSTNode, message: str) -> bool:
        """An ``io_callback`` that only runs where its ``NotImplementedError`` is expected (a test of it)."""
        return message is IO_FAILS and only_where_error_expected(self.ctx.model, node, _IO_ERROR)

    def _saves_everything(self, fn: CheckpointedFunction) -> bool:
        arg = fn.site.keyword("policy")
        info = policy_info(self.ctx.qualified_name(arg.value)) if arg is not None else None
        return info is not None and info.name == "everything_saveable"
