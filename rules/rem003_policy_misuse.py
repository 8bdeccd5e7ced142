from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Sequence

from remat_lint.apis import POLICIES, PolicyInfo, is_policy_namespace, policy_info
from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.modules import LOCAL
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis import guards, policies
    from remat_lint.analysis.semantic import SemanticModel
    from remat_lint.analysis.values import Values
    from remat_lint.engine.context import LintContext
    from remat_lint.project.model import Project, ProjectModule
else:  # imported when a file is checked: the project phase (check_project) needs no parse
    cst = LazyModule("libcst")
    guards = LazyModule("remat_lint.analysis.guards")
    policies = LazyModule("remat_lint.analysis.policies")

# What calling a plain policy with no arguments gives (measured on jax 0.10.2).
CALLED_PLAIN = {
    "everything_saveable": (
        "returns `True`, which is not a policy: as `policy=` the first grad/vjp raises "
        "`TypeError: 'bool' object is not callable`"
    ),
    "nothing_saveable": (
        "returns `False`, which JAX treats as no policy: it works only by accident, as the default `nothing_saveable`"
    ),
    "dots_saveable": "raises `TypeError: DotsSaveable.__call__() missing 1 required positional argument: 'prim'`",
    "dots_with_no_batch_dims_saveable": (
        "raises `TypeError: DotsSaveable.__call__() missing 1 required positional argument: 'prim'`"
    ),
}
# How a factory is meant to be called, for messages.
CALL_HINTS = {
    "save_from_both_policies": "policy_1, policy_2",
    "offload_dot_with_no_batch_dims": "offload_src, offload_dst",
}
_READ_BY_KEY = "in a table of policies read by key"
_AS_POLICY = "as `policy=`"
# Saves everything whatever names it gets (REM104 reports it), so a list/tuple changes nothing.
_NAMES_IGNORED = "save_anything_except_these_names"
_TUPLE_EFFECT = {
    "save_only_these_names": "so none of the names is ever saved: the policy silently saves nothing named",
    "save_any_names_but_these": "so none of the names is excluded: every named value is saved",
}


# The named positional parameters of the factories that have any (the name factories take
# ``*names`` only; ``save_and_offload_only_these_names`` is keyword-only: PolicyInfo.keyword_only).
_PARAMETER_NAMES = {
    "save_from_both_policies": ("policy_1", "policy_2"),
    "offload_dot_with_no_batch_dims": ("offload_src", "offload_dst"),
}


class PolicyMisuse(Rule):
    """
    ## What it does
    Flags checkpoint policies used the wrong way round: a plain policy called
    (`dots_saveable()`, `nothing_saveable()`, `everything_saveable()` and their aliases), a
    policy factory used uncalled (`policy=save_only_these_names`, or as a value of a policy
    table that `policy=TABLE[key]` reads, also from another module of the project: reported at
    the table's entry, naming the lookup; or a config field that every construction of its
    class in the project leaves at a factory, read through a parameter annotated with the class,
    as REM001 reads such a field), an attribute that `jax.checkpoint_policies` does not
    have, one list or tuple passed where the names are separate arguments, a factory called with
    the wrong number of arguments, a name that `save_and_offload_only_these_names` is told both
    to save and to offload, and an offloading policy inside `save_from_both_policies`.

    Where it is reported: at the table's entry (the factory to call), in the table's module, also
    when the lookup is in another module: the message names the lookup, and JSON and SARIF carry it
    as a related location. Linting only the module that reads the table reports nothing there: the
    line to change is in a file that was not linted.

    ## Why is this bad?
    - `dots_saveable()` raises `TypeError` (missing `prim`) as soon as it is evaluated;
      `everything_saveable()` returns `True` and the first grad/vjp raises
      `'bool' object is not callable`; `nothing_saveable()` returns `False`, which only works
      because JAX treats a falsy policy as no policy.
    - `save_and_offload_only_these_names` with a name in both lists raises `ValueError` when it
      is built (measured, jax 0.10.2).
    - An uncalled factory is accepted when wrapping; the first grad/vjp calls it as a policy and
      raises `TypeError: save_only_these_names() got an unexpected keyword argument ...`.
    - `jax.checkpoint_policies` is a namespace: a misspelled name raises `AttributeError`.
    - `save_only_these_names(['a', 'b'])` raises `TypeError: unhashable type: 'list'`;
      `save_only_these_names(('a', 'b'))` takes the tuple as one name and silently saves
      nothing named; `save_any_names_but_these(('a',))` silently excludes nothing.
    - `save_from_both_policies` takes exactly two policies, `offload_dot_with_no_batch_dims`
      exactly `offload_src, offload_dst`, and `save_and_offload_only_these_names` keyword
      arguments only: anything else raises `TypeError` when called.
    - `save_from_both_policies` needs policies that return booleans; with an offloading policy
      the first grad/vjp raises `ValueError: The return value of the policies should be a
      boolean`.

    Calling a plain policy with its arguments inside a custom policy
    (`cp.dots_saveable(prim, *args, **params)`) is fine and not flagged; nor are names looked up
    from configuration (`getattr(jax.checkpoint_policies, cfg.remat_policy)`).

    ## Example
    ```python
    import jax
    cp = jax.checkpoint_policies

    block = jax.checkpoint(block, policy=cp.dots_saveable())
    attention = jax.checkpoint(attention, policy=cp.save_only_these_names(("q", "k")))
    ```

    ## Use instead
    ```python
    import jax
    cp = jax.checkpoint_policies

    block = jax.checkpoint(block, policy=cp.dots_saveable)
    attention = jax.checkpoint(attention, policy=cp.save_only_these_names("q", "k"))
    ```

    ## Fix safety
    Safe: a called plain policy becomes the policy itself, and a list literal (which always
    raises) is unpacked into separate names. Unsafe: a tuple literal is unpacked the same way
    (the policy then saves those names, which uses more memory than the silent no-op did), and a
    misspelled `checkpoint_policies` attribute is renamed to the closest real policy (check it is
    the one you meant).

    ## References
    - [Gradient checkpointing: policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [`jax.checkpoint_policies` source](https://github.com/jax-ml/jax/blob/main/jax/_src/ad_checkpoint.py)
    """

    code = "REM003"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("TypeError", "'bool' object is not callable"),
            ("TypeError", "missing 1 required positional argument"),
            ("TypeError", "got an unexpected keyword argument"),
            ("TypeError", "unhashable type"),
            ("AttributeError", "has no attribute"),
        ),
    )
    name = "policy-misuse"
    severity = Severity.ERROR
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE, Applicability.UNSAFE)
    project_wide = True  # a table of policies may be read by key in another module

    VALID = [
        "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names('q', 'k'))",
        "import jax\ncp = jax.checkpoint_policies\ndef policy(prim, *args, **params):\n    return cp.dots_saveable(prim, *args, **params)",
        "import jax\np = getattr(jax.checkpoint_policies, cfg.remat_policy, None)",
        "import jax\np = getattr(jax.checkpoint_policies, 'save_from_both_policies_v2', None)",
        "from jax import checkpoint_policies as cp\np = cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names('a'))",
        "from jax import checkpoint_policies as cp\np = cp.save_and_offload_only_these_names(names_which_can_be_saved=[], "
        "names_which_can_be_offloaded=['a'], offload_src='device', offload_dst='pinned_host')",
        "from jax import checkpoint_policies as cp\np = cp.save_only_these_names(*NAMES)",
        "from jax import checkpoint_policies as cp\nif hasattr(cp, 'future_policy'):\n    p = cp.future_policy",
        "from jax import checkpoint_policies as cp\nNAMES = ['a', 'b']\np = cp.save_only_these_names(*NAMES)",
        "from myproject import auto_remat, policies\nB = auto_remat(Block, policy=policies.save_only_these_names)",
        "import jax\ntry:\n    p = jax.checkpoint_policies.future_policy\nexcept AttributeError:\n    p = None",
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable())",
            fixed="import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)",
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\nPOLICY = cp.checkpoint_dots_with_no_batch_dims()",
            fixed="from jax import checkpoint_policies as cp\nPOLICY = cp.checkpoint_dots_with_no_batch_dims",
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\np = cp.save_only_these_names(['q', 'k'])",
            fixed="from jax import checkpoint_policies as cp\np = cp.save_only_these_names('q', 'k')",
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\np = cp.save_any_names_but_these(('q', 'k'))",
            fixed="from jax import checkpoint_policies as cp\np = cp.save_any_names_but_these('q', 'k')",
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\nNAMES = ('q', 'k')\np = cp.save_only_these_names(NAMES)",
            fixed="from jax import checkpoint_policies as cp\nNAMES = ('q', 'k')\np = cp.save_only_these_names(*NAMES)",
        ),
        Invalid(
            "import jax\np = jax.checkpoint_policies.dots_savable",
            fixed="import jax\np = jax.checkpoint_policies.dots_saveable",
        ),
        Invalid(
            "import jax\np = getattr(jax.checkpoint_policies, 'nothing_savable')",
            fixed="import jax\np = getattr(jax.checkpoint_policies, 'nothing_saveable')",
        ),
        Invalid("import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names)"),
        Invalid(
            "import jax.ad_checkpoint\ng = jax.remat(f, policy=jax.ad_checkpoint.checkpoint_policies.save_any_names_but_these)"
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\np = cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names)"
        ),
        Invalid("from jax import checkpoint_policies as cp\np = cp.save_from_both_policies(cp.dots_saveable)"),
        Invalid("from jax import checkpoint_policies as cp\np = cp.offload_dot_with_no_batch_dims('device')"),
        Invalid("from jax import checkpoint_policies as cp\np = cp.save_and_offload_only_these_names(['a'], ['b'])"),
        Invalid(
            "from jax import checkpoint_policies as cp\np = cp.save_and_offload_only_these_names(names_which_can_be_saved=['a'])"
        ),
        Invalid(
            "from jax import checkpoint_policies as cp\n"
            "p = cp.save_from_both_policies(cp.dots_saveable, cp.offload_dot_with_no_batch_dims('device', 'pinned_host'))"
        ),
        Invalid("import jax\np = jax.checkpoint_policies.totally_unknown"),
    ]

    def check(self) -> None:
        probed, assigned = self._probed_and_assigned()
        for attribute in self.ctx.model.attributes:
            if is_policy_namespace(self.ctx.qualified_name(attribute.value)):
                name = attribute.attr.value
                if name not in POLICIES and name not in probed and name not in assigned and not name.startswith("_"):
                    self._report_unknown(attribute, name, attribute.attr)
        for call in self.ctx.model.calls:
            qname = self.ctx.qualified_name(call.func)
            info = policy_info(qname)
            if info is not None:
                self._check_policy_call(call, info)
            elif qname == "builtins.getattr" and len(call.args) == 2:
                probe = _literal_name(self.ctx, call.args)
                if probe is not None and probe not in POLICIES and probe not in probed:
                    self._report_unknown(call, probe, call.args[1].value)
        for site in self.ctx.sites:
            value = policies.site_policy(site)
            if value is not None:
                self._check_uncalled(value, _AS_POLICY)
                self._defer_uncalled(value)
        self._check_policy_tables()

    def _defer_uncalled(self, value: cst.BaseExpression) -> None:
        """A candidate when ``value`` may be a field that the constructions in the project set
        (``cfg.policy`` for ``cfg: Config``) and what this module tells of it is all factories."""
        from remat_lint.analysis.deferred import deferred_value

        if self.ctx.values.possible(value) is not None or self._expected(value, "TypeError"):
            return
        later = deferred_value(self.ctx.values, value)
        if later is not None and all(c.kind == "factory" for c in later.known):
            self.candidate(value, later.symbols, {"values": later.values, "code": self.ctx.code(value)})

    # --- the checks ---------------------------------------------------------------------------

    def _check_policy_call(self, call: cst.Call, info: PolicyInfo) -> None:
        if any(arg.star for arg in call.args):
            return
        if info.kind == "plain":
            if not call.args:
                self._report_called_plain(call, info)
            return
        positional = [arg for arg in call.args if arg.keyword is None]
        keywords = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        if self._check_arity(call, info, positional, keywords):
            return
        if info.takes_names and info.name != _NAMES_IGNORED:
            for arg in positional:
                self._check_names_argument(info, arg)
        if info.name == "save_and_offload_only_these_names":
            self._check_overlap(call)
        if info.name == "save_from_both_policies":
            for arg in call.args:
                self._check_uncalled(arg.value, "inside `save_from_both_policies`")
                self._check_offload(arg.value)

    def _check_policy_tables(self) -> None:
        """Uncalled factories in a table of policies that is read by key and used as it is
        (``{"dots": cp.dots_saveable, "names": cp.save_only_these_names}[name]``, returned as the
        policy). The plain policies in it show that entries are used uncalled, so a factory entry
        makes the first grad raise once it is chosen."""
        if "checkpoint_policies" not in self.ctx.source:
            return  # no policy can be named in this module: skip the walk over every subscript
        seen: set[int] = set()
        for lookup in _uncalled_lookups(self.ctx.model):
            table = _table(self.ctx.model, lookup)
            if table is None or id(table) in seen:
                continue
            seen.add(id(table))
            for value in self._factory_entries(table):
                self._check_uncalled(value, _READ_BY_KEY)
        for name, table in _module_tables(self.ctx.model):
            if id(table) not in seen:  # other modules may read it by key: the project phase decides
                for value in self._factory_entries(table):
                    self._check_uncalled(value, _READ_BY_KEY, symbols=[name])

    def _factory_entries(self, table: cst.Dict | cst.Call) -> list[cst.BaseExpression]:
        """The entries of a table of policies, when the plain policies in it show that entries are
        used uncalled."""
        entries = _table_values(table)
        kinds = {getattr(policy_info(self.ctx.qualified_name(v)), "kind", None) for v in entries}
        return entries if "plain" in kinds else []

    @staticmethod
    def collect_facts(ctx: LintContext) -> dict[str, Any] | None:
        """The tables of other modules read here by key and used as they are (``TABLE[name]``)."""
        from remat_lint.project.extract import ref_of

        if ctx.is_test_file:
            return None
        model = ctx.model
        refs = [(ref, expr) for expr in _uncalled_lookups(model) if (ref := ref_of(model, expr)) and ref[0] != LOCAL]
        # An annotation (``Callable[...]``) is no policy in use; the rows of those in a signature cost
        # the positions of the whole def or class (more than the parse on jax+flax).
        refs = [
            (ref, expr) for ref, expr in refs if not any(isinstance(a, cst.Annotation) for a in model.ancestors(expr))
        ]
        lookups = [(ref, ctx.positions.start_line(expr)) for ref, expr in refs]
        return {"lookups": lookups} if lookups else None

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Two kinds of candidate: a policy that the project's modules tell (``values``), and the
        uncalled factories in module-level tables that another module reads by key."""
        held = [c for c in candidates if "values" in c.values]
        tables = [c for c in candidates if "values" not in c.values]
        return [*cls._held_uncalled(held, module, project), *cls._read_tables(tables, module, project)]

    @staticmethod
    def _held_uncalled(candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm a policy whose every value, resolved across the project, is a factory."""
        from remat_lint.project.deferred import resolve

        kept = []
        for candidate in candidates:
            resolved = resolve(project, module, candidate.values["values"])
            infos = [policy_info(v.qname) for v in resolved.values] if resolved is not None else []
            if resolved is None or not infos or any(i is None or i.kind != "factory" for i in infos):
                continue
            finding = candidate.finding
            where = f"{_AS_POLICY}{resolved.source}"
            finding.message = _uncalled_message(candidate.values["code"], infos, where)  # type: ignore[arg-type]  # checked: none is None
            finding.data, finding.related = {"from": resolved.where}, resolved.related
            kept.append(finding)
        return kept

    @classmethod
    def _read_tables(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the uncalled factories in module-level tables (pending) that another module
        reads by key; the first such lookup is named."""
        from remat_lint.project.model import place, related

        kept = []
        for candidate in candidates:
            finding = candidate.finding
            symbol = (module.name, candidate.symbols[0])
            reads = sorted(
                (other.path, row, other)
                for other, facts in project.facts(cls.code)
                if other.name != symbol[0]
                for ref, row in facts["lookups"]
                if project.resolve(other, tuple(ref)) == symbol
            )
            if reads:
                where = place(reads[0][2], reads[0][1], module)
                finding.message = finding.message.replace(
                    _READ_BY_KEY, f"{_READ_BY_KEY} (`{symbol[1]}[...]` at {where})", 1
                )
                finding.data = {"symbol": symbol[1], "read_at": where}
                finding.related = (related(reads[0][2], reads[0][1], f"`{symbol[1]}` read by key here"),)
                kept.append(finding)
        return kept

    def _check_overlap(self, call: cst.Call) -> None:
        """A name both saved and offloaded: building the policy raises ``ValueError`` (jax 0.10.2)."""
        lists = {a.keyword.value: _string_items(self.ctx.values, a.value) for a in call.args if a.keyword is not None}
        saved, offloaded = lists.get("names_which_can_be_saved"), lists.get("names_which_can_be_offloaded")
        both = sorted(set(saved or ()) & set(offloaded or ()))
        if not both or self._expected(call, "ValueError"):
            return
        names = ", ".join(repr(n) for n in both)
        self.report(
            call,
            f"`save_and_offload_only_these_names` is told to both save and offload {names}. Building the policy "
            "raises `ValueError` (the two lists must not intersect, jax 0.10.2); keep each name in one list",
        )

    def _report_called_plain(self, call: cst.Call, info: PolicyInfo) -> None:
        if self._expected(call, "TypeError"):
            return
        func = self.ctx.code(call.func)
        self.report(
            call,
            f"`{func}` is a policy, not a factory. Calling it with no arguments "
            f"{CALLED_PLAIN[info.alias_of or info.name]}; pass `{func}` itself",
            fix=FixSpec(f"Use the policy `{func}`", [(call, func)]),
        )

    def _check_uncalled(self, value: cst.BaseExpression, where: str, symbols: list[str] | None = None) -> None:
        """Report a factory used uncalled; with ``symbols`` (a module-level table other modules may
        read by key), a candidate for the project phase."""
        named = policy_info(self.ctx.qualified_name(value))
        infos = [named] if named is not None else self._held_factories(value)
        if not infos or any(i.kind != "factory" for i in infos) or self._expected(value, "TypeError"):
            return
        text = _uncalled_message(self.ctx.code(value), infos, where)
        if symbols is None:
            self.report(value, text)
        else:
            self.candidate(value, symbols, message=text)

    def _held_factories(self, value: cst.BaseExpression) -> list[PolicyInfo]:
        """The factories ``value`` holds when every value it can hold is one (``pick("names")``
        returning ``cp.save_only_these_names``, a config field, a table entry, a loop variable
        over factories); empty otherwise."""
        possible = self.ctx.values.possible(value) or ()
        if not possible or any(v.kind != "factory" for v in possible):
            return []
        return [info for qname in sorted({v.qname for v in possible if v.qname}) if (info := policy_info(qname))]

    def _check_arity(self, call: cst.Call, info: PolicyInfo, positional: list[cst.Arg], keywords: set[str]) -> bool:
        """Report a factory called with the wrong arguments; True when it was."""
        given = len(positional)
        problem, detail = None, ""
        accepted = {*info.keyword_only, *_PARAMETER_NAMES.get(info.name, ())}
        unknown = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value not in accepted]
        if unknown:
            problem = f"got an unexpected keyword argument '{unknown[0]}'"
        elif info.keyword_only:
            missing = [k for k in info.keyword_only if k not in keywords]
            if given:
                problem = f"takes 0 positional arguments but {given} {'was' if given == 1 else 'were'} given"
                detail = "; pass every argument by keyword"
            elif missing:
                problem = f"missing {len(missing)} required keyword-only argument{'s' if len(missing) > 1 else ''}"
                detail = ": " + ", ".join(f"`{k}`" for k in missing)
        elif info.max_args is not None and not keywords:
            if given > info.max_args:
                problem = f"takes {info.max_args} positional arguments but {given} were given"
            elif given < info.min_args:
                short = info.min_args - given
                problem = f"missing {short} required positional argument{'s' if short > 1 else ''}"
        if problem is None or self._expected(call, "TypeError"):
            return problem is not None
        hint = CALL_HINTS.get(info.name) or ", ".join(f"{k}=..." for k in info.keyword_only)
        self.report(
            call,
            f"`{info.name}` is called with the wrong arguments. It takes `({hint})`, and this call raises "
            f"`TypeError: {info.name}() {problem}`{detail}",
        )
        return True

    def _check_names_argument(self, info: PolicyInfo, arg: cst.Arg) -> None:
        value = arg.value
        held = self.ctx.values.single(value)  # the list or tuple literal, where it is spelled
        literal = held.node if held is not None and held.kind in ("list", "tuple") else None
        if not isinstance(literal, (cst.List, cst.Tuple)) or self._expected(value, "TypeError"):
            return
        if isinstance(literal, cst.List):
            effect = "a list raises `TypeError: unhashable type: 'list'` when the policy is built"
        else:
            effect = f"a tuple is taken as a single name, {_TUPLE_EFFECT[info.name]}"
        self.report(
            value,
            f"`{info.name}` takes the checkpoint names as separate arguments (`*names`). {effect[0].upper()}"
            f"{effect[1:]}; pass the names themselves",
            fix=self._unpack_fix(arg, literal),
        )

    def _unpack_fix(self, arg: cst.Arg, literal: cst.List | cst.Tuple) -> FixSpec | None:
        applicability = Applicability.SAFE if isinstance(literal, cst.List) else Applicability.UNSAFE
        if arg.value is not literal:  # a name bound to the list or tuple
            spelled = f"*{self.ctx.code(arg.value)}"
        elif any(isinstance(element, cst.StarredElement) for element in literal.elements):
            return None
        else:
            spelled = ", ".join(self.ctx.code(element.value) for element in literal.elements)
        # The argument's span covers a tuple's parentheses (the tuple's own span does not).
        return FixSpec(f"Pass `{spelled}`", [(arg, spelled)], applicability)

    def _check_offload(self, value: cst.BaseExpression) -> None:
        held = self.ctx.values.single(value)  # a factory's call: a called policy
        info = policy_info(held.qname) if held is not None and held.kind == "policy" else None
        if info is None or not info.offloads or self._expected(value, "ValueError"):
            return
        self.report(
            value,
            f"`save_from_both_policies` needs policies that return booleans, but `{info.name}` offloads. The "
            "first grad/vjp raises `ValueError: The return value of the policies should be a boolean`; write a "
            "custom policy instead",
        )

    def _report_unknown(self, node: cst.CSTNode, name: str, spelled: cst.CSTNode) -> None:
        if self._expected(node, "AttributeError"):
            return
        close = difflib.get_close_matches(name, sorted(POLICIES), n=1, cutoff=0.6)
        fix = None
        if close:
            new = close[0] if isinstance(spelled, cst.Name) else _requote(spelled, close[0])
            fix = FixSpec(f"Use `{close[0]}`", [(spelled, new)], Applicability.UNSAFE)
        self.report(
            node,
            f"`jax.checkpoint_policies` has no `{name}`"
            + (f"; did you mean `{close[0]}`?" if close else ".")
            + f" Evaluating it raises `AttributeError: 'types.SimpleNamespace' object has no attribute '{name}'`",
            fix=fix,
        )

    # --- helpers ------------------------------------------------------------------------------

    def _expected(self, node: cst.CSTNode, error: str) -> bool:
        return guards.expects_error(self.ctx.model, node, frozenset({error}))

    def _probed_and_assigned(self) -> tuple[set[str], set[str]]:
        """Names tested with ``hasattr``/``getattr(..., default)`` (feature detection of newer JAX)
        and names assigned into the namespace (a project's own policies)."""
        probed: set[str] = set()
        for call in self.ctx.model.calls:
            if self.ctx.qualified_name(call.func) in ("builtins.hasattr", "builtins.getattr") and len(call.args) >= 2:
                if len(call.args) == 3 or self.ctx.qualified_name(call.func) == "builtins.hasattr":
                    name = _literal_name(self.ctx, call.args)
                    if name is not None:
                        probed.add(name)
        assigned = {
            attribute.attr.value
            for attribute in self.ctx.model.attributes
            if isinstance(self.ctx.model.parent(attribute), (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del))
        }
        return probed, assigned


def _uncalled_message(code: str, infos: Sequence[PolicyInfo], where: str) -> str:
    names = list(dict.fromkeys(i.name for i in infos))  # a loop over two factories: either
    only = infos[0] if len(names) == 1 else None
    hint = (CALL_HINTS.get(only.name) or ", ".join(f"{k}=..." for k in only.keyword_only)) if only else ""
    return (
        f"`{code}` is a policy factory used uncalled {where}. JAX accepts it when wrapping, and the first "
        f"grad/vjp calls it as a policy and raises `TypeError: {' / '.join(names)}() got an unexpected keyword "
        f"argument ...`; call it: `{code}({hint or repr('name') + ', ...'})`"
    )


def _literal_name(ctx: LintContext, args: Sequence[cst.Arg]) -> str | None:
    """``name`` in ``getattr(<policy namespace>, 'name', ...)``."""
    namespace, name = args[0].value, args[1].value
    if not is_policy_namespace(ctx.qualified_name(namespace)) or not isinstance(name, cst.SimpleString):
        return None
    value = name.evaluated_value
    return value if isinstance(value, str) else None


def _requote(string: cst.CSTNode, text: str) -> str:
    assert isinstance(string, cst.SimpleString)
    return f"{string.prefix}{string.quote}{text}{string.quote}"


def _string_items(values: Values, value: cst.BaseExpression) -> list[str] | None:
    """The strings of the list, tuple or set literal ``value`` certainly holds (``NAMES = ["q",
    "k"]``, never mutated) when each is a known string; None for anything else."""
    elements = values.elements(value)
    items = [v.literal for v in elements or () if v.kind == "str" and isinstance(v.literal, str)]
    return items if elements is not None and len(items) == len(elements) else None


def _uncalled_lookups(model: SemanticModel) -> list[cst.BaseExpression]:
    """``table[key]`` and ``table.get(key)`` whose result is not called right there (from the
    model's lists: a walk of the whole tree cost more than the rest of the rule)."""
    found: list[cst.BaseExpression] = []
    for node in (*model.subscripts, *model.calls):
        parent = model.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            continue
        if isinstance(node, cst.Subscript):
            found.append(node.value)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            found.append(node.func.value)
    return found


def _table(model: SemanticModel, expr: cst.BaseExpression) -> cst.Dict | cst.Call | None:
    """The dict literal or ``dict(...)`` call ``expr`` is, or a name bound once to one."""
    if isinstance(expr, cst.Name):
        value = model.assigned_value(expr)
        expr = value if value is not None else expr
    if isinstance(expr, cst.Dict):
        return expr
    if isinstance(expr, cst.Call) and model.qualified_name(expr.func) == "builtins.dict":
        return expr
    return None


def _module_tables(model: SemanticModel) -> list[tuple[str, cst.Dict | cst.Call]]:
    """The tables bound once to a module-level name (``POLICIES = {"dots": cp.dots_saveable}``)."""
    found = []
    for name, bindings in model.module_scope.bindings.items():
        value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        table = _table(model, value) if isinstance(value, (cst.Dict, cst.Call)) else None
        if table is not None:
            found.append((name, table))
    return found


def _table_values(table: cst.Dict | cst.Call) -> list[cst.BaseExpression]:
    if isinstance(table, cst.Dict):
        return [e.value for e in table.elements if isinstance(e, cst.DictElement)]
    return [a.value for a in table.args if a.keyword is not None]
