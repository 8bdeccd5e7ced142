from __future__ import annotations

import os
from typing import TYPE_CHECKING

from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.project.modules import LOCAL
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    from remat_lint.analysis.bodies import CheckpointedFunction
    from remat_lint.analysis.control_flow import ControlUse
    from remat_lint.analysis.values import Values
    from remat_lint.project.model import Project, ProjectModule

# libcst and the analyses are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.

_ERRORS = frozenset({"TracerBoolConversionError", "TracerIntegerConversionError", "ConcretizationTypeError"})

_EFFECT = {
    "truth": "`bool()` of a tracer raises `TracerBoolConversionError`",
    "order": "the comparison is a traced bool, and testing it raises `TracerBoolConversionError`",
    "equality": "the comparison is a traced bool, and testing it raises `TracerBoolConversionError`",
    "range": "`range()` of a tracer raises `TracerIntegerConversionError`",
}


class TracedPythonControlFlow(Rule):
    """
    ## What it does
    Flags Python control flow (`if`, `while`, `assert`, `x if p else y`, `and`/`or`/`not`,
    `for ... in range(p)`) on a parameter of a checkpointed function that the checkpoint traces:
    one that is not in `static_argnums`. A parameter handed on as it is counts too, at the call:
    to `deterministic` of a Flax `nn.Dropout` or attention layer with a nonzero rate (a literal,
    a constant of the module, or a field of the Module, `nn.Dropout(self.dropout_rate)`, that no
    construction of the Module in the project may set to zero; Flax tests `if deterministic` only
    when the rate is nonzero), to `use_running_average` of `nn.BatchNorm`, to
    `is_training` of Haiku's `hk.BatchNorm`, or to a same-module function or Module that tests it.
    A Flax remat of another module's linen Module class (`nn.remat(Block)`, or the class of an
    instance: `nn.remat(block.__class__)`, `nn.remat(type(block))`; no static arguments) is reported at each
    call of the lifted class that passes an argument its `__call__` tests (a parameter annotated as
    a scalar or array, or a flag), in the calling module, also when only that module is linted.

    ## Why is this bad?
    A checkpoint traces its function on every call, even outside `jit`, and every argument not
    listed in `static_argnums` becomes a tracer, Python bools included. Python control flow needs
    a concrete value, so every call raises `jax.errors.TracerBoolConversionError` (or
    `TracerIntegerConversionError` for `range(p)`). Passing the flag by keyword does not help:
    keyword arguments are traced too.

    Only what certainly fails is reported: the parameter has no default (or a call in the module
    passes it), is not rebound in the body other than by steps of itself (`n -= 1` in a `while`
    keeps it traced), and is a scalar or array: annotated `bool`, `int`, `float` or as an array,
    defaulting to `True`/`False`, used as a flag and nothing else (tested, given to a layer's flag,
    otherwise only handed on: never indexed, compared, computed with, and not defaulting to None;
    its name never counts), computed with by an operator that no container has (`n - 1`,
    `n -= 1`, `x / n`, `-n`: measured, `while n:` then raises `TracerBoolConversionError` for a
    number or an array, a set or a string is no JAX type, and a list, tuple, dict or None has no
    such operator), or passed a literal
    `True`/`False`/number by a call in the module (`jax.checkpoint(f)(x, flag=False)` with
    `def f(x, flag=None)`). Ordering comparisons
    (`n > 1`) and `range(n)` fail for any traced value. `is None` tests, `.shape`/`.ndim`/`.dtype`,
    `len()` and `isinstance()` are trace-time facts and fine. Equinox's `filter_checkpoint` keeps
    non-array arguments static and is never flagged. A flag listed in `static_argnames` is
    REM010's finding. A rate held in a field counts when its default and every value a call in
    the project passes by the field's keyword are nonzero numbers, and the Module is only
    constructed (directly or through `nn.remat`), never by position up to the field, with
    `**kwargs`, passed on or subclassed (measured: `rate=0.0` set by the construction runs).

    ## Example
    ```python
    import jax

    @jax.checkpoint
    def block(x, w, training):
        y = jnp.tanh(x @ w)
        if training:
            y = dropout(y)
        return y
    ```

    ## Use instead
    ```python
    import functools
    import jax

    @functools.partial(jax.checkpoint, static_argnums=(2,))
    def block(x, w, training):
        y = jnp.tanh(x @ w)
        if training:
            y = dropout(y)
        return y
    ```
    and pass `training` positionally; or keep it traced and use `jax.lax.cond` / `jnp.where`.
    For Flax `nn.remat`, `self` counts as argument 0: `nn.remat(Block, static_argnums=(2,))`
    for `__call__(self, x, training)`.

    ## Fix safety
    No fix: whether the argument should be static (one compilation per value) or traced
    (`lax.cond`) is a design decision.

    ## References
    - [`jax.checkpoint`: `static_argnums`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [JAX errors: `TracerBoolConversionError`](https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError)
    - [google/flax#3946: static_argnums in `nn.remat` counts `self`](https://github.com/google/flax/issues/3946)
    """

    code = "REM202"
    project_wide = True  # a dropout rate held in a Module field may be set by another module's construction
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("TracerBoolConversionError", ""),
            ("ConcretizationTypeError", ""),
            ("TracerIntegerConversionError", ""),
        ),
        refutes=True,
    )
    name = "traced-python-control-flow"
    project_wide = True  # the lifted class may come from another module
    severity = Severity.ERROR

    VALID = [
        (  # a test of the very error: the function only runs where the error is expected
            "import jax\nimport pytest\ndef test_traced_branch_fails():\n    @jax.checkpoint\n    def f(x):\n"
            "        if x > 0:\n            return x\n        return -x\n"
            "    with pytest.raises(jax.errors.TracerBoolConversionError):\n        f(3.0)"
        ),
        "import jax\n@jax.checkpoint\ndef f(x, mask):\n    if mask is None:\n        return x\n    return x * mask",
        "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, training):\n    return x * 2 if training else x",
        "import jax\n@jax.checkpoint\ndef f(x, training=False):\n    return x * 2 if training else x\ny = f(x)",
        "import jax\n@jax.checkpoint\ndef f(x):\n    if x.ndim > 2 and len(x) > 1 and isinstance(x, jax.Array):\n        return x\n    return -x",
        "import functools, jax\ndef f(x, training):\n    return x * 2 if training else x\ng = jax.checkpoint(functools.partial(f, training=True))",
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n"
        "    def __call__(self, x, deterministic: bool):\n        return x if deterministic else -x\n"
        "R = nn.remat(Block, static_argnums=(2,))",
        "import flax.linen.partitioning as nn_partitioning\nimport flax.linen as nn\nclass Block(nn.Module):\n"
        "    @nn.compact\n    def __call__(self, x, deterministic: bool):\n        return x if deterministic else -x\n"
        "R = nn_partitioning.remat(Block, static_argnums=(1,))",
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n"
        "    def __call__(self, x, deterministic=None):\n"
        "        deterministic = nn.merge_param('deterministic', self.deterministic, deterministic)\n"
        "        return x if deterministic else -x\nR = nn.remat(Block)",
        "import equinox as eqx\n@eqx.filter_checkpoint\ndef f(x, training: bool):\n    return x * 2 if training else x",
        "import jax\n@jax.checkpoint\ndef f(x, cache):\n    if cache:\n        return x + cache['k']\n    return -x",
        "import jax\ng = jax.checkpoint(f, static_argnums=cfg.static)\ndef f(x, training):\n    return x if training else -x",
    ]
    INVALID = [
        Invalid("import jax\n@jax.checkpoint\ndef f(x, training):\n    if training:\n        x = x * 2\n    return x"),
        Invalid("import jax\ng = jax.checkpoint(lambda x, n: x if n > 1 else -x)"),
        Invalid(
            "import jax\ndef f(x, n):\n    for _ in range(n):\n        x = x * 2\n    return x\ng = jax.checkpoint(f)"
        ),
        Invalid(
            "import jax\n@jax.checkpoint\ndef f(x, deterministic=True):\n    return x if deterministic else -x\ny = f(x, False)"
        ),
        Invalid(
            "import jax\ndef f(x, flag=None):\n    if flag:\n        return -x\n    return x\ny = jax.checkpoint(f)(x, flag=False)"
        ),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, deterministic: bool):\n"
            "        return x if deterministic else -x\nR = nn.remat(Block, static_argnums=(1,))"
        ),
        Invalid("from flax import nnx\n@nnx.remat\ndef f(x, train: bool):\n    assert not train\n    return x"),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, offset: int = 0):\n"
            "        return x if offset == 0 else -x\nclass M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        block = Block()\n        return nn.remat(type(block))()(x, offset=0)"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.control_flow import control_uses
        from remat_lint.analysis.guards import only_where_error_expected
        from remat_lint.analysis.tracing import literal_leaf_params, traced_params

        self._imported_classes()
        model = self.ctx.model
        for fn in self.ctx.bodies.functions:
            if fn.site.api.family == "equinox" or not fn.entry:
                continue
            params = traced_params(self.ctx.values, fn)
            ignored_names = _static_argnames(self.ctx.values, fn)
            if params is None or ignored_names is None:
                continue
            params = {name: p for name, p in params.items() if name not in ignored_names}
            # ``f(x, flag=False)``: a scalar whatever its annotation
            leaves = literal_leaf_params(self.ctx.values, fn)
            for use in control_uses(self.ctx.values, self.ctx.bodies.nodes(fn.node), params, leaves, fields=True):
                if only_where_error_expected(model, use.statement, _ERRORS):  # a test of the error
                    continue
                if use.field is not None:  # the rate is a Module field: other modules may construct it with 0
                    field = use.field
                    names = (field.cls, *field.aliases)
                    data = {"names": names, "field": field.field, "position": field.position}
                    self.candidate(use.statement, names, data, message=self._message(fn, use))
                    continue
                where = self.ctx.positions[use.test]  # --trace refutes only where this expression ran
                test = [where.start.line, where.start.column, where.end.line, where.end.column]
                self.report(use.statement, self._message(fn, use), test=test)

    def _imported_classes(self) -> None:
        """``nn.remat(block.__class__)`` (or ``type(block)``) where ``block`` is an instance of a class
        imported from another module of the project: a candidate at each call of the lifted class's
        instances, which the project phase confirms where it passes a parameter that the class's
        ``__call__`` tests in Python control flow (check_project)."""
        from remat_lint.analysis.guards import only_where_error_expected
        from remat_lint.analysis.lifted_calls import lifted_calls
        from remat_lint.project.extract import ref_of

        model = self.ctx.model
        for lifted in lifted_calls(self.ctx.values, self.ctx.sites):
            ref = ref_of(model, lifted.cls)
            if ref is None or ref[0] == LOCAL or only_where_error_expected(model, lifted.call, _ERRORS):
                continue
            data = {
                "ref": ref,
                "api": lifted.site.api.display,
                "target": self.ctx.code(lifted.site.target) if lifted.site.target is not None else "",
                "positional": list(lifted.positional),
                "keywords": list(lifted.keywords),
                "self_counts": lifted.self_counts,
            }
            self.candidate(lifted.call, [ref[1].rsplit(".", 1)[-1]], data)

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Two kinds of candidate: a layer's rate held in a Module field (``field``), and a call of an
        imported linen class that a Flax remat lifts (``ref``)."""
        fields = [c for c in candidates if "field" in c.values]
        lifted = [c for c in candidates if "ref" in c.values]
        return [*cls._nonzero_fields(fields, module, project), *cls._tested_by_lifted_class(lifted, module, project)]

    @staticmethod
    def _nonzero_fields(candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm a layer's rate held in a Module field when no other module may construct the
        Module with a zero (or unknown) rate."""
        from remat_lint.analysis.layers import nonzero
        from remat_lint.project.fields import field_values

        kept = []
        for candidate in candidates:
            data = candidate.values
            others = field_values(project, module, tuple(data["names"]), data["field"], data["position"])
            if others is not None and (not others or nonzero(others)):
                kept.append(candidate.finding)
        return kept

    @staticmethod
    def _tested_by_lifted_class(candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the calls that pass a parameter the imported linen class's ``__call__`` tests."""
        kept = []
        for candidate in candidates:
            finding, data = candidate.finding, candidate.values
            symbol = project.linen_class(module, tuple(data["ref"]))
            signature = project.call_signature(symbol) if symbol is not None else None
            if symbol is None or signature is None:
                continue
            params = list(signature.params)
            passed = [params[i] for i in data["positional"] if i < len(params)]
            passed += [p for p in params if p.name in data["keywords"]]
            tested = next((p for p in passed if p.controls_flow), None)
            if tested is None:
                continue
            index = params.index(tested) + (1 if data["self_counts"] else 0)
            where = os.path.relpath(project.modules[symbol[0]].path, os.path.dirname(module.path))
            finding.message = (
                f"`{symbol[1]}.__call__` ({where}) tests `{tested.name}` in Python control flow, but "
                f"`{data['api']}({data['target']})` traces it. A tracer there raises `TracerBoolConversionError` "
                "(`TracerIntegerConversionError` for `range()`) at this call; make it static with "
                f"`static_argnums=({index},)` and pass it positionally, or use `jax.lax.cond`/`jnp.where` in the class"
            )
            finding.data = {"class": symbol[1], "parameter": tested.name, "defined_in": where}
            finding.related = project.defined_here(symbol)
            kept.append(finding)
        return kept

    def _message(self, fn: CheckpointedFunction, use: ControlUse) -> str:
        from remat_lint.analysis.static_args import index_of

        name = use.param.name.value
        when = "every call that passes it" if use.param.default is not None else "every call"
        index = index_of(fn.site, fn, use.param)
        static = f"`static_argnums=({index},)`" if index is not None else "`static_argnums`"
        traced_alternative = "`jax.lax.fori_loop`" if use.use == "range" else "`jax.lax.cond`/`jnp.where`"
        return (
            f"Python {use.construct} on `{self.ctx.code(use.test)}` fails: `{fn.site.api.display}` traces `{name}`. "
            f"It is not in `static_argnums`, and {_EFFECT[use.use]} at {when}; make it static with {static} and pass it "
            f"positionally, or keep it traced and use {traced_alternative}"
        )


def _static_argnames(values: Values, fn: CheckpointedFunction) -> frozenset[str] | None:
    """Names in ``static_argnames`` (ignored by JAX: REM010 reports them); None when not known."""
    from remat_lint.analysis.static_args import argument_names

    arg = fn.site.keyword("static_argnames")
    if arg is None:
        return frozenset()
    names = argument_names(values, arg.value)
    return frozenset(names) if names is not None else None
