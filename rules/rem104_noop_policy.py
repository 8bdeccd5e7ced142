from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remat_lint.apis import policy_info
from remat_lint.apis.jax import POLICY_NAMESPACE
from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.deferred import resolve
from remat_lint.project.summary import Constant
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.values import Value
    from remat_lint.project.model import Project, ProjectModule
else:
    cst = LazyModule("libcst")

# libcst and the analyses are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.

# Measured on jax 0.10.2 (tests/jax_claims/test_policies.py).
SAVES_EVERYTHING = (
    "It keeps what the un-checkpointed function would; compiled with optimization barriers (as on GPU/TPU) "
    "it can even use more temp memory than no checkpoint"
)
_ANYTHING_EXCEPT = "save_anything_except_these_names"
_EVERYTHING = f"{POLICY_NAMESPACE}.everything_saveable"


class NoopPolicy(Rule):
    """
    ## What it does
    Flags checkpoint policies that save everything: `policy=jax.checkpoint_policies.everything_saveable`,
    any `save_anything_except_these_names(...)`, a custom policy (a `def` or `lambda`) that always
    returns `True`, and `save_from_both_policies` with one of those inside; also when the policy
    is one of those through a constant, a config object's field default (a dataclass, an
    `eqx.Module`), a lookup table or a helper's return, every value it can hold saving everything.
    A field read through a parameter annotated with the class (`def build(cfg: Config)`) counts
    when every construction of the class in the project leaves it at `everything_saveable` (as
    REM001 reads such a field).

    ## Why is this bad?
    A checkpoint trades compute for memory by *not* saving intermediates for the backward pass.
    A policy that saves everything keeps exactly the residuals the function keeps without a
    checkpoint, so nothing is saved; compiled with optimization barriers (as on GPU and TPU) the
    checkpoint even costs more temp memory than no checkpoint at all.

    `save_anything_except_these_names(*names)` looks like "save all but these", but since JAX
    0.10.2 (the remat3 work; still so in 0.11.0) its body is `lambda *_, **__: True`: it ignores
    the names and saves everything, the names included. Up to 0.10.1 it excluded the names, so
    code written then silently lost its memory saving on upgrade. `save_any_names_but_these`
    works (it saves only *named* values, minus the given names).

    Not reported in test files (`tests/`, `test_*.py`, `*_test.py`), where comparing policies is
    deliberate.

    ## Example
    ```python
    import jax
    cp = jax.checkpoint_policies

    block = jax.checkpoint(block, policy=cp.everything_saveable)
    attention = jax.checkpoint(attention, policy=cp.save_anything_except_these_names("scores"))
    ```

    ## Use instead
    ```python
    import jax
    cp = jax.checkpoint_policies

    block = jax.checkpoint(block, policy=cp.dots_with_no_batch_dims_saveable)
    attention = jax.checkpoint(attention, policy=cp.save_any_names_but_these("scores"))
    ```
    or drop the checkpoint where memory is not the concern.

    ## Fix safety
    No fix: which values are worth saving depends on the model.

    ## References
    - [Gradient checkpointing: policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [`save_anything_except_these_names` source](https://github.com/jax-ml/jax/blob/main/jax/_src/ad_checkpoint.py)
    """

    code = "REM104"
    trace_check = Rule.TraceCheck("cost", cost="saves-nothing")
    name = "noop-policy"
    severity = Severity.WARNING
    quiet_in_tests = True  # tests compare against everything_saveable on purpose
    project_wide = True  # a config field's value may depend on constructions in other modules

    VALID = [
        "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)",
        "import jax\nPOLICIES = {'everything': jax.checkpoint_policies.everything_saveable}",
        "import jax\ng = jax.checkpoint(f, policy=getattr(jax.checkpoint_policies, cfg.remat_policy))",
        "import jax\ndef policy(prim, *args, **params):\n    if prim.name == 'dot_general':\n        return True\n    return False\n"
        "g = jax.checkpoint(f, policy=policy)",
        "import jax\ndef policy(prim, *args, **params):\n    if prim.name == 'dot_general':\n        return True\n"
        "g = jax.checkpoint(f, policy=policy)",
        "import jax\nfrom myproject import everything_saveable\ng = jax.checkpoint(f, policy=everything_saveable)",
        "import jax\ndef save_all_but_x(prim, *args, **params):\n    if prim.name == 'name':\n        return params['name'] != 'x'\n"
        "    return True\ng = jax.checkpoint(f, policy=save_all_but_x)",
    ]
    INVALID = [
        Invalid("import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.everything_saveable)"),
        Invalid("from jax import checkpoint_policies as cp\np = cp.save_anything_except_these_names('a')"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, policy=lambda *_, **__: True)"),
        Invalid(
            "import functools, jax\ndef save_all(prim, *_, **__):\n    return True\n"
            "@functools.partial(jax.checkpoint, policy=save_all)\ndef f(x):\n    return x"
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\nimport jax\n"
            "P = cp.save_from_both_policies(cp.dots_saveable, cp.everything_saveable)\ng = jax.checkpoint(f, policy=P)"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.deferred import deferred_value
        from remat_lint.analysis.policies import site_policy

        for call in self.ctx.model.calls:
            info = policy_info(self.ctx.qualified_name(call.func))
            if info is not None and info.name == _ANYTHING_EXCEPT:
                self.report(
                    call,
                    f"`{self.ctx.code(call.func)}(...)` ignores its names and saves everything. Since JAX 0.10.2 "
                    "its body is `lambda *_, **__: True`: as a policy it saves every value, these names included, like "
                    "`everything_saveable`; to save only named values minus these, use `save_any_names_but_these`",
                    # target-jax-version below 0.10.2 (read in the 0.10.1 and 0.10.2 sources):
                    before_jax=(
                        "0.10.2",
                        f"`{self.ctx.code(call.func)}(...)` saves everything from JAX 0.10.2 — breaks "
                        "on upgrade. Up to 0.10.1 it saves every value except the given names; from 0.10.2 its "
                        "body is `lambda *_, **__: True`, so it saves these names too, like `everything_saveable`, "
                        "and the checkpoint's memory saving is silently lost; to save only named values minus "
                        "these, use `save_any_names_but_these`",
                    ),
                )
        for site in self.ctx.sites:
            value = site_policy(site)
            subject = None if value is None else self._subject(value)
            if subject is not None:
                self.report(site.node, _message(subject))
            elif value is not None and self.ctx.values.possible(value) is None:
                # perhaps a field any construction in the project may set: the project phase decides
                later = deferred_value(self.ctx.values, value)
                if later is not None and _everything(later.known or [Constant("policy", qname=_EVERYTHING)]):
                    self.candidate(site.node, later.symbols, {"values": later.values, "policy": self.ctx.code(value)})

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the candidates whose every value, resolved across the project, is
        ``everything_saveable``."""
        kept = []
        for candidate in candidates:
            resolved = resolve(project, module, candidate.values["values"])
            if resolved is None or not _everything(resolved.values):
                continue
            finding = candidate.finding
            shown = f"`policy={candidate.values['policy']}`{resolved.source} is `everything_saveable` and"
            finding.message, finding.data, finding.related = _message(shown), {"from": resolved.where}, resolved.related
            kept.append(finding)
        return kept

    def _subject(self, value: cst.BaseExpression) -> str | None:
        """The start of the message when ``value`` is a policy that saves everything, else None."""
        shown = f"`policy={self.ctx.code(value)}`"
        if self._saves_everything(value):
            return shown if self._is_everything_saveable(value) else f"{shown} is `everything_saveable` and"
        if self._always_true(value):
            return f"{shown} is a custom policy that always returns `True`, so it"
        for inner in self._both(value):
            if self._saves_everything(inner) or self._always_true(inner):
                return f"{shown} includes `{self.ctx.code(inner)}`, so it"
        return None

    def _saves_everything(self, value: cst.BaseExpression) -> bool:
        """Every value ``value`` can hold is ``everything_saveable`` (through names, config
        fields, lookups, helpers: the value layer)."""
        return _everything(self.ctx.values.possible(value) or ())

    def _is_everything_saveable(self, value: cst.BaseExpression) -> bool:
        """``value`` spells ``everything_saveable`` itself (an import of it, not a name bound to it)."""
        binding = self.ctx.model.single_binding(value) if isinstance(value, cst.Name) else None
        spelled = binding is None or binding.kind == "import"
        return spelled and _policy_name(self.ctx.qualified_name(value)) == "everything_saveable"

    def _always_true(self, value: cst.BaseExpression) -> bool:
        from remat_lint.analysis.policies import constant_return

        constant = constant_return(self.ctx.values, value)
        return constant is not None and constant[0] is True

    def _both(self, value: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The two policies of the ``save_from_both_policies(...)`` call ``value`` certainly holds."""
        found = self.ctx.values.possible(value)
        if not found or len(found) != 1:
            return []
        (both,) = found
        if both.kind != "policy" or _policy_name(both.qname) != "save_from_both_policies":
            return []
        return [arg.value for arg in both.node.args if not arg.star] if isinstance(both.node, cst.Call) else []


def _everything(values: Sequence[Value | Constant]) -> bool:
    """Every value a policy can hold is ``everything_saveable``."""
    return bool(values) and all(v.kind == "policy" and _policy_name(v.qname) == "everything_saveable" for v in values)


def _message(subject: str) -> str:
    return (
        f"{subject} saves every intermediate: the checkpoint saves no memory. "
        f"{SAVES_EVERYTHING}; remove the checkpoint or save less"
    )


def _policy_name(qname: str | None) -> str | None:
    info = policy_info(qname)
    return info.name if info is not None else None
