from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remat_lint.apis import POLICIES
from remat_lint.apis.jax import POLICY_NAMESPACE
from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.summary import Constant
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.sites import RematSite
    from remat_lint.analysis.values import Value
    from remat_lint.project.model import Project, ProjectModule
else:
    cst = LazyModule("libcst")

# libcst and the value layer are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.


class PolicyNotCallable(Rule):
    """
    ## What it does
    Flags a checkpoint whose `policy=` is a string, a bool or a number instead of a policy
    function: `jax.checkpoint(f, policy="dots_saveable")`, also when every value it can hold is
    one: through constants, dict-literal lookups (`POLICIES["dots"]`, `.get(k, "...")`), the
    returns of a same-module helper, a config dataclass field (`cfg.remat_policy: str = "..."`),
    `os.environ.get(..., "...")`, absl and argparse string flags, or built from strings (`+`,
    `%`, `.format()`, a conditional expression of strings). Values from another module of the
    project count alike: a constant (`from .constants import POLICY`, `constants.POLICY`) or a
    config class's field (`cfg.remat_policy` for `cfg: Config`, `Config()` or `Config` imported
    from `config.py`, unless some module assigns that field); the message names the module. A
    field read through a parameter annotated with the class (`def build(cfg: Config)`) counts
    when its annotation allows only strings, or when every construction of the class in the
    project leaves it at a string (its default, or what the construction or a
    `dataclasses.replace` passes); a class no module constructs, constructed with `**kwargs`,
    by position up to the field, passed on or subclassed, is unknown.

    Where it is reported: at the `policy=` argument, in the module that passes it, also when only
    that module is linted (pre-commit, flake8, an editor); the message names the module the value
    comes from, and JSON and SARIF carry its definition as a related location.

    ## Why is this bad?
    JAX does not check `policy` when it wraps the function. Plain calls, `jit` and `jvp` never
    consult it, so forward-only code and tests pass; the first `grad`, `vjp` or
    `value_and_grad` then fails with `TypeError: 'str' object is not callable`
    (`'bool' object ...` for `True`). A falsy value (`False`, `0`, `""`) is silently treated as
    no policy at all (`nothing_saveable`). The same holds for `jax.remat`, Flax `nn.remat`,
    `nnx.remat`, `hk.remat` and `eqx.filter_checkpoint`, which all hand `policy` to JAX.

    Policies chosen from configuration (`getattr(jax.checkpoint_policies, cfg.policy)`, a lookup
    table) are fine and not flagged.

    ## Example
    ```python
    import jax

    layer = jax.checkpoint(layer, policy="dots_saveable")
    ```

    ## Use instead
    ```python
    import jax

    layer = jax.checkpoint(layer, policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Fix safety
    Safe when the string literal names a built-in policy: it is replaced by that policy
    (`jax.checkpoint_policies.<name>`, through an existing import when there is one). Other
    values have no fix, nor a string in a table of options spread from a name (`**OPTIONS`),
    which other code may read.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [Gradient checkpointing: policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM001"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=tuple(("TypeError", f"'{t}' object is not callable") for t in ("str", "bool", "int", "float")),
    )
    name = "policy-not-callable"
    severity = Severity.ERROR
    project_wide = True  # a value imported from another module of the project is judged there
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import jax\njax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)",
        "import jax\njax.checkpoint(f, policy=getattr(jax.checkpoint_policies, cfg.remat_policy))",
        "import jax\njax.checkpoint(f, policy=None)",
        "import jax\ndef build(policy):\n    return jax.checkpoint(f, policy=policy)",
        "import torch\ntorch.utils.checkpoint.checkpoint(f, policy='dots_saveable')",
        "from myproject import auto_remat\nauto_remat(Block, policy='nothing_saveable')",
        "def checkpoint(f, policy):\n    return f\ncheckpoint(g, policy='dots_saveable')",
        "import jax\nP = 'dots_saveable'\nif fast:\n    P = jax.checkpoint_policies.dots_saveable\ng = jax.checkpoint(f, policy=P)",
        "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable if fast else None)",
        "import jax, os\ng = jax.checkpoint(f, policy=os.environ.get('REMAT_POLICY'))",
        "import jax\nfrom jax import checkpoint_policies as cp\ndef pick(name):\n"
        "    return {'dots': cp.dots_saveable}.get(name)\ng = jax.checkpoint(f, policy=pick(n))",
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.checkpoint(f, policy='dots_saveable')",
            fixed="import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)",
        ),
        Invalid("import jax\ny = jax.checkpoint(fun=f, policy=True)(x)"),
        Invalid(
            "import flax.linen as nn\nfrom jax import checkpoint_policies as cp\nB = nn.remat(Block, policy='nothing_saveable')",
            fixed="import flax.linen as nn\nfrom jax import checkpoint_policies as cp\nB = nn.remat(Block, policy=cp.nothing_saveable)",
        ),
        Invalid(
            "import functools\nfrom flax import nnx\n@functools.partial(nnx.remat, policy='dots_saveable')\ndef f(x):\n    return x",
            fixed="import functools\nimport jax\nfrom flax import nnx\n"
            "@functools.partial(nnx.remat, policy=jax.checkpoint_policies.dots_saveable)\ndef f(x):\n    return x",
        ),
        Invalid("import jax\nPOLICY = 'dots_saveable'\ng = jax.checkpoint(f, policy=POLICY)"),
        Invalid("import jax\ng = jax.checkpoint(f, policy=f'{name}_saveable')"),
        Invalid("import jax\nNAME = 'dots_saveable'\nPOLICY = NAME\ng = jax.checkpoint(f, policy=POLICY)"),
        Invalid("import jax\ng = jax.checkpoint(f, policy='dots' if fast else 'nothing_saveable')"),
        Invalid("import jax\ng = jax.checkpoint(f, policy='%s_saveable' % kind)"),
        Invalid("import haiku as hk\ng = hk.remat(f, policy=True)"),
        Invalid("import equinox as eqx\ng = eqx.filter_checkpoint(f, policy=0)"),
        Invalid("import jax\nPOLICIES = {'dots': 'dots_saveable'}\ng = jax.checkpoint(f, policy=POLICIES['dots'])"),
        Invalid("import jax, os\ng = jax.checkpoint(f, policy=os.environ.get('REMAT_POLICY', 'dots_saveable'))"),
    ]

    def check(self) -> None:
        from remat_lint.analysis.deferred import deferred_value

        for site in self.ctx.sites:
            arg = site.keyword("policy")
            if arg is None:
                continue
            possible = self.ctx.values.possible(arg.value)
            if possible is None:  # perhaps another module's name: the project phase decides (check_project)
                later = deferred_value(self.ctx.values, arg.value)
                if later is not None and problem(later.known or [Constant("str")]) is not None:
                    data = {"values": later.values, "policy": self.ctx.code(arg.value)}
                    self.candidate(site.node, later.symbols, data)
                continue
            found = problem(possible)
            if found is not None:
                fix = self._fix(arg.value) if self._written_for(site, arg) else None
                self.report(site.node, f"`policy={self.ctx.code(arg.value)}` {found}", fix=fix)

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the candidates whose imported values are all strings (or one bool or number)."""
        from remat_lint.project.deferred import resolve

        kept = []
        for candidate in candidates:
            finding = candidate.finding
            resolved = resolve(project, module, candidate.values["values"])
            found = problem(resolved.values) if resolved is not None else None
            if resolved is None or found is None:
                continue
            finding.message = f"`policy={candidate.values['policy']}`{resolved.source} {found}"
            finding.data = {"from": resolved.where}
            finding.related = resolved.related
            kept.append(finding)
        return kept

    def _written_for(self, site: RematSite, arg: cst.Arg) -> bool:
        """``arg`` is written in a call that builds the checkpoint (the call, a partial, a factory),
        not in a table of options spread from a name (``**OPTIONS``), which other code may read."""
        model = self.ctx.model
        if model.parent(arg) is not None:
            return True  # a keyword of one of the site's calls
        own = {id(call) for call in site.argument_calls}
        return any(id(a) in own for a in model.ancestors(arg.value))  # ``**{"policy": ...}`` in one of them

    def _fix(self, value: cst.BaseExpression) -> FixSpec | None:
        if not isinstance(value, cst.SimpleString):
            return None
        name = value.evaluated_value
        if not isinstance(name, str) or POLICIES.get(name, None) is None or POLICIES[name].kind != "plain":
            return None
        spelled, module = self.ctx.spell(f"{POLICY_NAMESPACE}.{name}")
        return FixSpec(f"Use `{spelled}`", [(value, spelled)], add_import=module)


def problem(possible: Sequence[Value | Constant]) -> str | None:
    """What is wrong when every value a policy can hold is a string, or it is one bool or number
    (through constants, lookups, helpers, config fields and flags: ``ctx.values``)."""
    if not possible:
        return None
    if all(v.kind == "str" for v in possible):
        if all(v.literal == "" for v in possible):
            return "is an empty string, which JAX treats as no policy. A falsy policy means `nothing_saveable`"
        return (
            "is a string, not a policy. JAX accepts it when wrapping and raises "
            "`TypeError: 'str' object is not callable` at the first grad/vjp"
        )
    if len(possible) != 1 or possible[0].literal is None:
        return None
    only = possible[0]
    if only.kind in ("bool", "int", "float") and not only.literal:
        return "is not a policy, and JAX treats it as none. A falsy policy means `nothing_saveable`"
    if only.kind in ("bool", "int", "float"):
        return f"is not a policy. The first grad/vjp raises `TypeError: '{only.kind}' object is not callable`"
    return None
