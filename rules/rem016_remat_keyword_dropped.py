from __future__ import annotations

from typing import TYPE_CHECKING

from remat_lint.apis.linen import PARTITIONING_REMAT
from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.bodies import CheckpointedFunction
    from remat_lint.project.model import Project, ProjectModule

# libcst and the analyses are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.


class RematKeywordDropped(Rule):
    """
    ## What it does
    Flags a keyword argument in a call of a Module class wrapped by
    `flax.linen.partitioning.remat` (`nn_partitioning.remat(Mlp)()(h, deterministic=False)`).

    ## Why is this bad?
    `nn_partitioning.remat` drops every keyword argument of the call with only a
    `RuntimeWarning` ("kwargs are not supported in remat, so "deterministic" is(are) ignored"):
    the parameter keeps its default. With `deterministic=True` as the default, dropout is
    silently off in training, and training gives the same output as evaluation (measured, flax
    0.12.8). A parameter without a default raises `TypeError` (missing argument) instead.
    `nn.remat` passes keywords on, traced (REM202 reports a traced flag).

    Across modules: a wrap bound to a module-level name (`remat_mlp = nn_partitioning.remat(Mlp)`,
    also `... if REMAT else Mlp`)
    that another module of the project imports and calls with a keyword.

    Where it is reported: at each call that passes the keyword, in the calling module, also when
    only that module is linted (pre-commit, flake8, an editor); the message names the wrap
    (`remat_mlp` is wrapped at layers.py:25), and JSON and SARIF carry it as a related location.

    ## Example
    ```python
    import flax.linen.partitioning as nn_partitioning

    RematMlp = nn_partitioning.remat(Mlp, static_argnums=(1,))

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic):
            return RematMlp()(x, deterministic=deterministic)
    ```

    ## Use instead
    ```python
            return RematMlp()(x, deterministic)
    ```

    ## Fix safety
    No fix: moving a keyword to its position depends on the other arguments passed.

    ## References
    - [`flax.linen.partitioning.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/partitioning.html)
    """

    code = "REM016"
    trace_check = Rule.TraceCheck("exception", raises=(("TypeError", "missing"),))
    name = "remat-keyword-dropped"
    severity = Severity.ERROR
    project_wide = True  # the call may be in another module than the wrap
    reports_at_calls = True
    export_words = ("partitioning", "remat")  # its one API, as the module's imports and calls name it

    VALID = [
        (
            "import flax.linen as nn\nimport flax.linen.partitioning as nnp\nclass Mlp(nn.Module):\n"
            "    def __call__(self, x, deterministic=True):\n        return x\nR = nnp.remat(Mlp, static_argnums=(1,))\ny = R()(x, False)"
        ),
        (
            "import flax.linen as nn\nclass Mlp(nn.Module):\n"
            "    def __call__(self, x, deterministic=True):\n        return x\nR = nn.remat(Mlp)\ny = R()(x, deterministic=False)"
        ),
        (
            "import flax.linen as nn\nimport flax.linen.partitioning as nnp\nclass Mlp(nn.Module):\n"
            "    def __call__(self, x, deterministic=True):\n        return x\nR = nnp.remat(Mlp)\ny = R()(x, **kwargs)"
        ),
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn\nimport flax.linen.partitioning as nnp\nclass Mlp(nn.Module):\n"
            "    def __call__(self, x, deterministic=True):\n        return x\nR = nnp.remat(Mlp, static_argnums=(1,))\n"
            "y = R()(x, deterministic=False)"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.bodies import is_call_method
        from remat_lint.analysis.exports import exported_name
        from remat_lint.analysis.tracing import flax_class_target, invocations

        model = self.ctx.model
        for fn in self.ctx.bodies.functions:
            site = fn.site
            if site.api.qname != PARTITIONING_REMAT or not fn.entry or not is_call_method(fn.node):
                continue
            if not flax_class_target(self.ctx.values, site):
                continue
            for call in invocations(self.ctx.values, site):
                if not any(a.star for a in call.args):
                    self._check_call(fn, call)
            name = exported_name(model, site, conditional=True)
            if name is not None:  # other modules may call it: the project phase judges their calls
                params = {
                    p.name.value: None if p.default is None else self.ctx.code(p.default)
                    for p in (*fn.args, *fn.keyword_only)
                }
                self.candidate(site.node, [name], {"params": params})

    def _check_call(self, fn: CheckpointedFunction, call: cst.Call) -> None:
        params = {p.name.value: p for p in (*fn.args, *fn.keyword_only)}
        for arg in call.args:
            param = params.get(arg.keyword.value) if arg.keyword is not None else None
            if param is None:
                continue
            name = param.name.value
            default = None if param.default is None else self.ctx.code(param.default)
            self.report(call, message(name, default))
            return

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """The calls in other modules of the instances of the exported wraps (pending) that pass a
        keyword of their ``__call__``: one finding at each, naming the wrap."""
        from remat_lint.project.calls import at_calls, distinct, wrap_place

        found = []
        for candidate in candidates:
            symbol, params = (module.name, candidate.symbols[0]), candidate.values["params"]
            for other, call in distinct(project.calls_of(symbol, instance=True)):
                name = next((k for k in call.keywords if k in params), None)
                if name is not None:
                    text = message(
                        name, params[name], f"`{symbol[1]}` is wrapped at {wrap_place(candidate.finding, other)}: "
                    )
                    found += at_calls(
                        candidate.finding,
                        project,
                        other,
                        call,
                        text,
                        f"`{symbol[1]}` is wrapped by `nn_partitioning.remat` here",
                    )
        return found


def message(name: str, default: str | None, where: str = "") -> str:
    if default is None:
        effect = f"`{name}` has no default, so the call raises `TypeError` (missing argument)"
    else:
        effect = f"`{name}` keeps its default `{default}`"
    return (
        f"{where}`nn_partitioning.remat` drops the keyword argument `{name}=` with only a `RuntimeWarning`. "
        f"It ignores every keyword of the call: {effect}; pass it positionally"
    )
