from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.modules import LOCAL
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.semantic import SemanticModel
    from remat_lint.analysis.values import Value, Values
    from remat_lint.project.model import Project, ProjectModule
    from remat_lint.project.summary import TableEntry
else:
    cst = LazyModule("libcst")

# libcst and the analyses are imported where a file is checked: the project phase
# (check_project), often all a warm run does, needs neither.

# Settings whose name asks for a checkpoint that saves nothing, which JAX spells ``policy=None``
# (MaxText's ``remat_policy: full``) or ``nothing_saveable``. A table mapping another setting
# ("none", "off") to None may well mean "no checkpoint": it is left alone.
_FULL_SETTINGS = frozenset({"full", "nothing_saveable"})


class FullRematSkippedByNoneGuard(Rule):
    """
    ## What it does
    Flags a checkpoint applied only under `if policy is not None:` (or `if policy:`) when
    `policy` comes from a table (a dict literal or `dict(...)`, looked up as
    `POLICIES[setting]` or `POLICIES.get(setting)`) that maps the setting `"full"` (or
    `"nothing_saveable"`) to `None`. The table may be another module's of the project (`from
    .policies import POLICIES`, a dict literal no module changes in place): the finding is at the
    guard, also when only its file is linted, and names the table's module.

    ## Why is this bad?
    `jax.checkpoint(f, policy=None)` is the full checkpoint: it saves nothing and recomputes
    everything, which is why tables map "full" to `None`. The guard reads the same `None` as "no
    checkpoint", so the setting that asks for the most memory saving silently gets no checkpoint
    at all. Measured on jax 0.10.2 (CPU, optimization barriers kept, tanh MLPs of depth 4 to 12,
    `grad` and `value_and_grad`): without the checkpoint, training uses 2.5x to 6.4x the temp
    memory of `jax.checkpoint(layer)` (589,824 vs 131,584 bytes at depth 8, batch 64, width 256);
    `policy=None` keeps the same residuals as `nothing_saveable`.

    Tables that map another setting (`"none"`, `"off"`) to `None` mean "no checkpoint" and are
    not flagged; nor is a guard on the setting itself (`if cfg.remat != "none":`).

    On by default: it fires only when the table is known (in the file or imported from the
    project), the lookup and the guard are in the file, and the setting's own name asks for the
    full checkpoint.

    ## Example
    ```python
    import jax
    cp = jax.checkpoint_policies
    POLICIES = {"full": None, "dots": cp.dots_saveable}

    def build(layer, setting):
        policy = POLICIES[setting]
        if policy is not None:
            layer = jax.checkpoint(layer, policy=policy)
        return layer
    ```

    ## Use instead
    ```python
    POLICIES = {"full": cp.nothing_saveable, "dots": cp.dots_saveable, "none": None}
    ```
    or test the setting: `if setting != "none":`.

    ## Fix safety
    No fix: which settings should checkpoint is the project's decision.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [Gradient checkpointing: policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM107"
    name = "full-remat-skipped-by-none-guard"
    severity = Severity.WARNING
    project_wide = True  # the table may be another module's

    VALID = [
        "import jax\nP = {'none': None, 'dots': jax.checkpoint_policies.dots_saveable}\n"
        "def build(f, s):\n    p = P[s]\n    if p is not None:\n        f = jax.checkpoint(f, policy=p)\n    return f",
        "import jax\nP = {'full': None}\ndef build(f, s):\n    return jax.checkpoint(f, policy=P[s])",
        "import jax\nP = {'full': None}\ndef build(f, s):\n    p = P[s]\n    if s != 'none':\n"
        "        f = jax.checkpoint(f, policy=p)\n    return f",
    ]
    INVALID = [
        Invalid(
            "import jax\nP = {'full': None, 'dots': jax.checkpoint_policies.dots_saveable}\n"
            "def build(f, s):\n    p = P[s]\n    if p is not None:\n        f = jax.checkpoint(f, policy=p)\n    return f"
        ),
        Invalid(
            "import flax.linen as nn\nP = {'full': None}\ndef build(B, s):\n    p = P.get(s)\n"
            "    return nn.remat(B, policy=p) if p else B"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.policies import site_policy
        from remat_lint.project.extract import ref_of

        model = self.ctx.model
        for site in self.ctx.sites:
            policy = site_policy(site)
            if not isinstance(policy, cst.Name):
                continue
            guard = _none_guard(model, site.node, policy)
            lookup = _lookup(self.ctx.values, policy) if guard is not None else None
            if guard is None or lookup is None:
                continue
            table, asked = lookup
            setting = _full_setting_mapped_to_none(self.ctx.values, table, asked)
            if setting is not None:
                self.report(guard, _message(self.ctx.code(guard), setting, self.ctx.code(table)))
                continue
            ref = ref_of(model, table) if self.ctx.values.entries(table) is None else None
            if ref is not None and ref[0] != LOCAL:  # another module's table: the project phase decides
                key = asked.literal if asked is not None else None
                data = {"ref": ref, "asked": key, "guard": self.ctx.code(guard), "table": self.ctx.code(table)}
                self.candidate(guard, [ref[1].rsplit(".", 1)[-1]], data)

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm a guard whose table, defined in another module, maps "full" to None."""
        kept = []
        for candidate in candidates:
            data = candidate.values
            found = project.table(module, tuple(data["ref"]))
            setting = _full_setting(found[1], data["asked"]) if found is not None else None
            if found is None or setting is None:
                continue
            where = os.path.relpath(found[0].path, os.path.dirname(module.path))
            finding = candidate.finding
            finding.message = _message(data["guard"], setting, data["table"], f" ({where})")
            finding.data = {"from": where}
            name = data["ref"][1].rsplit(".", 1)[-1]
            finding.related = project.defined_here((found[0].name, name))
            kept.append(finding)
        return kept


def _message(guard: str, setting: str, table: str, where: str = "") -> str:
    return (
        f"The guard `{guard}` skips the checkpoint for the setting "
        f'"{setting}", which `{table}`{where} maps to None. `policy=None` is the full checkpoint: '
        "that setting gets no checkpoint at all (measured: 2.5x-6.4x the full checkpoint's temp memory); map it "
        "to `jax.checkpoint_policies.nothing_saveable`, or test the setting instead of the policy"
    )


def _full_setting(entries: Sequence[TableEntry], asked: object) -> str | None:
    """The setting "full" of a table of another module, when it maps it to None and the lookup
    may ask for it."""
    for entry in entries:
        if (
            entry.key is not None
            and entry.key.literal in _FULL_SETTINGS
            and entry.values is not None
            and [v.kind for v in entry.values] == ["none"]
            and (asked is None or asked == entry.key.literal)
        ):
            return str(entry.key.literal)
    return None


def _none_guard(model: SemanticModel, node: cst.CSTNode, policy: cst.Name) -> cst.BaseExpression | None:
    """The innermost ``if``/conditional expression of ``node``'s function that runs ``node`` only
    when ``policy``'s variable is not None (``is not None`` or truthy; ``is None``/``not`` in its
    ``else``)."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(ancestor, (cst.If, cst.IfExp)):
            for variable in _tested(ancestor.test, in_else=child is ancestor.orelse):
                if _same_variable(model, variable, policy):
                    return ancestor.test
        child = ancestor
    return None


def _tested(test: cst.BaseExpression, in_else: bool) -> list[cst.Name]:
    """The names ``test`` requires to be set on the branch taken (body, or ``else`` when ``in_else``):
    through ``and`` in the body, ``or`` in the ``else``."""
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.Or) if in_else else isinstance(test.operator, cst.And)
        return [*_tested(test.left, in_else), *_tested(test.right, in_else)] if both else []
    if isinstance(test, cst.Name) and not in_else:
        return [test]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and in_else:
        return [test.expression] if isinstance(test.expression, cst.Name) else []
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return []
        if isinstance(target.operator, cst.IsNot) and not in_else or isinstance(target.operator, cst.Is) and in_else:
            return [test.left]
    return []


def _same_variable(model: SemanticModel, a: cst.Name, b: cst.Name) -> bool:
    """``a`` and ``b`` read the same variable, bound by the same assignments."""
    first, second = model.bindings_at(a) or [], model.bindings_at(b) or []
    return a.value == b.value and bool(first) and [id(x) for x in first] == [id(x) for x in second]


def _lookup(values: Values, policy: cst.Name) -> tuple[cst.BaseExpression, Value | None] | None:
    """The table ``policy`` is looked up in (``P[key]``, ``P.get(key)``) and the key, when known."""
    value = values.model.assigned_value(policy)
    key: cst.BaseExpression | None
    if isinstance(value, cst.Subscript) and len(value.slice) == 1 and isinstance(value.slice[0].slice, cst.Index):
        table, key = value.value, value.slice[0].slice.value
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get":
        table, key = value.func.value, value.args[0].value if value.args else None
    else:
        return None
    return table, values.single(key) if key is not None else None


def _full_setting_mapped_to_none(values: Values, table: cst.BaseExpression, asked: Value | None) -> str | None:
    """The setting ``"full"`` when ``table`` (of this file) maps it to None and the lookup may ask
    for it (a key that certainly holds another setting does not)."""
    for setting, entry in values.entries(table) or ():
        if (
            setting is not None
            and setting.literal in _FULL_SETTINGS
            and getattr(values.single(entry), "kind", None) == "none"
            and not (asked is not None and asked.literal != setting.literal)
        ):
            return str(setting.literal)
    return None
