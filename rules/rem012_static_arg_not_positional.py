from __future__ import annotations

from typing import TYPE_CHECKING

from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.bodies import CheckpointedFunction
    from remat_lint.project.model import Project, ProjectModule

# libcst and the analyses are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.
_ERRORS = frozenset({"ValueError"})
_MODULE_FIRST = ", plus the Module as argument 0"


class StaticArgNotPositional(Rule):
    """
    ## What it does
    Flags a call of a checkpointed function that passes an argument named in `static_argnums`
    by keyword, or leaves it out (its default), when the function is wrapped by `jax.checkpoint`,
    `jax.remat`, `hk.remat` or Flax `nn.remat` / `nn.checkpoint` and the call is in the same
    module: `g = jax.checkpoint(f, static_argnums=(1,))` then `g(x, flag=True)` or `g(x)`.

    ## Why is this bad?
    JAX checks `static_argnums` against the positional arguments of each call only. An index
    that no positional argument reaches raises `ValueError: the static_argnums argument to
    jax.checkpoint / jax.remat can only take integer values greater than or equal to
    -len(args) and less than len(args)` at every such call, whatever the value passed
    (measured, jax 0.10.2 / flax 0.12.8). Flax `nn.remat` counts the Module as argument 0, so
    `nn.remat(Block, static_argnums=(2,))` needs `Block()(x, flag)` with `flag` second.
    `nnx.remat` accepts the keyword form: it is not flagged.

    Across modules: a checkpoint bound to a module-level name (`RematBlock = nn.remat(Block,
    static_argnums=(2,))`, also `... if REMAT else Block`, a decorated `def`) that another
    module of the project imports and calls with the static argument by keyword, or without it.

    Where it is reported: at each wrong call, in the calling module, also when only that module
    is linted (pre-commit, flake8, an editor); the message names the wrap (`static_argnums` of
    `RematBlock` (layers.py:24)), and JSON and SARIF carry it as a related location.

    ## Example
    ```python
    import functools
    import jax

    @functools.partial(jax.checkpoint, static_argnums=(1,))
    def block(x, training=False):
        return x * 2 if training else x

    y = block(x, training=True)
    ```

    ## Use instead
    ```python
    y = block(x, True)
    ```

    ## Fix safety
    No fix: moving an argument may change which positional parameter receives the others.

    ## References
    - [`jax.checkpoint`: `static_argnums`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    """

    code = "REM012"
    trace_check = Rule.TraceCheck("exception", raises=(("ValueError", "static_argnums"),))
    name = "static-arg-not-positional"
    severity = Severity.ERROR
    project_wide = True  # the call may be in another module than the wrap
    reports_at_calls = True
    # The keyword, of the wrap, of a partial it applies or of a dict it spreads (all at module level).
    # Flax linen's sixth positional argument (after four flags) is left out: none seen in use.
    export_words = ("static_argnums",)

    VALID = [
        "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, flag=False):\n    return x\ny = f(x, True)",
        "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, flag=False):\n    return x\ny = f(*args, **kwargs)",
        "from flax import nnx\ndef f(x, flag=False):\n    return x\ny = nnx.remat(f, static_argnums=(1,))(x, flag=True)",
        "import jax\ndef f(x, flag=False):\n    return x\ny = jax.checkpoint(f)(x, flag=True)",
        (
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, deterministic=True):\n"
            "        return x\nR = nn.remat(Block, static_argnums=(2,))\ny = R()(x, False)"
        ),
        (  # a test of the very error
            "import functools, jax, pytest\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, flag=False):\n"
            "    return x\ndef test_keyword():\n    with pytest.raises(ValueError):\n        f(1.0, flag=True)"
        ),
    ]
    INVALID = [
        Invalid(
            "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\n"
            "def f(x, flag=False):\n    return x\ny = f(x, flag=True)"
        ),
        Invalid("import jax\ndef f(x, n=2):\n    return x\ng = jax.checkpoint(f, static_argnums=1)\ny = g(x)"),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, deterministic=True):\n"
            "        return x\nR = nn.remat(Block, static_argnums=(2,))\ny = R()(x, deterministic=False)"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.bodies import is_call_method
        from remat_lint.analysis.static_args import convention, fails_at_wrap, static_argnums
        from remat_lint.analysis.tracing import flax_class_target, invocations

        model = self.ctx.model
        for fn in self.ctx.bodies.functions:
            if (
                not fn.entry
                or convention(fn.site) == "flax-no-self"
                or fn.site.api.family not in ("jax", "haiku", "flax")
            ):
                continue
            if fn.site.api.family == "flax" and not (
                flax_class_target(self.ctx.values, fn.site) and is_call_method(fn.node)
            ):
                continue  # a lifted function is called with its Module first; another method is not called as ``m(...)``
            written = static_argnums(fn.site, self.ctx.values)  # a constant (``STATIC = (1,)``) too
            if not written.indices or fn.site.has_star_args or fails_at_wrap(model, fn.site) or written.form == "list":
                continue
            for call in invocations(self.ctx.values, fn.site):
                self._check_call(fn, call, written.indices)
            self._export(fn, written.indices)

    def _check_call(self, fn: CheckpointedFunction, call: cst.Call, indices: tuple[int, ...]) -> None:
        from remat_lint.analysis.guards import only_where_error_expected
        from remat_lint.analysis.static_args import convention, select

        if any(a.star for a in call.args):
            return
        passed = sum(1 for a in call.args if a.keyword is None)
        shift = 1 if convention(fn.site) == "flax-self" else 0
        for index in indices:
            param = select(fn.site, fn, index).param
            if index < shift or param is None or index - shift < passed:
                continue
            if only_where_error_expected(self.ctx.model, call, _ERRORS):
                return
            name = param.name.value
            how = (
                "passed by keyword"
                if any(a.keyword is not None and a.keyword.value == name for a in call.args)
                else "not passed"
            )
            self.report(
                call,
                f"`{name}` is in `static_argnums` but {how}, so this call raises `ValueError`. "
                f"`{fn.site.api.display}` checks `static_argnums=({index},)` only against the call's positional "
                f"arguments ({passed}{_MODULE_FIRST if shift else ''}): a keyword or a default does not count; "
                f"pass `{name}` positionally",
            )
            return

    def _export(self, fn: CheckpointedFunction, indices: tuple[int, ...]) -> None:
        """A candidate at a wrap other modules can import; the project phase judges their calls."""
        from remat_lint.analysis.exports import exported_name
        from remat_lint.analysis.static_args import convention, select

        name = exported_name(self.ctx.model, fn.site, conditional=True)
        if name is None:
            return
        enabled = " where the remat is enabled" if exported_name(self.ctx.model, fn.site) is None else ""
        shift = 1 if convention(fn.site) == "flax-self" else 0
        static = [
            (index, param.name.value)
            for index in indices
            if index >= shift and (param := select(fn.site, fn, index).param)
        ]
        if static:
            instance = fn.site.api.family == "flax"  # a lifted Module class: its instances are called
            values = {
                "instance": instance,
                "static": static,
                "shift": shift,
                "display": fn.site.api.display,
                "enabled": enabled,
            }
            self.candidate(fn.site.node, [name], values)

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """The calls in other modules of the exported wraps (pending) that pass a static argument
        by keyword or not at all: one finding at each, naming the wrap."""
        from remat_lint.project.calls import at_calls, distinct, wrap_place

        found = []
        for candidate in candidates:
            data = candidate.values
            symbol = (module.name, candidate.symbols[0])
            for other, call in distinct(project.calls_of(symbol, instance=bool(data["instance"]))):
                missed = next(
                    ((i, p) for i, p in data["static"] if p in call.keywords or i - data["shift"] >= call.positional),
                    None,
                )
                if missed is None:
                    continue
                index, name = missed
                how = "passed by keyword" if name in call.keywords else "not passed"
                message = (
                    f"`{name}` is in `static_argnums` of `{symbol[1]}` ({wrap_place(candidate.finding, other)}) but {how}, so this "
                    f"call raises `ValueError`{data['enabled']}. `{data['display']}` checks `static_argnums=({index},)` only "
                    f"against the call's positional arguments ({call.positional}{_MODULE_FIRST if data['shift'] else ''}): "
                    f"a keyword or a default does not count; pass `{name}` positionally"
                )
                found += at_calls(
                    candidate.finding,
                    project,
                    other,
                    call,
                    message,
                    f"`{symbol[1]}` is checkpointed here with `static_argnums`",
                )
        return found
