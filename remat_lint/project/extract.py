"""A module's summary (``summary.ModuleSummary``) extracted from its semantic model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from remat_lint.analysis.bodies import Bodies, positional_params
from remat_lint.analysis.control_flow import control_uses, is_array_like, is_flag
from remat_lint.analysis.differentiation import pullback_deferred
from remat_lint.analysis.last_stage import tail_calls
from remat_lint.analysis.module_fields import construction_arity, copies, in_annotation, may_construct, own_fields
from remat_lint.analysis.semantic import Binding, SemanticModel, dotted_import_name, leftmost_name
from remat_lint.analysis.smoke_tests import in_smoke_test
from remat_lint.analysis.tracing import calls_of
from remat_lint.analysis.value import literal_value
from remat_lint.analysis.values import Possible, Value, Values
from remat_lint.apis import linen
from remat_lint.project.modules import LIBRARIES, LOCAL, Ref
from remat_lint.project.summary import (
    ANNOTATION,
    OPAQUE,
    ConfigField,
    Constant,
    Constants,
    Differentiated,
    ImportedCall,
    ModuleSummary,
    Param,
    Signature,
    TableEntry,
    TailCall,
)

if TYPE_CHECKING:
    from remat_lint.analysis.loops import Loops
    from remat_lint.engine.context import LintContext


def summarize(ctx: LintContext) -> ModuleSummary:
    model, loops, bodies = ctx.model, ctx.loops, ctx.bodies
    summary = ModuleSummary(differentiated=_differentiated(ctx), tail_calls=_tail_calls(ctx))
    summary.imported_calls = _imported_calls(ctx)
    values = ctx.values.deferred_imports
    for name, bindings in model.module_scope.bindings.items():
        if len(bindings) == 1 and bindings[0].kind == "import":
            ref = _import_ref(bindings[0].node, name)
            if ref is not None:
                summary.imports[name] = ref
        elif bindings:
            summary.defines.add(name)
        if len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].value is not None:
            constants = plain(values.possible(bindings[0].value))
            if constants is not None:
                summary.constants[name] = constants
            entries = values.entries(bindings[0].value) if isinstance(bindings[0].value, cst.Dict) else None
            if entries is not None and not values.mutated(name):
                summary.tables[name] = tuple(
                    TableEntry(_plain_key(key), plain(values.possible(value))) for key, value in entries
                )
    summary.changed_imports = {name for name in summary.imports if values.mutated(name)}
    summary.star_imports = [
        (len(node.relative), dotted_import_name(node.module) if node.module is not None else "")
        for node in model.imports  # Python allows them at module level only
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar)
    ]
    summary.keyword_values = _keyword_values(model, [c for c in model.calls if may_construct(model, c)])
    summary.copied_values = _keyword_values(model, [c for c in model.calls if copies(model, c)])
    summary.imported_uses = _imported_uses(model)
    summary.written_fields = {
        a.attr.value for a in model.attributes if isinstance(model.parent(a), (cst.AssignTarget, cst.AugAssign))
    }
    calls: dict[str, set[Ref]] = {}
    for call in model.calls:
        ref = ref_of(model, call.func)
        caller = _top_level_definition(model, call) if ref is not None else None
        if caller is not None and ref is not None:
            calls.setdefault(caller, set()).add(ref)
    summary.calls = {name: sorted(refs) for name, refs in calls.items()}
    summary.loop_bodies = _loop_body_refs(model, loops)
    for statement in model.module.body:
        if not isinstance(statement, cst.ClassDef):
            continue
        summary.bases[statement.name.value] = [ref for base in statement.bases if (ref := ref_of(model, base.value))]
        signature = _call_signature(ctx.values, bodies, statement)
        if signature is not None:
            summary.signatures[statement.name.value] = signature
        declared = values.config.fields(statement)
        if declared:
            positions = own_fields(model, statement)
            summary.config_fields[statement.name.value] = {
                name: ConfigField(plain(default), plain(bounded), positions.index(name) if name in positions else -1)
                for name, (default, bounded) in declared.items()
            }
            summary.constructed[statement.name.value] = construction_arity(model, statement)
    return summary


def _loop_body_refs(model: SemanticModel, loops: Loops) -> list[Ref]:
    """What loop bodies run, named as other modules name it: the body itself (``scan(step, ...)``)
    or, for a lambda or a nested def, the module-level functions it calls."""
    found: set[Ref] = set()
    for body in loops.bodies:
        ref = ref_of(model, body.expr) if body.kind == "loop" else None
        function = body.denoted.function if body.kind == "loop" and ref is None else None
        if ref is not None:
            found.add(ref)
        elif function is not None:
            inside = (call for call in model.calls if any(a is function for a in model.ancestors(call)))
            found.update(ref for call in inside if (ref := ref_of(model, call.func)) is not None)
    return sorted(found)


def _plain_key(key: Value | None) -> Constant | None:
    """A table's key as plain data; None (unknown) when it is not plain (``(1, f)``: a tuple
    holding a function)."""
    known = plain((key,)) if key is not None else None
    return known[0] if known else None


def plain(values: Possible | None) -> Constants | None:
    """Values as plain data, when each is a scalar, a policy, another module's name or a tuple or
    list of literal strings."""
    if values is None:
        return None
    found: list[Constant] = []
    for v in values:
        if v.kind not in ("tuple", "list"):
            found.append(Constant(v.kind, v.literal, v.qname))
            continue
        strings = [item.literal for item in v.items or () if item.kind == "str"]
        if v.items is None or len(strings) != len(v.items) or not all(isinstance(s, str) for s in strings):
            return None
        found.append(Constant(v.kind, strings=tuple(str(s) for s in strings)))
    return tuple(found)


def _differentiated(ctx: LintContext) -> list[Differentiated]:
    """What of other modules this one differentiates where a checkpoint of it would cost."""
    if ctx.is_test_file:
        return []  # tests differentiate checkpoints on purpose (gradient equality)
    model, found = ctx.model, []
    for d in ctx.differentiations.all:
        if not isinstance(d.node, cst.Call) or d.denoted.sites or d.denoted.wrapped:
            continue
        if pullback_deferred(model, d) or in_smoke_test(model, d.node) or ctx.loops.in_body(d.node):
            continue
        if not ctx.differentiations.first_order(d, ctx.bodies):
            continue
        place = (ctx.code(d.node.func), d.api.qname, d.api.kind, ctx.positions[d.node].start.line)
        function = d.denoted.function
        ref = ref_of(model, d.target) if function is None else None
        if ref is not None and ref[0] != LOCAL:
            found.append(Differentiated(ref, *place))
        elif isinstance(function, cst.FunctionDef) and d.api.reverse:  # its last stage may be in another module
            for call, after in tail_calls(model, ctx.callables, function):
                ref = ref_of(model, call.func)
                if ref is not None:  # of this module too: a helper that ends with another module's call
                    found.append(Differentiated(ref, *place, via=function.name.value, after=tuple(after)))
    return found


def _tail_calls(ctx: LintContext) -> dict[str, list[TailCall]]:
    """What each undecorated module-level function ends with from another module of the project
    (``return head(params, h).mean()``), or through a plain function of this one (``return
    _inner(params, batch)``, which may end with one): a grad of the function may reach a last stage
    there."""
    if ctx.is_test_file:
        return {}  # their grads are left out too (``_differentiated``)
    model, found = ctx.model, {}
    for function in model.module.body:
        if not isinstance(function, cst.FunctionDef) or function.decorators:
            continue
        calls = [
            TailCall(ref, tuple(after), _only_returns(function, call))
            for call, after in tail_calls(model, ctx.callables, function)
            if (ref := ref_of(model, call.func)) is not None and (ref[0] == LOCAL or _from_project(ref))
        ]
        if calls:
            found[function.name.value] = calls
    return found


def _only_returns(function: cst.FunctionDef, call: cst.Call) -> bool:
    """``function`` is ``return call(<names>)`` and nothing else (a docstring aside)."""
    lines = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else [function.body]
    first = lines[0] if lines else None
    if (
        isinstance(first, cst.SimpleStatementLine)
        and isinstance(first.body[0], cst.Expr)
        and isinstance(first.body[0].value, cst.SimpleString)
    ):
        lines = lines[1:]
    if (
        len(lines) != 1
        or not isinstance(lines[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite))
        or len(lines[0].body) != 1
    ):
        return False
    returned = lines[0].body[0]
    return (
        isinstance(returned, cst.Return)
        and returned.value is call
        and all(isinstance(a.value, cst.Name) and not a.star for a in call.args)
    )


def _from_project(ref: Ref) -> bool:
    """``ref`` may name another module of the project (not this one's, not a known library's)."""
    return ref[0] != LOCAL and not (ref[0] == 0 and ref[1].split(".", 1)[0] in LIBRARIES)


def _imported_calls(ctx: LintContext) -> list[ImportedCall]:
    """The calls of names imported from the project's other modules (``scale(x, twice=True)``)
    and of the instances they build (``RematBlock()(x, deterministic=True)``), for the rules that
    judge a call against a wrap in another module (REM012, REM016)."""
    if ctx.is_test_file:
        return []  # tests call wrapped functions wrongly on purpose (``pytest.raises``)
    model, found = ctx.model, []
    for call in model.calls:
        ref = ref_of(model, call.func)
        if ref is None or not _from_project(ref):
            continue
        for instance, use in ((False, call), *((True, c) for c in calls_of(model, call))):
            if any(a.star for a in use.args) or in_smoke_test(model, use):
                continue
            keywords = tuple(a.keyword.value for a in use.args if a.keyword is not None)
            # No row: positions cost more than the parse on large statements (measured on jax+flax).
            found.append(ImportedCall(ref, instance, ctx.code(use.func), len(use.args) - len(keywords), keywords))
    return found


def _keyword_values(model: SemanticModel, calls: list[cst.Call]) -> dict[str, Constants | None]:
    """Every value ``calls`` pass by each keyword (None once one is unknown). Only a
    literal or a module constant bound once to one is read: anything else is unknown (evaluating
    every argument of every call cost more than the semantic model on maxtext's largest files)."""
    found: dict[str, Constants | None] = {}
    for call in calls:
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is None or (keyword in found and found[keyword] is None):
                continue
            held = _literal(model, arg.value)
            known = found.get(keyword, ())
            found[keyword] = None if held is None or known is None else tuple(dict.fromkeys((*known, *held)))
    return found


def _literal(model: SemanticModel, expr: cst.BaseExpression) -> Constants | None:
    """``expr`` as a literal, or the literal a module-level name bound once holds (``DROPOUT``)."""
    if isinstance(expr, cst.Name):
        binding = _only_binding(model, expr)
        if binding is not None and binding.kind == "assign" and binding.value is not None:
            expr = binding.value
    value = literal_value(expr)
    return plain((value,)) if value is not None else None


def _imported_uses(model: SemanticModel) -> set[tuple[Ref, int]]:
    """Each use of a name imported from another module of the project (in any scope): a call
    without ``*``/``**`` with its positional arguments' count, or ``OPAQUE``; an attribute chain
    (``layers.Block``) is a use of each name it spells."""
    imported = _project_imports(model)
    refs: dict[tuple[int, str], Ref | None] = {}  # per import statement and name
    found: set[tuple[Ref, int]] = set()
    for name in model.names:
        if name.value not in imported:
            continue  # not a name any import of the project binds: no binding to resolve
        binding = _only_binding(model, name)
        if binding is None or binding.kind != "import":
            continue
        key = (id(binding.node), name.value)
        ref = refs[key] if key in refs else refs.setdefault(key, _import_ref(binding.node, name.value))
        if ref is None or not _from_project(ref):
            continue
        if in_annotation(model, name):
            found.add((ref, ANNOTATION))
            continue
        use: cst.CSTNode = name
        while isinstance(parent := model.parent(use), cst.Attribute) and parent.value is use:
            found.add((ref, OPAQUE))  # ``layers`` of ``layers.Block(...)``, ``Block`` of ``Block.make(...)``
            use, ref = parent, (ref[0], f"{ref[1]}.{parent.attr.value}")
        parent = model.parent(use)
        plain_call = isinstance(parent, cst.Call) and parent.func is use and not any(a.star for a in parent.args)
        found.add((ref, sum(a.keyword is None for a in parent.args) if plain_call else OPAQUE))  # type: ignore[union-attr]  # plain_call: a Call
    return found


def _only_binding(model: SemanticModel, name: cst.Name) -> Binding | None:
    """The one binding of the scope ``name`` resolves to (LEGB), when that scope binds it once:
    cheaper than following the bindings that reach it, and the same answer for a name bound once."""
    scope = model.scope_of_name.get(id(name))
    owner = scope.owner_of(name.value) if scope is not None else None
    bindings = owner.bindings.get(name.value, []) if owner is not None else []
    return bindings[0] if len(bindings) == 1 else None


def _project_imports(model: SemanticModel) -> set[str]:
    """The local names that an import of another module of the project binds, in any scope."""
    names = set()
    for node in model.imports:
        aliases = node.names if not isinstance(node.names, cst.ImportStar) else ()
        for alias in aliases:
            local = leftmost_name(
                alias.asname.name if alias.asname is not None else alias.name
            )  # ``import a.b``: ``a``
            ref = _import_ref(node, local.value) if local is not None else None
            if local is not None and ref is not None and _from_project(ref):
                names.add(local.value)
    return names


def _call_signature(values: Values, bodies: Bodies, cls: cst.ClassDef) -> Signature | None:
    """The ``__call__`` of ``cls`` (the method Flax's ``nn.remat`` checkpoints)."""
    model = values.model
    method = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__call__"), None)
    if method is None or any(model.qualified_name(d.decorator) not in linen.COMPACT_NAMES for d in method.decorators):
        return None
    positional = positional_params(method)[1:]  # after self
    nodes = bodies.nodes(method)
    flags = [is_flag(values, nodes, p) for p in positional]
    tested = {use.param.name.value for use in control_uses(values, nodes, {p.name.value: p for p in positional})}
    params = tuple(
        Param(p.name.value, flag, is_array_like(p) and not flag, p.name.value in tested)
        for p, flag in zip(positional, flags, strict=True)
    )
    return Signature(params, isinstance(method.params.star_arg, cst.Param))


def ref_of(model: SemanticModel, expr: cst.CSTNode) -> Ref | None:
    """How ``expr`` names a module-level thing: an import (``losses.loss_fn``, ``loss_fn`` after
    ``from .losses import loss_fn``) or a top-level name of this module; None otherwise."""
    attrs: list[str] = []
    root = expr
    while isinstance(root, cst.Attribute):
        attrs.append(root.attr.value)
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    scope = model.scope_of_name.get(id(root), model.module_scope)
    if scope.owner_of(root.value) is not model.module_scope:
        return None
    bindings = model.module_scope.bindings[root.value]
    if len(bindings) != 1:
        return None
    suffix = "".join(f".{attr}" for attr in reversed(attrs))
    if bindings[0].kind == "import":
        ref = _import_ref(bindings[0].node, root.value)
        return (ref[0], ref[1] + suffix) if ref is not None else None
    return (LOCAL, root.value + suffix) if bindings[0].kind in ("def", "class", "assign") else None


def _import_ref(node: cst.CSTNode, local: str) -> Ref | None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_import_name(alias.name)
            asname = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else None
            )
            if asname == local or (asname is None and full.split(".", 1)[0] == local):
                return (0, full if asname else local)
        return None
    if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
        return None
    base = dotted_import_name(node.module) if node.module is not None else ""
    for alias in node.names:
        imported = dotted_import_name(alias.name)
        asname = (
            alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else None
        )
        if (asname or imported) == local:
            return (len(node.relative), f"{base}.{imported}" if base else imported)
    return None


def _top_level_definition(model: SemanticModel, node: cst.CSTNode) -> str | None:
    """The name of the module-level def or class that ``node`` is in: a method's calls count as
    its class's (a Transformer whose ``setup`` builds a Decoder reaches what the Decoder does)."""
    top = next((a for a in model.ancestors(node) if model.parent(a) is model.module), None)
    return top.name.value if isinstance(top, (cst.FunctionDef, cst.ClassDef)) else None


def top_level_function(model: SemanticModel, node: cst.CSTNode) -> str | None:
    """The name of the module-level def that ``node`` is in."""
    outermost = None
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef):
            outermost = ancestor
        elif isinstance(ancestor, cst.ClassDef):
            outermost = None  # a method: not a module-level function
    return outermost.name.value if outermost is not None and model.parent(outermost) is model.module else None
