from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

import libcst as cst

from remat_lint.analysis.guards import expects_error
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import FUNCTION_NAMES, RematApi, policy_info, raises_when, remat_api
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    from remat_lint.engine.context import LintContext

# Keywords people write for ``policy=`` (config field names leak into the call).
POLICY_SYNONYMS = frozenset(
    {
        "checkpoint_policy",
        "checkpointing_policy",
        "gradient_checkpoint_policy",
        "policies",
        "policy_fn",
        "remat_policy",
        "save_policy",
    }
)
# What Flax linen does with a checkpoint policy passed positionally into each slot (measured).
FLAX_SLOT_EFFECTS = {
    "variables": "`init` raises `flax.errors.InvalidFilterError`",
    "rngs": "`init` raises `flax.errors.InvalidFilterError`",
    "concrete": "`init` raises `NotImplementedError` (a truthy `concrete`)",
    "prevent_cse": "`init` raises `TypeError: prevent_cse must be a bool or tuple of bools`",
    "static_argnums": "`init` raises `TypeError`",
    "methods": "`init` raises `ValueError: transform methods argument must be None, tuple, list, or dict.`",
}


class UnknownKeyword(Rule):
    """
    ## What it does
    Flags a keyword that the remat API does not take (`checkpoint_policy=`, `save_policy=`,
    `remat_policy=`, `policies=`, `static_argnames=` on `jax.remat` / `hk.remat` / Flax /
    `nnx.remat`, `concrete=` on `nnx.remat` / `eqx.filter_checkpoint`), and arguments passed
    positionally that the API does not take that way (a policy after the function).

    ## Why is this bad?
    Every parameter of `jax.checkpoint`, `jax.remat`, `hk.remat`, `nnx.remat` and
    `eqx.filter_checkpoint` after the function is keyword-only, so the wrap itself raises
    `TypeError: checkpoint() got an unexpected keyword argument 'checkpoint_policy'` or
    `TypeError: checkpoint() takes 1 positional argument but 2 were given` (for `hk.remat`
    inside `hk.transform`, at `init`/`apply`). Flax linen `nn.remat` takes `variables`, `rngs`,
    `concrete`, `prevent_cse`, `static_argnums`, `policy`, `methods` positionally in that order:
    a policy in any other slot is read as that parameter and `init` fails (an
    `InvalidFilterError` for `nn.remat(Block, policy)`).

    `static_argnames=` on `jax.checkpoint` is accepted but ignored (REM010) and `concrete=` on
    `jax.checkpoint` / `jax.remat` / `hk.remat` was removed (REM005); they are reported there.

    ## Example
    ```python
    import jax

    block = jax.checkpoint(block, checkpoint_policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Use instead
    ```python
    import jax

    block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Fix safety
    Safe for the policy synonyms (`checkpoint_policy`, `save_policy`, `remat_policy`,
    `policies`, ...) when no `policy=` is given as well and no `**kwargs` could supply one: the
    keyword is renamed `policy`. Also safe for a built-in policy passed as the last positional
    argument: it becomes `policy=`. The original always raises, so nothing that worked changes.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [`flax.nnx.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html)
    """

    code = "REM002"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("TypeError", "got an unexpected keyword argument"),
            ("TypeError", "positional argument"),
            ("TypeError", "prevent_cse must be"),
            ("ValueError", "transform methods argument"),
            ("InvalidFilterError", ""),
            ("NotImplementedError", ""),
        ),
    )
    name = "unknown-keyword"
    severity = Severity.ERROR
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable, prevent_cse=False)",
        "import jax\ng = jax.checkpoint(fun=f, static_argnums=(1,))",
        "import jax\ng = jax.checkpoint(f, static_argnames=('n',))",  # REM010's business
        "import jax\ng = jax.remat(f, concrete=True)",  # REM005's business
        "import flax.linen as nn\nB = nn.remat(Block, True, True, False, True, (), None)",
        "import flax.linen as nn\nB = nn.remat(Block, concrete=False)",
        "from flax import nnx\nf = nnx.remat(policy=None, graph=True)(g)",
        "import jax\ng = jax.checkpoint(f, *args, **kwargs)",
        "import jax\nfrom dataclasses import dataclass\n@dataclass\nclass Config:\n"
        "    remat_policy: str = 'dots_saveable'\ncfg = Config(remat_policy='nothing_saveable')",
        "from easydel import auto_remat\nB = auto_remat(Block, policy='nothing_saveable', checkpoint_policy=p)",
        "import torch\ny = torch.utils.checkpoint.checkpoint(f, x, use_reentrant=False)",
        "import jax\nimport pytest\nwith pytest.raises(TypeError):\n    jax.checkpoint(f, checkpoint_policy=p)",
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.checkpoint(f, checkpoint_policy=jax.checkpoint_policies.dots_saveable)",
            fixed="import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)",
        ),
        Invalid(
            "import functools\nimport flax.linen as nn\n@functools.partial(nn.remat, remat_policy=p)\nclass B(nn.Module):\n    pass",
            fixed="import functools\nimport flax.linen as nn\n@functools.partial(nn.remat, policy=p)\nclass B(nn.Module):\n    pass",
        ),
        Invalid(
            "import jax\ncp = jax.checkpoint_policies\ng = jax.checkpoint(f, cp.dots_saveable)",
            fixed="import jax\ncp = jax.checkpoint_policies\ng = jax.checkpoint(f, policy=cp.dots_saveable)",
        ),
        Invalid(
            "import flax.linen as nn\nfrom jax import checkpoint_policies as cp\nB = nn.remat(Block, cp.save_only_these_names('a'))",
            fixed="import flax.linen as nn\nfrom jax import checkpoint_policies as cp\nB = nn.remat(Block, policy=cp.save_only_these_names('a'))",
        ),
        Invalid("import jax\ng = jax.checkpoint(f, policy=p, save_policy=q)"),
        Invalid("import jax\ng = jax.remat(f, static_argnames=('training',))"),
        Invalid("import haiku as hk\ng = hk.remat(f, static_argnames='n')"),
        Invalid("from flax import nnx\ng = nnx.remat(f, concrete=False)"),
        Invalid("import equinox as eqx\ng = eqx.filter_checkpoint(f, concrete=True)"),
        Invalid(
            "from flax import nnx\nremat = nnx.remat(checkpoint_policy=p)",
            fixed="from flax import nnx\nremat = nnx.remat(policy=p)",
        ),
        Invalid("import jax\ng = jax.checkpoint(f, True)"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, True, True, False, True, (), None, None, 1)"),
    ]

    def check(self) -> None:
        covered: set[int] = set()
        for site in self.ctx.sites:
            covered.update(id(call) for call in site.argument_calls)
            self._check(site.node, site.api, site.keywords, site, site.has_star_args, raises_when(site.api))
        for call in self.ctx.model.calls:  # ``api(**kw)`` never applied: the keywords still fail here
            api = remat_api(self.ctx.qualified_name(call.func))
            if api is not None and id(call) not in covered:
                keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
                self._check(call, api, keywords, None, any(a.star for a in call.args), "right here, when called")

    def _check(
        self,
        node: cst.CSTNode,
        api: RematApi,
        keywords: dict[str, cst.Arg],
        site: RematSite | None,
        star: bool,
        when: str,
    ) -> None:
        if expects_error(self.ctx.model, node, frozenset({"TypeError"})):
            return
        unknown = [name for name in keywords if name not in api.keywords and name != api.target_param]
        if unknown:
            self._report_keywords(node, api, keywords, unknown, star, when)
        elif site is not None and site.positional and not star:
            self._report_positional(site)

    def _report_keywords(
        self, node: cst.CSTNode, api: RematApi, keywords: dict[str, cst.Arg], unknown: list[str], star: bool, when: str
    ) -> None:
        first = unknown[0]
        shown = ", ".join(f"`{name}=`" for name in unknown)
        hint = _suggestion(api, first)
        fix = None
        if first in POLICY_SYNONYMS and "policy" not in keywords and not star:
            arg = keywords[first]
            if not isinstance(arg.value, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
                fix = FixSpec(f"Rename `{first}=` to `policy=`", [(arg.keyword, "policy")])  # type: ignore[list-item]  # a keyword argument: ``arg.keyword`` is set
        self.report(
            node,
            f"`{api.display}` does not take {shown}{hint}. It raises `TypeError: {FUNCTION_NAMES[api.qname]}() got "
            f"an unexpected keyword argument '{first}'` {when}",
            fix=fix,
        )

    def _report_positional(self, site: RematSite) -> None:
        api = site.api
        if api.positional:  # Flax linen: positional parameters after the target, in order
            self._report_flax_positional(site)
            return
        given = len(site.positional) + 1
        name = FUNCTION_NAMES[api.qname]
        expected = "from 0 to 1 positional arguments" if api.decorator_factory else "1 positional argument"
        last = site.positional[-1]
        is_policy = _is_policy(self.ctx, last.value)
        self.report(
            site.node,
            f"`{api.display}` takes only the function positionally. It raises `TypeError: {name}() takes {expected} "
            f"but {given} were given` {raises_when(api)}"
            + ("; pass the policy as `policy=`" if is_policy else "; pass options by keyword"),
            fix=self._positional_fix(site, last) if is_policy and len(site.positional) == 1 else None,
        )

    def _report_flax_positional(self, site: RematSite) -> None:
        api = site.api
        if len(site.positional) > len(api.positional):
            given = len(site.positional) + 1
            self.report(
                site.node,
                f"`{api.display}` takes at most {len(api.positional)} arguments after the target. It raises "
                f"`TypeError: {FUNCTION_NAMES[api.qname]}() takes from 1 to {len(api.positional) + 1} positional "
                f"arguments but {given} were given` when it wraps the target",
            )
            return
        for slot, arg in zip(api.positional, site.positional, strict=False):
            if slot != "policy" and _is_policy(self.ctx, arg.value):
                self.report(
                    site.node,
                    f"A checkpoint policy is passed positionally in the `{slot}` slot of `{api.display}`. Flax reads "
                    f"it as `{slot}` and {FLAX_SLOT_EFFECTS[slot]}; pass it as `policy=`",
                    fix=self._positional_fix(site, arg) if arg is site.positional[-1] else None,
                )
                return

    def _positional_fix(self, site: RematSite, arg: cst.Arg) -> FixSpec | None:
        if "policy" in site.keywords:
            return None
        return FixSpec("Pass the policy as `policy=`", [(arg.value, f"policy={self.ctx.code(arg.value)}")])


def _suggestion(api: RematApi, name: str) -> str:
    if name in POLICY_SYNONYMS and "policy" in api.keywords:
        return " (did you mean `policy=`?)"
    if name == "static_argnames" and "static_argnums" in api.keywords:
        return " (only `jax.checkpoint` has it; use `static_argnums=`)"
    if name == "concrete" and "static_argnums" in api.keywords:
        return " (JAX removed `concrete` in 0.10.0; use `static_argnums=`)"
    close = difflib.get_close_matches(name, sorted(api.keywords), n=1, cutoff=0.7)
    return f" (did you mean `{close[0]}=`?)" if close else ""


def _is_policy(ctx: LintContext, value: cst.BaseExpression) -> bool:
    """A built-in checkpoint policy, or a call of a policy factory."""
    if isinstance(value, cst.Call):
        info = policy_info(ctx.qualified_name(value.func))
        return info is not None and info.kind == "factory"
    return policy_info(ctx.qualified_name(value)) is not None
