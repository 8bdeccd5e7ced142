from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING

from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.semantic import SemanticModel
    from remat_lint.analysis.sites import RematSite
    from remat_lint.engine.context import LintContext
    from remat_lint.project.model import Project, ProjectModule
else:
    cst = LazyModule("libcst")

# libcst and the analyses are imported where a file is checked: the project phase (check_project),
# often all a warm run does, needs neither.

_WHY = (
    "XLA merges the recomputation back into the forward pass, so the checkpoint saves no memory (measured on JAX 0.10.2: "
    "the same temp as no checkpoint) and still costs extra FLOPs; a Python loop is unrolled, so it does "
    "not count. Drop it (it only helps inside such a body)"
)
_WHY_UNROLLED = (
    "XLA merges the recomputation back into the forward pass (measured on JAX 0.10.2, eight layers applied in a "
    "Python `for`: the same temp memory and FLOPs as no checkpoint, where the default `prevent_cse=True` saves 70 % "
    "of temp); a `scan` elsewhere in the module does not run it. Drop it"
)
_MESSAGE = f"`prevent_cse=False` outside a `scan`/`fori_loop` body makes the checkpoint save no memory. {_WHY}"


class PreventCseOutsideScan(Rule):
    """
    ## What it does
    Flags `prevent_cse=False` on a checkpoint that is not the body of a `lax.scan`,
    `fori_loop`, `while_loop`, `lax.map` or a Flax/Haiku/NNX scan: the module calls no loop at
    all, and the checkpointed function is only ever called directly (or differentiated).

    Where it is reported: at the checkpoint with `prevent_cse=False` (the line to change), also
    when its callers are in other modules; the message names one of them.

    ## Why is this bad?
    `jax.checkpoint` wraps the recomputation in an optimization barrier so that XLA's common
    subexpression elimination cannot merge it back into the forward pass. `prevent_cse=False`
    drops the barrier. Inside a `scan` body that is harmless (the recomputation lives in the
    backward loop, where nothing can be merged; measured: the same FLOPs, 4 % less temp), and
    JAX's docs suggest it there because the barriers can foil other optimizations and cost
    time, especially on GPU. Outside a loop, XLA merges the recomputation back and keeps the
    forward intermediates alive: the memory saving is lost. Measured (jax 0.10.2, residual-MLP blocks
    checkpointed per layer, compiled with the barriers kept as on GPU/TPU): the same temp memory
    as no checkpoint at all (the default `prevent_cse=True` saves 80 %), while still costing
    about 14 % more FLOPs.

    Not reported when the value is not the literal `False` (`prevent_cse=not scan_layers` is
    the recommended idiom), when the module calls any loop (the checkpoint may run inside it),
    when the checkpoint is set up inside a class (a layer that some other module may scan), or
    when the checkpointed function is passed on, stored or returned by a nested function, and
    in test code (files matching `test-paths`; calls in `if __name__ == "__main__":` blocks
    that do not train, `with mock.patch(...)` blocks and `test_*` functions do not count as uses).

    In a module that does call a loop, a checkpoint called only inside Python `for`/`while` loops
    of module-level functions (`x = jax.checkpoint(layer, prevent_cse=False)(w, x)`, or a
    module-level `block = jax.checkpoint(...)` called so) is still reported unless a scan or loop
    body of the project reaches one of those functions or the checkpoint itself. A checkpoint
    bound to a local name there is left alone (a per-chunk loss summed in a Python loop, as in
    EasyDeL, is a pattern this rule keeps quiet on).

    A module-level function that returns the checkpoint (`def make_block(f): return
    jax.checkpoint(f, prevent_cse=False)`) is judged by its callers in the project: reported
    when every call's result is only called directly, in modules without loops and in
    functions that no loop body of the project reaches (a few calls away); the message names a
    call. A function that no module of the project calls (test code aside) is taken to be a
    library's public API: its users may scan what it returns, so it is not reported.

    ## Example
    ```python
    import jax

    block = jax.checkpoint(block, prevent_cse=False)

    def forward(params, x):
        for p in params:
            x = block(p, x)
        return x
    ```

    ## Use instead
    ```python
    import jax

    block = jax.checkpoint(block)

    def forward(params, x):
        for p in params:
            x = block(p, x)
        return x
    ```

    ## Fix safety
    Unsafe: removing `prevent_cse=False` never changes results, but when another module runs
    the function inside a `scan` after all, the barriers cost a little performance there.

    ## References
    - [`jax.checkpoint`: `prevent_cse`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [AI-Hypercomputer/maxtext PR #4990: CSE undoing rematerialization](https://github.com/AI-Hypercomputer/maxtext/pull/4990)
    """

    code = "REM103"
    trace_check = Rule.TraceCheck("cost", cost="cse-lost")
    name = "prevent-cse-outside-scan"
    severity = Severity.WARNING
    quiet_in_tests = True  # tests exercise prevent_cse=False outside loops on purpose
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.UNSAFE,)

    VALID = [
        "import jax\nbody = jax.checkpoint(body, prevent_cse=False)\ndef run(c, xs):\n    return jax.lax.scan(body, c, xs)",
        "import jax\nblock = jax.checkpoint(block, prevent_cse=not scan_layers)\ny = block(x)",
        "import jax\nblock = jax.checkpoint(block, prevent_cse=False)",
        "import jax\ndef make():\n    return jax.checkpoint(block, prevent_cse=False)",
        "import jax\nblock = jax.checkpoint(block, prevent_cse=False)\ny = run_layers(block, x)",
        "import haiku as hk\nclass Layer(hk.Module):\n    def __call__(self, x):\n        return hk.remat(self.mlp, prevent_cse=False)(x)",
        (
            "import functools, jax\n@functools.partial(jax.checkpoint, prevent_cse=False)\ndef chunk(q, k):\n    return q @ k\n"
            "def attend(q, ks):\n    return jax.lax.map(lambda k: chunk(q, k), ks)"
        ),
    ]
    INVALID = [
        Invalid(
            "import jax\nblock = jax.checkpoint(block, prevent_cse=False)\nfor p in ps:\n    x = block(p, x)",
            fixed="import jax\nblock = jax.checkpoint(block)\nfor p in ps:\n    x = block(p, x)",
        ),
        Invalid(
            "import functools, jax\n@functools.partial(jax.checkpoint, prevent_cse=False, policy=p)\ndef f(x):\n    return x\ny = f(x)",
            fixed="import functools, jax\n@functools.partial(jax.checkpoint, policy=p)\ndef f(x):\n    return x\ny = f(x)",
        ),
        Invalid(
            "import haiku as hk\ndef forward(x):\n    return hk.remat(residual, prevent_cse=False)(x)",
            fixed="import haiku as hk\ndef forward(x):\n    return hk.remat(residual)(x)",
        ),
    ]

    project_wide = True  # a checkpoint returned by a helper is judged by the helper's callers

    def check(self) -> None:
        candidates = [(site, arg) for site in self.ctx.sites if (arg := _prevent_cse_false(site)) is not None]
        if candidates and self.ctx.loops.has_loops:
            # A loop anywhere in the module may run the checkpoint (real-world trap T8); one only
            # called in Python loops of module-level defs is judged by the project's loop bodies instead.
            from remat_lint.analysis.exports import exported_name

            for site, arg in candidates:
                exported = exported_name(self.ctx.model, site)
                if exported is None and not _is_called(self.ctx.model.parent(site.node), site.node):
                    continue  # a local name (EasyDeL's per-chunk loss, trap T6): left alone in a module with loops
                if functions := _unrolled_in(self.ctx.model, self._direct_uses(site)):
                    # Another module may import the checkpoint itself and scan it.
                    symbols = [*functions, *filter(None, [exported])]
                    self.candidate(site.node, symbols, {"unrolled_in": functions}, fix=self._fix(site, arg))
            return
        for site, arg in candidates:
            if self._in_class(site):
                continue
            if self._only_called_directly(site):
                self.report(site.node, _MESSAGE, fix=self._fix(site, arg))
            elif (helper := _returned_by(self.ctx.model, site.node)) is not None:
                # Its callers decide, in the project phase (check_project).
                self.candidate(site.node, [helper], fix=self._fix(site, arg))

    @staticmethod
    def collect_facts(ctx: LintContext) -> list[tuple[int, str, bool, str | None]] | None:
        """The calls of module-level functions, outside test code: (ref level, ref name, whether
        the result is only called directly in a module without loops, the top-level def making
        the call). No rows: positions would cost more than the rest of the rule."""
        from remat_lint.analysis.smoke_tests import in_smoke_test
        from remat_lint.project.extract import ref_of, top_level_function

        if ctx.is_test_file:
            return None
        model, facts = ctx.model, []
        for call in model.calls:
            ref = ref_of(model, call.func)
            if ref is not None and not in_smoke_test(model, call):
                called = not ctx.loops.has_loops and _result_only_called(model, call)
                facts.append((*ref, called, top_level_function(model, call)))
        return facts

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm a helper's checkpoint when the project calls the helper and only calls the
        results directly, in no function that a loop body reaches."""
        kept = []
        for candidate in candidates:
            finding = candidate.finding
            symbol = (module.name, candidate.symbols[0])
            if "unrolled_in" in candidate.values:
                functions = [str(f) for f in candidate.values["unrolled_in"]]
                if not any(project.in_loop_body((module.name, f)) for f in candidate.symbols):
                    named = ", ".join(f"`{f}`" for f in functions)
                    finding.message = (
                        f"`prevent_cse=False` on a checkpoint called only in Python loops of {named} makes it save no "
                        f"memory: no `scan`/`fori_loop` body of the project reaches them. {_WHY_UNROLLED}"
                    )
                    kept.append(finding)
                continue
            uses = [
                (m, fact)
                for m, facts in project.facts(cls.code)
                for fact in facts
                if project.resolve(m, fact[:2]) == symbol
            ]
            if not uses or not all(fact[2] for _, fact in uses):
                continue  # a library's public API (its users may scan it), or a result used otherwise
            if any(fact[3] and project.in_loop_body((m.name, fact[3])) for m, fact in uses):
                continue  # called inside a loop body somewhere in the project
            other, fact = min(uses, key=lambda use: (use[0].path, use[1][3] or ""))
            where = os.path.relpath(other.path, os.path.dirname(module.path)) + (f", in `{fact[3]}`" if fact[3] else "")
            finding.message = (
                f"`prevent_cse=False` on the checkpoint `{symbol[1]}` returns makes it save no memory: the project "
                f"calls it only directly, outside any `scan`/`fori_loop` body ({where}). {_WHY}"
            )
            finding.data = {"helper": symbol[1], "called_at": where}
            kept.append(finding)
        return kept

    def _in_class(self, site: RematSite) -> bool:
        return any(isinstance(a, cst.ClassDef) for a in self.ctx.model.ancestors(site.node))

    def _only_called_directly(self, site: RematSite) -> bool:
        """Every use of the checkpointed callable is a call (or hands it to `grad`), and there is
        at least one."""
        return bool(self._direct_uses(site))

    def _direct_uses(self, site: RematSite) -> list[cst.CSTNode]:
        """The uses of the checkpointed callable when every one is a call (or hands it to `grad`);
        none otherwise."""
        from remat_lint.analysis.smoke_tests import in_smoke_test

        model = self.ctx.model
        if site.form == "call":
            parent = model.parent(site.node)
            if isinstance(parent, cst.Call) and parent.func is site.node:
                return [] if in_smoke_test(model, parent) else [parent]
            target = _assigned_name(parent, site.node)
            if target is None:
                return []  # stored, passed on or returned: its user may scan it
            name = target
        else:
            owner = site.target
            if not isinstance(owner, cst.FunctionDef):
                return []
            name = owner.name.value
        uses = [
            n for n in _names(model, name) if site in self.ctx.callables.denote(n).sites and not in_smoke_test(model, n)
        ]
        differentiated = {id(d.target) for d in self.ctx.differentiations.all}
        direct = all(_is_called(model.parent(n), n) or id(n) in differentiated for n in uses)
        return list(uses) if direct else []

    def _fix(self, site: RematSite, arg: cst.Arg) -> FixSpec | None:
        replacement = site.without_argument(arg)
        if replacement is None:
            return None
        return FixSpec("Remove `prevent_cse=False`", [replacement], Applicability.UNSAFE)


def _names(model: SemanticModel, value: str) -> list[cst.Name]:
    """The names ``value`` read anywhere in the module."""
    if model not in _NAMES:  # one walk per module, not one per assigned call (17 of 33 s on jax+flax, ALL)
        _NAMES[model] = _names_by_value(model)
    return _NAMES[model].get(value, [])


def _names_by_value(model: SemanticModel) -> dict[str, list[cst.Name]]:
    found: dict[str, list[cst.Name]] = {}
    for name in model.names:  # those the model's walk met (a walk of its own was a third of this rule)
        found.setdefault(name.value, []).append(name)
    return found


_NAMES: weakref.WeakKeyDictionary[SemanticModel, dict[str, list[cst.Name]]] = weakref.WeakKeyDictionary()


def _returned_by(model: SemanticModel, node: cst.CSTNode) -> str | None:
    """The module-level def (undecorated) whose ``return`` statement's value ``node`` is."""
    statement = model.parent(node)
    function = next(
        (a for a in model.ancestors(node) if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None
    )
    if not isinstance(statement, cst.Return) or not isinstance(function, cst.FunctionDef) or function.decorators:
        return None
    return function.name.value if model.parent(function) is model.module else None


def _result_only_called(model: SemanticModel, call: cst.Call) -> bool:
    """What ``call`` returns is only ever called: ``make(f)(x)``, or ``block = make(f)`` in a
    function with every later use of ``block`` a call."""
    parent = model.parent(call)
    if _is_called(parent, call):
        return True
    name = _assigned_name(parent, call)
    if name is None or _at_module_level(model, call):
        return False  # stored, passed on, returned, or a module-level name other modules may import
    uses = [n for n in _names(model, name) if n is not parent.targets[0].target]  # type: ignore[union-attr]  # ``_assigned_name``: parent is a one-target Assign
    return bool(uses) and all(_is_called(model.parent(n), n) for n in uses)


def _unrolled_in(model: SemanticModel, uses: list[cst.CSTNode]) -> list[str]:
    """The module-level defs whose Python ``for``/``while`` loops make every one of ``uses`` (a
    checkpoint only called directly); none when a use is anywhere else (a scan body may be)."""
    functions: set[str] = set()
    for use in uses:
        ancestors = list(model.ancestors(use))
        function = next((a for a in ancestors if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef))), None)
        if not isinstance(function, cst.FunctionDef) or model.parent(function) is not model.module:
            return []
        if not any(isinstance(a, (cst.For, cst.While)) for a in ancestors[: ancestors.index(function)]):
            return []
        functions.add(function.name.value)
    return sorted(functions)


def _at_module_level(model: SemanticModel, node: cst.CSTNode) -> bool:
    return not any(isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) for a in model.ancestors(node))


def _prevent_cse_false(site: RematSite) -> cst.Arg | None:
    """The literal ``prevent_cse=False`` of a site whose arguments are all known."""
    arg = site.keyword("prevent_cse")
    if arg is None or site.has_star_args:
        return None
    return arg if isinstance(arg.value, cst.Name) and arg.value.value == "False" else None


def _assigned_name(statement: cst.CSTNode | None, value: cst.CSTNode) -> str | None:
    """The name ``statement`` binds to ``value`` (``name = value``)."""
    if isinstance(statement, cst.Assign) and statement.value is value and len(statement.targets) == 1:
        target = statement.targets[0].target
        return target.value if isinstance(target, cst.Name) else None
    return None


def _is_called(parent: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    return isinstance(parent, cst.Call) and parent.func is node
