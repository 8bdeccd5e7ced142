from __future__ import annotations

import libcst as cst

from remat_lint.analysis.sites import RematSite
from remat_lint.apis import jax
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule


class PreferJaxCheckpoint(Rule):
    """
    ## What it does
    Flags `jax.remat`, in every spelling (call, decorator, `functools.partial`), and suggests
    `jax.checkpoint`. Off by default.

    ## Why is this bad?
    The JAX documentation calls `jax.remat` an alias of `jax.checkpoint`, but it is a separate
    thin wrapper: `jax.remat is jax.checkpoint` is False, and its signature lacks
    `static_argnames` (passing it raises `TypeError`). One name across a code base makes
    searches, reviews and this linter's messages consistent; `jax.checkpoint` is the name the
    documentation and error messages use. Haiku's `hk.remat` and Flax's `nn.remat` are different
    transforms and are not flagged.

    ## Example
    ```python
    import jax

    layer = jax.remat(layer, policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Use instead
    ```python
    import jax

    layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Fix safety
    Safe when written as an attribute of the `jax` module (`jax.remat`, `j.remat`): it becomes
    `.checkpoint`. `jax.remat(fun, *, prevent_cse, policy, static_argnums, concrete)` only
    forwards its arguments to `jax.checkpoint`, so every call that `jax.remat` accepts behaves the
    same. Not offered when the site passes `static_argnames` (an error with `jax.remat`, silently
    ignored by `jax.checkpoint`) or `**kwargs`, nor for `from jax import remat` (the import would
    have to change too).

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`jax.remat`](https://docs.jax.dev/en/latest/_autosummary/jax.remat.html)
    """

    code = "REM302"
    name = "prefer-jax-checkpoint"
    severity = Severity.INFO
    default_enabled = False
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import jax\ng = jax.checkpoint(f)",
        "import haiku as hk\ng = hk.remat(f)",
        "import flax.linen as nn\nB = nn.remat(Block)",
        "import jax\nTRANSFORMS = {'remat': jax.remat}",
        "def remat(f):\n    return f\ng = remat(f)",
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.remat(f, prevent_cse=False)",
            fixed="import jax\ng = jax.checkpoint(f, prevent_cse=False)",
        ),
        Invalid(
            "import jax as j\n@j.remat\ndef f(x):\n    return x",
            fixed="import jax as j\n@j.checkpoint\ndef f(x):\n    return x",
        ),
        Invalid(
            "import functools\nimport jax\n@functools.partial(jax.remat, static_argnums=(1,))\ndef f(x, n):\n    return x",
            fixed="import functools\nimport jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, n):\n    return x",
        ),
        Invalid("from jax import remat\ng = remat(f)"),
        Invalid("import jax\ng = jax.remat(f, static_argnames=('n',))"),
    ]

    def check(self) -> None:
        for site in self.ctx.sites:
            if site.api.qname != jax.REMAT:
                continue
            self.report(
                site.node,
                "Use `jax.checkpoint` rather than its alias `jax.remat`. `jax.remat` is a thin wrapper that forwards "
                "to `jax.checkpoint` (without `static_argnames`); `jax.checkpoint` is the name the JAX documentation "
                "and error messages use",
                fix=self._fix(site),
            )

    def _fix(self, site: RematSite) -> FixSpec | None:
        if "static_argnames" in site.keywords or site.has_star_args:
            return None
        spelled = _spelling(site)
        if not isinstance(spelled, cst.Attribute) or self.ctx.qualified_name(spelled.value) != "jax":
            return None
        return FixSpec("Use `jax.checkpoint`", [(spelled.attr, "checkpoint")])


def _spelling(site: RematSite) -> cst.BaseExpression | None:
    """The expression that names ``jax.remat`` at this site: the callee or decorator, or the first
    argument of the partial written there."""
    callee = site.node.decorator if isinstance(site.node, cst.Decorator) else site.node.func
    if isinstance(callee, cst.Call) and site.ref.partials and callee is site.ref.partials[-1]:
        return callee.args[0].value
    if site.ref.partials:
        return None  # through a name bound to a partial: fixed where the partial is written
    return callee
