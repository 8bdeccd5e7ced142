from __future__ import annotations

from remat_lint.analysis.effects import SCOPED_KINDS, Effect, EffectFinder, scoped_by_with
from remat_lint.analysis.reaching import statement_of
from remat_lint.analysis.tracing import TracedValues
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

TRACE_TIME = (
    "it runs only while JAX traces the function, seeing tracers rather than values: once per trace, not "
    "again in the backward recompute, and not at all on calls that reuse a cached trace"
)
BAKED = (
    "it runs once, at trace time, and the value is baked into the computation as a constant: every call "
    "that reuses the trace gets the same value"
)
_WHAT = {
    "print": "prints with `{s}`",
    "logging": "logs a traced value with `{s}` (a tracer, not its value)",
    "global": "writes the global `{s}`",
    "nonlocal": "writes `{s}` of an enclosing function",
    "container": "mutates `{s}`, which lives outside the checkpointed function",
    "attribute": "sets `{s}` on an object that outlives the call",
    "io": "does file I/O with `{s}`",
    "random": "draws a random number with `{s}`",
    "time": "reads the clock with `{s}`",
}
_ADVICE = {
    "print": "use `jax.debug.print` to print values at run time",
    "logging": "use `jax.debug.print` or `jax.debug.callback` for run-time values",
    "random": "use `jax.random` with a key argument",
    "time": "pass the value in as an argument",
    "io": "do I/O outside the traced function, or in a `jax.debug.callback`",
}
_STATE_ADVICE = "return the value instead"


class ImpureCheckpointBody(Rule):
    """
    ## What it does
    Flags Python side effects inside a checkpointed function, or in a function of the same module
    that it calls: `print` and writes to `sys.stdout`/`sys.stderr`, logging of traced values,
    writes to `global`/`nonlocal` names, mutation of containers and attributes of objects that
    live outside the function, file I/O (`open`, `pickle.dump`, `np.save`, `.write` on a file
    opened outside the body), Python's and NumPy's global random generators, and clocks.

    For Flax `nn.remat(Block)` the checkpointed functions are `Block.__call__` (or the
    `methods=`) and the methods it calls through `self`. A side effect in a helper is reported at
    the call of the helper in the checkpointed function.

    ## Why is this bad?
    A checkpoint traces its function, even outside `jit`, and caches the trace. Python code in the
    body therefore runs only while JAX traces it, seeing tracers instead of values: once per trace,
    never again in the backward recompute, and not at all on later calls that reuse the cached trace
    (measured: three eager calls of a `jax.checkpoint` function run its `print` once; without the
    checkpoint, three times). Counters stay at one, appended lists hold tracers, and values from
    `random`, `np.random` or `time.time()` are computed once and baked into the computation as
    constants, so every call sees the same "random" number.

    Not reported: containers and objects created in the body, `nonlocal` variables of the body's
    own nested functions, `self.sow`, Flax and NNX variables and Module attributes (the transform
    manages them), logging of trace-time facts (shapes, configuration: deliberate trace-time logs),
    a closure variable of the function that defines the checkpointed function and calls it
    (or hands it to `lax.scan`) right there, which is fresh on every call, and state set by a
    same-module context manager entered in the body (`with child_context(...):`), which undoes
    on exit what it sets on entry.

    ## Example
    ```python
    import jax
    import numpy as np

    calls = []

    @jax.checkpoint
    def block(x, w):
        calls.append(1)
        noise = np.random.normal()
        return jnp.tanh(x @ w) + noise
    ```

    ## Use instead
    ```python
    import jax

    @jax.checkpoint
    def block(x, w, key):
        jax.debug.print("block called")
        return jnp.tanh(x @ w) + jax.random.normal(key)
    ```

    ## Fix safety
    No fix: what the side effect was meant to do has to be decided by the author.

    ## References
    - [JAX: pure functions](https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions)
    - [`jax.debug.print`](https://docs.jax.dev/en/latest/_autosummary/jax.debug.print.html)
    - [jax-ml/jax#5134: side effects under checkpoint](https://github.com/jax-ml/jax/issues/5134)
    """

    code = "REM201"
    trace_check = Rule.TraceCheck("trace-time-effect")
    name = "impure-checkpoint-body"
    severity = Severity.WARNING

    VALID = [
        "import jax\n@jax.checkpoint\ndef f(x):\n    out = {}\n    out['a'] = x\n    acc = []\n    acc.append(x)\n    return out, acc",
        "import jax\nfrom absl import logging\n@jax.checkpoint\ndef f(x):\n    logging.info('group size %d', x.shape[0])\n    return x",
        "import jax\n@jax.checkpoint\ndef f(x):\n    jax.debug.print('x={x}', x=x)\n    return x",
        "import io, jax\n@jax.checkpoint\ndef f(x):\n    buf = io.StringIO()\n    buf.write('note')\n    return x",
        "import jax\n@jax.checkpoint\ndef f(x):\n    n = 0\n    def inner(y):\n        nonlocal n\n        n += 1\n"
        "        return y\n    return inner(x)",
        "import jax\ndef forward(x):\n    structure = None\n    @jax.checkpoint\n    def body(y):\n"
        "        nonlocal structure\n        structure = y\n        return y\n    out = body(x)\n"
        "    return out, structure",
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        self.sow('intermediates', 'h', x)\n        return x\nR = nn.remat(Block)",
        "from flax import nnx\nclass Counter(nnx.Module):\n    @nnx.remat\n    def __call__(self, x):\n"
        "        self.count.value += 1\n        return x",
        "import jax\nimport random\n@jax.checkpoint\ndef f(x, key):\n    return x + jax.random.normal(key)",
        "import jax\n@jax.checkpoint\ndef f(x):\n    jax.debug.callback(lambda v: print(v), x)\n    return x",
        "import jax\n@jax.checkpoint\ndef f(x):\n    jax.config.update('jax_enable_x64', True)\n    return x",
        (
            "import contextlib, jax\nSTACK = []\n@contextlib.contextmanager\ndef scope(name):\n    STACK.append(name)\n"
            "    try:\n        yield\n    finally:\n        STACK.pop()\n@jax.checkpoint\ndef f(x):\n    with scope('f'):\n"
            "        return x"
        ),
    ]
    INVALID = [
        Invalid("import jax\n@jax.checkpoint\ndef f(x):\n    print('x is', x)\n    return x"),
        Invalid("import jax\ncalls = []\n@jax.checkpoint\ndef f(x):\n    calls.append(x)\n    return x"),
        Invalid(
            "import jax\ncount = 0\ndef f(x):\n    global count\n    count += 1\n    return x\ng = jax.checkpoint(f)"
        ),
        Invalid("import jax\nimport numpy as np\ng = jax.checkpoint(lambda x: x + np.random.normal())"),
        Invalid("import jax, time\n@jax.checkpoint\ndef f(x):\n    return x * time.time()"),
        Invalid(
            "import jax\nimport logging\n@jax.checkpoint\ndef f(x):\n    y = x * 2\n    logging.info('y=%s', y)\n    return y"
        ),
        Invalid("import jax\ndef log(x):\n    print(x)\n@jax.checkpoint\ndef f(x):\n    log(x)\n    return x"),
        Invalid(
            "import flax.linen as nn\nSTATS = {}\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return self.norm(x)\n    def norm(self, x):\n        STATS['norm'] = x\n        return x\nR = nn.remat(Block)"
        ),
        Invalid(
            "import jax\nclass Layer:\n    @jax.checkpoint\n    def __call__(self, x):\n        self.last = x\n        return x"
        ),
        Invalid(
            "import jax\ndef make():\n    n = 0\n    @jax.checkpoint\n    def f(x):\n        nonlocal n\n"
            "        n += 1\n        return x\n    return f"
        ),
    ]

    def check(self) -> None:
        bodies = self.ctx.bodies
        for fn in bodies.functions:
            finder = EffectFinder(self.ctx.values, bodies, fn)
            for effect in finder.effects(fn.node, TracedValues(self.ctx.values, bodies, fn)):
                self.report(statement_of(self.ctx.model, effect.node), f"A checkpointed function {_explain(effect)}")
            for helper in bodies.helpers(fn.node):
                scoped = scoped_by_with(self.ctx.model, helper.call)
                effects = finder.effects(helper.function, None)
                first = next((e for e in effects if not (scoped and e.kind in SCOPED_KINDS)), None)
                if first is not None:
                    name = self.ctx.code(helper.call.func)
                    self.report(helper.call, f"Calls `{name}`, which {_explain(first)}")


def _explain(effect: Effect) -> str:
    what = _WHAT[effect.kind].format(s=effect.subject)
    consequence = BAKED if effect.kind in ("random", "time") else TRACE_TIME
    return f"{what}. {consequence[0].upper()}{consequence[1:]}; {_ADVICE.get(effect.kind, _STATE_ADVICE)}"
