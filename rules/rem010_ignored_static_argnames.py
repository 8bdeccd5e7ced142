from __future__ import annotations

import libcst as cst

from remat_lint.analysis.flags import refers_to_remat3
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.static_args import argument_names, static_params
from remat_lint.apis import jax
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule


class IgnoredStaticArgnames(Rule):
    """
    ## What it does
    Flags `static_argnames=` on `jax.checkpoint`, in every spelling (call, decorator,
    `functools.partial`).

    ## Why is this bad?
    `jax.checkpoint` accepts `static_argnames` but ignores it: JAX 0.10 honours it only under the
    experimental `jax_remat3` flag (off by default), and even there only for arguments passed by
    keyword. The named argument is traced like any other, so Python control flow on it
    (`if training:`) raises `TracerBoolConversionError` at every call, and a string argument
    raises `TypeError` (a `str` is not a valid JAX type). `jax.remat`, `hk.remat` and the Flax
    transforms reject the keyword outright (REM002). Not reported in a module that names the
    `jax_remat3` flag (sets it, reads it, or a test class enables it): its checkpoints may run
    under either implementation.

    ## Example
    ```python
    import functools
    import jax

    @functools.partial(jax.checkpoint, static_argnames=("training",))
    def block(x, training):
        return dropout(x) if training else x
    ```

    ## Use instead
    ```python
    import functools
    import jax

    @functools.partial(jax.checkpoint, static_argnums=(1,))
    def block(x, training):
        return dropout(x) if training else x
    ```
    and pass `training` positionally.

    ## Fix safety
    Unsafe: when the checkpointed function is defined in the same module, every name is a string
    literal naming one of its positional parameters and no `static_argnums` is given,
    `static_argnames` is replaced by the matching `static_argnums`. A caller that passes such an
    argument by keyword then raises `ValueError` (static arguments must be positional), so the
    call sites need checking.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [jax-ml/jax#18405: checkpoint static parameter has to be passed positionally](https://github.com/jax-ml/jax/issues/18405)
    """

    code = "REM010"
    trace_check = Rule.TraceCheck(
        "static-argnames", raises=(("TracerBoolConversionError", ""), ("TypeError", "not a valid JAX type"))
    )
    name = "ignored-static-argnames"
    severity = Severity.ERROR
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.UNSAFE,)

    VALID = [
        "import jax\ng = jax.checkpoint(f, static_argnums=(1,))",
        "import jax\ng = jax.checkpoint(f, static_argnames=())",
        "import jax\ng = jax.checkpoint(f, static_argnames=None)",
        "import jax\ng = jax.jit(f, static_argnames=('training',))",
        "from flax import nnx\ng = nnx.jit(f, static_argnames='training')",
        (
            "import jax\nfrom jax._src import test_util as jtu\n@jtu.with_config(jax_remat3=True)\nclass T:\n"
            "    def test(self):\n        return jax.checkpoint(f, static_argnames='cfg')"
        ),
        "def checkpoint(f, static_argnames=()):\n    return f\ng = checkpoint(f, static_argnames='training')",
        "import jax\ndef f(x, training):\n    return x\ng = jax.checkpoint(f, static_argnums=(1,), static_argnames=('training',))",
    ]
    INVALID = [
        Invalid(
            "import functools\nimport jax\n@functools.partial(jax.checkpoint, static_argnames=('training',))\ndef f(x, training):\n    return x",
            fixed="import functools\nimport jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, training):\n    return x",
        ),
        Invalid(
            "from jax import checkpoint\ndef layer(x, w, mode):\n    return x\ng = checkpoint(layer, static_argnames='mode')",
            fixed="from jax import checkpoint\ndef layer(x, w, mode):\n    return x\ng = checkpoint(layer, static_argnums=(2,))",
        ),
        Invalid("import jax\ng = jax.checkpoint(f, static_argnames=('training',))"),
        Invalid("import jax\ng = jax.checkpoint(lambda x, *, n: x, static_argnames='n')"),
        Invalid(
            "import jax\ndef f(x, n, k):\n    return x\ng = jax.checkpoint(f, static_argnums=(1,), static_argnames=('k',))"
        ),
        Invalid(
            "import functools\nimport jax\nckpt = functools.partial(jax.checkpoint, static_argnames=names)\ng = ckpt(f)"
        ),
    ]

    def check(self) -> None:
        remat3: bool | None = None  # computed once, when a site needs it
        for site in self.ctx.sites:
            arg = site.keyword("static_argnames")
            if site.api.qname != jax.CHECKPOINT or arg is None or _is_empty(arg.value):
                continue
            if remat3 is None:
                remat3 = refers_to_remat3(self.ctx.module)
            if remat3:
                return  # the module may turn on the implementation that honours static_argnames
            names = argument_names(self.ctx.values, arg.value)
            if names and set(names) <= self._static_by_index(site):
                continue  # ``static_argnums`` already makes them static: the ignored keyword changes nothing
            traced = ", ".join(f"`{name}`" for name in names) if names else "the argument"
            self.report(
                site.node,
                f"`jax.checkpoint` ignores `static_argnames={self.ctx.code(arg.value)}`. JAX honours it only under "
                f"the experimental `jax_remat3` flag, so {traced} is traced (Python control flow on it raises "
                "`TracerBoolConversionError`, a str value `TypeError`); use `static_argnums=` and pass it "
                "positionally",
                fix=self._fix(site, arg),
            )

    def _static_by_index(self, site: RematSite) -> frozenset[str]:
        """The parameters ``static_argnums`` certainly makes static at ``site``."""
        for fn in self.ctx.bodies.functions:
            if fn.site is site and fn.entry:
                return static_params(site, fn) or frozenset()
        return frozenset()

    def _fix(self, site: RematSite, arg: cst.Arg) -> FixSpec | None:
        names = argument_names(self.ctx.values, arg.value)
        if not names or "static_argnums" in site.keywords or site.has_star_args:
            return None
        target = site.target
        if not isinstance(target, cst.FunctionDef):
            target = self.ctx.model.definition(target) if target is not None else None
        if not isinstance(target, (cst.FunctionDef, cst.Lambda)):
            return None
        positional = [p.name.value for p in (*target.params.posonly_params, *target.params.params)]
        if not all(name in positional for name in names):
            return None
        indices = sorted(positional.index(name) for name in names)
        spelled = ", ".join(map(str, indices)) + ("," if len(indices) == 1 else "")
        # A parenthesized tuple's span excludes its parentheses.
        replacement = spelled if isinstance(arg.value, cst.Tuple) and arg.value.lpar else f"({spelled})"
        return FixSpec(
            f"Use `static_argnums=({spelled})` (pass those arguments positionally)",
            [(arg.keyword, "static_argnums"), (arg.value, replacement)],  # type: ignore[list-item]  # a keyword argument: ``arg.keyword`` is set
            applicability=Applicability.UNSAFE,
        )


def _is_empty(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.Name):
        return value.value == "None"
    if isinstance(value, (cst.Tuple, cst.List)):
        return not value.elements
    return isinstance(value, cst.SimpleString) and value.evaluated_value in ("", b"")
