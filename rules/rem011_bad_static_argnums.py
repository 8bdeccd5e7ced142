from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.modules import LOCAL
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis import bodies, control_flow, static_args, tracing
    from remat_lint.analysis.bodies import CheckpointedFunction
    from remat_lint.analysis.semantic import SemanticModel
    from remat_lint.analysis.sites import RematSite
    from remat_lint.analysis.static_args import Selection, StaticArgnums
    from remat_lint.project import extract
    from remat_lint.project.model import Project, ProjectModule
    from remat_lint.project.summary import Signature
else:  # imported when a file is checked: the project phase (check_project) needs no parse
    cst = LazyModule("libcst")
    bodies = LazyModule("remat_lint.analysis.bodies")
    control_flow = LazyModule("remat_lint.analysis.control_flow")
    static_args = LazyModule("remat_lint.analysis.static_args")
    tracing = LazyModule("remat_lint.analysis.tracing")
    extract = LazyModule("remat_lint.project.extract")

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_LIST = re.compile(r"\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)+\s*")


class BadStaticArgnums(Rule):
    """
    ## What it does
    Flags `static_argnums` that fails or selects the wrong argument under the convention of the
    API it is given to.

    - a list (`static_argnums=[1]`) on `jax.checkpoint`, `jax.remat`, `hk.remat`, `nnx.remat`
      and `nn.remat`; an int on `nn_partitioning.remat`;
    - an index beyond the positional parameters of the checkpointed function;
    - a negative index on Flax `nn.remat` (Flax shifts it by one) or `nn_partitioning.remat`
      (ignored), and index 0 on `nn.remat` (the Module itself);
    - the Flax off-by-one: `nn.remat`/`nn.checkpoint` count `self` as argument 0 and
      `nn_partitioning.remat` does not; an index that selects an array argument while the flag
      next to it (a `bool`, or a parameter used only as a flag; never judged by its name) drives Python control
      flow and stays traced, or indices that select only flags under the other convention while a
      flag they leave out fails; the same off-by-one on a method checkpointed by `nnx.remat` or
      `jax.checkpoint` (`@nnx.remat(static_argnums=(1,))` on `__call__(self, x, train)`), where
      `self` is argument 0 too;
    - a string (a literal or a constant) passed, at a call in the module, to a parameter that `static_argnums`
      leaves traced (`jax.checkpoint(f)(x, "train")`; `nn.remat(Layer, static_argnums=(2,))`
      called as `layer(x, True, "train")`), with `jax.checkpoint`, `jax.remat`, Flax and `nnx.remat`;
    - a comment naming the parameters (`static_argnums=(2,)  # deterministic`) that the indices
      do not select, or more parameters than the indices select (`(2,)  # causal, use_alibi`).

    A Module class imported from another module of the project (`nn.remat(Block, ...)` with
    `from .layers import Block`) is judged against that class's `__call__` (the index past its
    last argument, and the off-by-one); the message says where the class is defined.

    Where it is reported: at the wrap, in the module that writes it, also when the Module class
    comes from another module and only that module is linted; JSON and SARIF carry the class's
    definition as a related location.

    ## Why is this bad?
    Measured on jax 0.10.2 / flax 0.12.8:
    - a list is accepted when wrapping; every call raises `TypeError: the static_argnums argument
      to jax.checkpoint / jax.remat must be an int, tuple of ints or, bool`.
      `nn_partitioning.remat` calls `sorted(static_argnums)`: an int raises `TypeError: 'int'
      object is not iterable` at `init`.
    - an index past the last argument raises `ValueError` at every call (`nn.remat` shows it
      shifted by one); `nn_partitioning.remat` silently ignores it.
    - `nn.remat` subtracts 1 for `self`, then adds 2 for its own variable and RNG groups: index 0
      makes its RNG groups static, -1 its variable groups, -2 the last argument. Nothing the user
      meant becomes static. `nn_partitioning.remat` ignores negative indices.
    - a string given to a traced parameter raises `TypeError: Argument 'train' of type <class
      'str'> is not a valid JAX type` at the call (`eqx.filter_checkpoint` makes non-arrays static).
    - with the wrong index the flag stays traced and its `if` raises `TracerBoolConversionError`,
      while an array argument is made static (hashed, and one compilation per value).

    ## Example
    ```python
    import flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic: bool):
            return x if deterministic else nn.Dropout(0.1)(x, deterministic=False)

    RematBlock = nn.remat(Block, static_argnums=(1,))
    ```

    ## Use instead
    ```python
    RematBlock = nn.remat(Block, static_argnums=(2,))  # self is 0 for nn.remat
    ```
    (`nn_partitioning.remat(Block, static_argnums=(1,))` for the partitioning variant.)

    ## Fix safety
    Safe for a list literal (becomes a tuple) and an int on `nn_partitioning.remat` (becomes a
    one-element tuple): the original always fails. Indices get no fix: which argument was meant
    is the author's call.

    ## References
    - [`jax.checkpoint`](https://docs.jax.dev/en/latest/_autosummary/jax.checkpoint.html)
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [google/flax#3946: static_argnums in `nn.remat` counts `self`](https://github.com/google/flax/issues/3946)
    - [google/flax PR #2457: how Flax maps `static_argnums`](https://github.com/google/flax/pull/2457)
    """

    code = "REM011"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("TracerBoolConversionError", ""),
            ("TypeError", "the static_argnums argument"),
            ("TypeError", "object is not iterable"),
            ("ValueError", "the static_argnums argument"),
            ("TypeError", "is not a valid JAX type"),
        ),
    )
    name = "bad-static-argnums"
    severity = Severity.ERROR
    project_wide = True  # the checkpointed class may be imported from another module
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import jax\ng = jax.checkpoint(f, static_argnums=(1,))",
        "import jax\ndef f(x, n):\n    return x\ng = jax.checkpoint(f, static_argnums=-1)",
        "import flax.linen.partitioning as nn_partitioning\nimport flax.linen as nn\nclass Block(nn.Module):\n"
        "    def __call__(self, x, mask, deterministic: bool, decode: bool):\n        return x if deterministic else mask\n"
        "B = nn_partitioning.remat(Block, static_argnums=(2, 3))\nC = nn.remat(Block, static_argnums=(3, 4))",
        "import flax.linen as nn\nB = nn.remat(Block, static_argnums=4)",
        "import functools\nimport flax.linen as nn\n@functools.partial(nn.remat, static_argnums=(3,))\n"
        "def remat_call(self, x, attn_mask, deterministic):\n    return x if deterministic else attn_mask",
        "import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block, static_argnums=[2, 3])",
        "import jax\ndef f(x, *rest):\n    return x\ng = jax.checkpoint(f, static_argnums=(3,))",
        "import jax\ndef f(x, training):\n    return x if training else -x\ng = jax.checkpoint(f, static_argnums=(1,))  # training",
    ]
    INVALID = [
        Invalid(
            "import jax\ng = jax.checkpoint(f, static_argnums=[1, 2])",
            fixed="import jax\ng = jax.checkpoint(f, static_argnums=(1, 2))",
        ),
        Invalid(
            "import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block, static_argnums=4)",
            fixed="import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block, static_argnums=(4,))",
        ),
        Invalid("import jax\ndef f(x, training):\n    return x\ng = jax.checkpoint(f, static_argnums=(2,))"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, static_argnums=(-1,))"),
        Invalid("import flax.linen as nn\nB = nn.remat(Block, static_argnums=0)"),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, deterministic: bool):\n"
            "        return x if deterministic else -x\nR = nn.remat(Block, static_argnums=(1,))"
        ),
        Invalid(
            "import flax.linen.partitioning as nn_partitioning\nimport flax.linen as nn\nclass Block(nn.Module):\n"
            "    def __call__(self, x, mask, deterministic: bool):\n        return x if deterministic else mask\n"
            "R = nn_partitioning.remat(Block, static_argnums=(3,))"
        ),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    def __call__(self, x, mask, deterministic: bool):\n"
            "        return x * mask\nR = nn.remat(Block, static_argnums=(2,))  # deterministic"
        ),
    ]

    def check(self) -> None:
        functions: dict[int, list[CheckpointedFunction]] = {}
        for fn in self.ctx.bodies.functions:
            if fn.entry:
                functions.setdefault(id(fn.site), []).append(fn)
        for site in self.ctx.sites:
            written = static_args.static_argnums(site, self.ctx.values)
            if written.arg is None or site.has_star_args:
                continue
            problems = self._form(site, written)
            if written.indices is not None and not problems:
                problems = self._indices(site, written, functions.get(id(site), []))
                if not problems and id(site) not in functions:
                    self._imported_class(site, written)
            if problems:
                why = "; ".join(dict.fromkeys(problems))
                self.report(
                    site.node,
                    f"`static_argnums={self.ctx.code(written.arg.value)}` fails or selects the wrong argument in "
                    f"`{site.api.display}`. {why[0].upper()}{why[1:]}",
                    fix=self._fix(site, written),
                )
        for fns in functions.values():
            for fn in fns:
                self._traced_strings(fn)

    def _traced_strings(self, fn: CheckpointedFunction) -> None:
        """A string (a literal, or a name that certainly holds one) that a call in this module passes
        to a traced parameter: JAX (and ``nnx.remat``) rejects it at that call. Equinox makes
        non-arrays static; Haiku is not checked."""
        if fn.site.api.family not in ("jax", "flax", "nnx"):
            return
        traced = tracing.traced_params(self.ctx.values, fn) or {}
        for name, value in tracing.passed_arguments(self.ctx.values, fn):
            held = self.ctx.values.possible(value) if name in traced else None
            if held and all(v.kind == "str" for v in held):
                self.report(
                    value,
                    f"`{self.ctx.code(value)}` is passed to `{name}`, which `{fn.site.api.display}` traces (not in "
                    f"`static_argnums`). The call raises `TypeError: Argument ... of type <class 'str'> is not a valid JAX "
                    f"type`; make `{name}` static (`static_argnums`), counting as `{fn.site.api.display}` does",
                )

    def _imported_class(self, site: RematSite, written: StaticArgnums) -> None:
        """``nn.remat(Block, ...)`` of a class imported from another module: a candidate that the
        project phase judges against the class's ``__call__`` (check_project)."""
        ref = (
            extract.ref_of(self.ctx.model, site.target)
            if site.target is not None and static_args.convention(site) != "jax"
            else None
        )
        if ref is not None and ref[0] != LOCAL and written.arg is not None:
            data = {
                "ref": ref,
                "indices": written.indices,
                "convention": static_args.convention(site),
                "api": site.api.display,
                "written": self.ctx.code(written.arg.value),
            }
            self.candidate(site.node, [ref[1].rsplit(".", 1)[-1]], data)

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Judge the candidates against the imported class's ``__call__`` signature."""
        kept = []
        for candidate in candidates:
            finding, data = candidate.finding, candidate.values
            found = project.resolve(module, tuple(data["ref"]))
            signature = project.call_signature(found) if found else None
            if found is None or signature is None or signature.star_args:
                continue
            where = os.path.relpath(project.modules[found[0]].path, os.path.dirname(module.path))
            problems = _imported_problems(
                signature, data["indices"], data["convention"], data["api"], f"{found[1]}.__call__"
            )
            if problems:
                why = "; ".join(dict.fromkeys(problems))
                finding.message = (
                    f"`static_argnums={data['written']}` fails or selects the wrong argument in `{data['api']}`. "
                    f"{why[0].upper()}{why[1:]} (`{found[1]}` is defined in {where})"
                )
                finding.data = {"class": found[1], "defined_in": where}
                finding.related = project.defined_here(found)
                kept.append(finding)
        return kept

    def _form(self, site: RematSite, written: StaticArgnums) -> list[str]:
        if written.form == "list" and static_args.convention(site) != "flax-no-self":
            return [
                "a list is accepted when wrapping, but every call raises `TypeError: the static_argnums argument to "
                "jax.checkpoint / jax.remat must be an int, tuple of ints or, bool`; use a tuple"
            ]
        if written.form == "int" and static_args.convention(site) == "flax-no-self":
            return [
                "`nn_partitioning.remat` calls `sorted(static_argnums)`, so an int makes `init` raise "
                "`TypeError: 'int' object is not iterable`; use a tuple"
            ]
        return []

    def _indices(self, site: RematSite, written: StaticArgnums, functions: list[CheckpointedFunction]) -> list[str]:
        assert written.indices is not None
        problems = []
        api = site.api.display
        for index in written.indices:
            problems.extend(self._without_body(site, index))
            for fn in functions:
                problem = self._selection(static_args.select(site, fn, index), fn, api)
                if problem is not None:
                    problems.append(problem)
        if not problems:
            for fn in functions:
                problems.extend(self._off_by_one(site, written.indices, fn))
                problems.extend(self._comment(site, written, fn))
        return problems

    def _without_body(self, site: RematSite, index: int) -> list[str]:
        """What an index means whatever the target: Flax's own mapping."""
        rule = static_args.convention(site)
        if rule == "flax-self" and index == 0:
            return [
                "index 0 is the Module (`self`), which Flax maps onto its internal RNG groups: no argument becomes "
                "static; the first argument after `self` is 1"
            ]
        if rule == "flax-self" and index == -1:
            return [
                "Flax shifts negative indices by one, so -1 makes its internal variable groups static, not the last "
                "argument (that is -2); use the positive index"
            ]
        if rule == "flax-self" and index < 0:
            return [
                f"Flax shifts negative indices by one, so {index} selects what {index + 1} would in "
                "`jax.checkpoint`; use the positive index"
            ]
        if rule == "flax-no-self" and index < 0:
            return [
                f"`{site.api.display}` matches indices against the argument positions 0, 1, ..., so the negative "
                f"index {index} is silently ignored and nothing becomes static"
            ]
        return []

    def _selection(self, selection: Selection, fn: CheckpointedFunction, api: str) -> str | None:
        if selection.issue != "out-of-range":
            return None
        name = _name(fn)
        count = len(fn.args) + (1 if static_args.convention(fn.site) == "flax-self" and fn.receiver is not None else 0)
        if static_args.convention(fn.site) == "flax-no-self":
            hint = ""
            if 0 < selection.index <= len(fn.args) and fn.receiver is not None:
                hint = (
                    f" (it does not count `self`: `{fn.args[selection.index - 1].name.value}` is {selection.index - 1})"
                )
            return (
                f"index {selection.index} is past the last argument of `{name}`{hint}: `{api}` silently ignores it, "
                "so nothing becomes static"
            )
        raised = (
            "Positional argument indices, e.g. for static_argnums, must have value greater than or equal to "
            "-len(args) ...`"
            if selection.index < 0
            else "the static_argnums argument ... can only take integer values ... less than len(args)`"
        )
        return (
            f"index {selection.index} is out of range: `{name}` takes {count} positional argument"
            f"{'s' if count != 1 else ''}{' counting `self`' if static_args.convention(fn.site) == 'flax-self' else ''}, so every "
            f"call raises `ValueError: {raised}"
        )

    def _off_by_one(self, site: RematSite, indices: tuple[int, ...], fn: CheckpointedFunction) -> list[str]:
        """A Flax index one off: it selects an array argument while the flag next to it (where the
        other Flax convention would point) drives Python control flow and stays traced."""
        rule = static_args.convention(site)
        if rule == "jax":
            if not _method_with_self(self.ctx.model, fn):
                return []
            rule = "flax-self"  # ``nnx.remat`` / ``jax.checkpoint`` on a method count ``self`` as 0 as well
        elif fn.receiver is None:
            return []
        traced = tracing.traced_params(self.ctx.values, fn) or {}
        shift = 1 if rule == "flax-self" else -1  # where the index points under the other convention
        problems = []
        for index in indices:
            selected = static_args.select(site, fn, index).param
            if selected is None or not control_flow.is_array_like(selected):
                continue
            position = fn.args.index(selected) + shift
            if not 0 <= position < len(fn.args):
                continue
            flag = fn.args[position]
            name = flag.name.value
            if name not in traced or not control_flow.is_flag(self.ctx.values, self.ctx.bodies.nodes(fn.node), flag):
                continue
            if not any(control_flow.control_uses(self.ctx.values, self.ctx.bodies.nodes(fn.node), {name: flag})):
                continue
            counting = "counts `self` as argument 0" if rule == "flax-self" else "does not count `self`"
            problems.append(
                f"`{site.api.display}` {counting}, so index {index} selects `{selected.name.value}`, not `{name}`; "
                f"`{name}` stays traced and its Python control flow raises `TracerBoolConversionError`; `{name}` is "
                f"index {index + shift}"
            )
        return problems or self._shifted_flags(site, indices, fn, traced, shift, counting_self=rule == "flax-self")

    def _shifted_flags(
        self,
        site: RematSite,
        indices: tuple[int, ...],
        fn: CheckpointedFunction,
        traced: dict[str, cst.Param],
        shift: int,
        counting_self: bool,
    ) -> list[str]:
        """The indices select flags only under the other convention (``(3, 4, 5)`` written for
        ``nn_partitioning.remat`` and given to ``nn.remat``), and a flag they leave out fails."""
        selected = [static_args.select(site, fn, index).param for index in indices]
        if not selected or any(p is None for p in selected):
            return []
        positions = [fn.args.index(p) + shift for p in selected]
        if not all(0 <= position < len(fn.args) for position in positions):
            return []
        meant = [fn.args[position] for position in positions]
        if not all(control_flow.is_flag(self.ctx.values, self.ctx.bodies.nodes(fn.node), p) for p in meant):
            return []
        left = [p for p in meant if p not in selected and p.name.value in traced]
        failing = [
            p
            for p in left
            if any(control_flow.control_uses(self.ctx.values, self.ctx.bodies.nodes(fn.node), {p.name.value: p}))
        ]
        if not failing:
            return []
        counting = "counts `self` as argument 0" if counting_self else "does not count `self`"
        names = ", ".join(f"`{p.name.value}`" for p in selected)  # type: ignore[union-attr]  # no parameter is None here (returned above)
        fixed = ", ".join(str(i + shift) for i in indices) + ("," if len(indices) == 1 else "")
        return [
            f"`{site.api.display}` {counting}, so these indices select {names}; `{failing[0].name.value}` stays "
            f"traced and its Python control flow raises `TracerBoolConversionError`; the flags are ({fixed})"
        ]

    def _comment(self, site: RematSite, written: StaticArgnums, fn: CheckpointedFunction) -> list[str]:
        """A comment that names the parameters the indices are meant to select."""
        comment = _trailing_comment(self.ctx, site, written.arg)  # type: ignore[arg-type]  # ``check`` skips a site without static_argnums
        if comment is None or written.indices is None:
            return []
        params = {p.name.value for p in bodies.positional_params(fn.node)}
        words = _WORD.findall(comment)
        if not words or len(words) < len(written.indices) or not set(words) <= params:
            return []
        if len(words) > len(written.indices) and ("self" in words or not _NAME_LIST.fullmatch(comment)):
            return []  # more names than indices only in a plain list of names (not ``0=self, 2=deterministic``)
        selected = [static_args.select(site, fn, i).param for i in written.indices]
        if any(p is None for p in selected) or {p.name.value for p in selected} == set(words):  # type: ignore[union-attr]  # ``any(p is None ...)`` returns first
            return []
        shown = ", ".join(f"{i} selects `{p.name.value}`" for i, p in zip(written.indices, selected, strict=True))  # type: ignore[union-attr]  # no parameter is None here (returned above)
        if len(words) > len(written.indices):
            left = ", ".join(f"`{w}`" for w in words if w not in {p.name.value for p in selected})  # type: ignore[union-attr]  # no parameter is None here (returned above)
            return [f"the comment names {', '.join(f'`{w}`' for w in words)}, but only {shown}: {left} stays traced"]
        counting = {
            "flax-self": f"`{site.api.display}` counts `self` as argument 0",
            "flax-no-self": f"`{site.api.display}` does not count `self`",
            "jax": f"`{site.api.display}` counts the positional arguments from 0",
        }[static_args.convention(site)]
        return [f"the comment names {', '.join(f'`{w}`' for w in words)}, but {counting}: {shown}"]

    def _fix(self, site: RematSite, written: StaticArgnums) -> FixSpec | None:
        value = written.arg.value  # type: ignore[union-attr]  # ``check`` skips a site without static_argnums
        if written.form == "list" and static_args.convention(site) != "flax-no-self" and isinstance(value, cst.List):
            items = [self.ctx.code(e.value) for e in value.elements]
            tuple_text = "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
            return FixSpec(f"Use the tuple `{tuple_text}`", [(value, tuple_text)])
        if written.form == "int" and static_args.convention(site) == "flax-no-self":
            tuple_text = f"({self.ctx.code(value)},)"
            return FixSpec(f"Use the tuple `{tuple_text}`", [(value, tuple_text)])
        return None


def _imported_problems(signature: Signature, indices: tuple[int, ...], rule: str, api: str, name: str) -> list[str]:
    """What ``_selection`` and ``_off_by_one`` find, on an imported class's plain signature."""
    params = signature.params
    offset = 1 if rule == "flax-self" else 0  # the index of params[0]
    problems = []
    for index in (i for i in indices if i >= 0):
        position = index - offset
        if position >= len(params) and rule == "flax-self":
            count = len(params) + 1
            problems.append(
                f"index {index} is out of range: `{name}` takes {count} positional arguments counting `self`, so every "
                "call raises `ValueError: the static_argnums argument ... can only take integer values ... less than "
                "len(args)`"
            )
        elif position >= len(params):
            hint = (
                f" (it does not count `self`: `{params[index - 1].name}` is {index - 1})"
                if 0 < index <= len(params)
                else ""
            )
            problems.append(
                f"index {index} is past the last argument of `{name}`{hint}: `{api}` silently ignores it, so nothing "
                "becomes static"
            )
    if problems:
        return problems
    selected = {index - offset for index in indices if 0 <= index - offset < len(params)}
    shift = 1 if rule == "flax-self" else -1
    counting = "counts `self` as argument 0" if rule == "flax-self" else "does not count `self`"
    for position in sorted(selected):
        flag = position + shift
        if not params[position].array_like or not 0 <= flag < len(params) or flag in selected:
            continue
        if params[flag].bool_like and params[flag].controls_flow:
            chosen, meant = params[position].name, params[flag].name
            problems.append(
                f"`{api}` {counting}, so index {position + offset} selects `{chosen}`, not `{meant}`; `{meant}` stays "
                f"traced and its Python control flow raises `TracerBoolConversionError`; `{meant}` is index {flag + offset}"
            )
    return problems


def _name(fn: CheckpointedFunction) -> str:
    return fn.node.name.value if isinstance(fn.node, cst.FunctionDef) else "the lambda"


def _trailing_comment(ctx, site: RematSite, arg: cst.Arg) -> str | None:  # type: ignore[no-untyped-def]  # ``ctx``: a LintContext (not imported here at run time)
    """The comment at the end of the line that holds ``static_argnums``: after its comma or the
    argument (multi-line calls), or after the statement or decorator when the call is one line."""
    for whitespace in (
        arg.comma.whitespace_after if isinstance(arg.comma, cst.Comma) else None,
        arg.whitespace_after_arg,
    ):
        if isinstance(whitespace, cst.ParenthesizedWhitespace):
            comment = whitespace.first_line.comment
            return _first_comment(comment.value) if comment is not None else None
    holder: cst.CSTNode | None = site.node
    while holder is not None and not isinstance(holder, (cst.SimpleStatementLine, cst.Decorator)):
        holder = ctx.model.parent(holder)
    if holder is None or "\n" in ctx.code(holder).strip("\n"):
        return None
    trailing = holder.trailing_whitespace
    return _first_comment(trailing.comment.value) if trailing.comment is not None else None


def _first_comment(text: str) -> str:
    """``# deterministic  # noqa: X`` -> `` deterministic  ``: later ``#`` parts are other comments."""
    return text.split("#")[1]


def _method_with_self(model: SemanticModel, fn: CheckpointedFunction) -> bool:
    """A method checkpointed by a JAX-convention API (``@nnx.remat`` on ``__call__``): its
    ``self`` is argument 0 of ``fn.args``, as in ``jax.checkpoint``."""
    return (
        isinstance(fn.node, cst.FunctionDef)
        and bodies.is_instance_method(model, fn.node)
        and bool(fn.args)
        and fn.args[0] is bodies.positional_params(fn.node)[0]
    )
