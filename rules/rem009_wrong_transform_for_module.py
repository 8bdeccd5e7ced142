from __future__ import annotations

from typing import TYPE_CHECKING

from remat_lint.apis import jax, linen
from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.project.modules import LOCAL
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.sites import RematSite
    from remat_lint.analysis.values import Value
    from remat_lint.project.model import Project, ProjectModule
else:
    # libcst and the analyses are imported where a file is checked: the project phase
    # (check_project), often all a warm run does, needs neither.
    cst = LazyModule("libcst")

_JAX_REMATS = frozenset({jax.CHECKPOINT, jax.REMAT})
# Keywords that mean the same to nn.remat as to jax.checkpoint whatever the target.
_PORTABLE_KEYWORDS = frozenset({"policy", "prevent_cse"})


class WrongTransformForModule(Rule):
    """
    ## What it does
    Flags `jax.checkpoint` / `jax.remat` applied to a Flax linen Module class or instance, or
    decorating a method of a linen Module. Flax Modules need the lifted transform `nn.remat`.
    The class may come from another module of the project (`from .layers import Block`): its
    base classes are followed there.

    ## Why is this bad?
    JAX transforms know nothing about Flax variables:
    - on a class, `jax.checkpoint(Block)` returns a plain function, not a Module class:
      instantiating it raises `TypeError` (the `Block` it returns "is not a valid JAX type")
      and it has no `init`/`apply`;
    - on an instance, the result has no `init`/`apply`, and calling it inside a parent Module
      raises `TypeError: Can't call __hash__ on modules that hold variables`;
    - on a method, JAX traces `self` as an array argument and `init` raises `TypeError: Cannot
      interpret value of type <class 'Block'> as an abstract array`. With `self` made static
      (`static_argnums=(0,)`) it is worse: `init` silently returns tracers as parameters and
      `apply` then raises `UnexpectedTracerError`.

    ## Example
    ```python
    import flax.linen as nn
    import jax

    class Block(nn.Module):
        @jax.checkpoint
        @nn.compact
        def __call__(self, x):
            return nn.Dense(64)(x)
    ```

    ## Use instead
    ```python
    import flax.linen as nn

    class Block(nn.Module):
        @nn.remat
        @nn.compact
        def __call__(self, x):
            return nn.Dense(64)(x)
    ```

    ## Fix safety
    Safe for a class or a method when no keyword other than `policy` / `prevent_cse` is given,
    the decorator is the outermost one (`nn.remat` must come before `nn.compact`) and the module
    already imports `flax.linen`: `jax.checkpoint` is replaced by `nn.remat`. The original always
    fails. `static_argnums` counts differently on a class, so it gets no fix, and neither do
    instances (the class would have to be found and transformed instead).

    ## References
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [Flax: lifted transformations](https://flax.readthedocs.io/en/latest/developer_notes/lift.html)
    """

    code = "REM009"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("TypeError", "Cannot interpret value of type"),
            ("TypeError", "is not a valid JAX type"),
            ("TypeError", "Can't call __hash__ on modules"),
            ("AttributeError", "object has no attribute 'init'"),
            ("UnexpectedTracerError", ""),
        ),
    )
    name = "wrong-transform-for-module"
    severity = Severity.ERROR
    project_wide = True  # the Module class may be imported from another module
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.remat\n    @nn.compact\n    def __call__(self, x):\n        return x",
        "import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @staticmethod\n    @jax.checkpoint\n"
        "    def attend(q, k):\n        return q @ k",
        "import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return jax.checkpoint(attention)(x, x)",
        "import jax\nclass Plain:\n    @jax.checkpoint\n    def __call__(self, x):\n        return x",
        "import jax\nimport haiku as hk\ny = jax.checkpoint(hk.Linear)",
        "import jax\nfrom flax import nnx\nclass Block(nnx.Module):\n    @jax.checkpoint\n    def __call__(self, x):\n        return x",
        "import jax\nblock = jax.checkpoint(make_block(cfg))",
    ]
    INVALID = [
        Invalid(
            "import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @jax.checkpoint\n    @nn.compact\n"
            "    def __call__(self, x):\n        return nn.Dense(4)(x)",
            fixed="import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @nn.remat\n    @nn.compact\n"
            "    def __call__(self, x):\n        return nn.Dense(4)(x)",
        ),
        Invalid(
            "import jax\nfrom flax import linen as nn\nclass Block(nn.Module):\n    pass\n"
            "Remat = jax.remat(Block, policy=jax.checkpoint_policies.dots_saveable)",
            fixed="import jax\nfrom flax import linen as nn\nclass Block(nn.Module):\n    pass\n"
            "Remat = nn.remat(Block, policy=jax.checkpoint_policies.dots_saveable)",
        ),
        Invalid(
            "import functools\nimport jax\nimport flax.linen as nn\nclass Block(nn.Module):\n"
            "    @functools.partial(jax.checkpoint, static_argnums=(0,))\n    @nn.compact\n    def __call__(self, x):\n        return x"
        ),
        Invalid("import jax\nimport flax.linen as nn\ny = jax.checkpoint(nn.Dense(4))(x)"),
        Invalid("import jax\nimport flax.linen as nn\nDense = jax.checkpoint(nn.Dense, static_argnums=(1,))"),
        Invalid("import jax\nfrom flax.linen import Module\n@jax.checkpoint\nclass Block(Module):\n    pass"),
        Invalid(
            "import jax\nimport flax.linen as nn\nclass M(nn.Module):\n    def setup(self):\n        self.mlp = nn.Dense(4)\n"
            "    def __call__(self, x):\n        return jax.checkpoint(self.mlp)(x)"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.bodies import is_instance_method
        from remat_lint.analysis.linen import is_linen_class, is_linen_classdef, linen_class_method, linen_constructor

        model, values = self.ctx.model, self.ctx.values
        for site in self.ctx.sites:
            if site.api.qname not in _JAX_REMATS or site.target is None:
                continue
            api, target = site.api.display, site.target
            if isinstance(target, cst.ClassDef) and is_linen_classdef(model, target):
                self._report_class(site, target.name.value)
            elif isinstance(target, cst.FunctionDef):
                owner = model.functions[id(target)].class_node
                if owner is not None and is_linen_classdef(model, owner) and is_instance_method(model, target):
                    self._report_method(site, f"{owner.name.value}.{target.name.value}")
            elif is_linen_class(values, target):
                self._report_class(site, self.ctx.code(target))
            elif linen_class_method(values, target) is not None:  # Block.__call__ = jax.checkpoint(Block.__call__)
                self._report_method(site, self.ctx.code(target), how="is applied to")
            elif (constructor := linen_constructor(values, target)) is not None:
                self.report(site.node, _instance_message(api, self.ctx.code(target), self.ctx.code(constructor.func)))
            else:
                self._imported(site, target)

    def _report_class(self, site: RematSite, cls: str) -> None:
        self.report(site.node, _class_message(site.api.display, cls), fix=self._fix(site))

    def _imported(self, site: RematSite, target: cst.CSTNode) -> None:
        """A class of another module of the project (``Block`` imported), an instance of one or
        the class of an instance: a candidate that the project phase confirms when the class is a
        linen Module (check_project)."""
        from remat_lint.project.extract import ref_of

        found = _imported_class(self.ctx.values.deferred_imports.single(target), target)
        ref = ref_of(self.ctx.model, found[0]) if found is not None else None
        if found is None or ref is None or ref[0] == LOCAL:
            return
        cls, instance = found
        data = {
            "ref": ref,
            "api": site.api.display,
            "target": self.ctx.code(target),
            "cls": self.ctx.code(cls),
            "instance": instance,
        }
        self.candidate(site.node, [ref[1].rsplit(".", 1)[-1]], data, fix=None if instance else self._fix(site))

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the candidates whose class is a linen Module of the project."""
        return project.confirm_linen_classes(
            candidates,
            module,
            lambda data: (
                _instance_message(data["api"], data["target"], data["cls"])
                if data["instance"]
                else _class_message(data["api"], data["target"])
            ),
        )

    def _report_method(self, site: RematSite, method: str, how: str = "decorates") -> None:
        if 0 in _literal_ints(site.keyword("static_argnums")):
            effect = (
                "with `self` static, the Module's variables are created inside the JAX trace: `init` returns "
                "tracers as parameters and `apply` raises `UnexpectedTracerError`"
            )
        else:
            effect = (
                "JAX traces `self` as an array argument, so `init` raises `TypeError: Cannot interpret value of "
                "type <class ...> as an abstract array`"
            )
        self.report(
            site.node,
            f"`{site.api.display}` {how} the Flax Module method `{method}`. {effect[0].upper()}{effect[1:]}; use "
            "the lifted `nn.remat`",
            fix=self._fix(site),
        )

    def _fix(self, site: RematSite) -> FixSpec | None:
        """Replace the spelling of the JAX transform by ``nn.remat`` (see Fix safety)."""
        if not set(site.keywords) <= _PORTABLE_KEYWORDS or site.has_star_args or site.ref.factory is not None:
            return None
        if isinstance(site.node, cst.Decorator):
            owner = self.ctx.model.parent(site.node)
            if owner is None or owner.decorators[0] is not site.node:  # type: ignore[attr-defined]  # a decorator's parent is a FunctionDef or ClassDef
                return None
        spelled, missing_import = self.ctx.spell(linen.REMAT)
        if missing_import is not None:
            return None
        transform = _transform_expr(site)
        return FixSpec(f"Use `{spelled}`", [(transform, spelled)]) if transform is not None else None


def _imported_class(value: Value | None, target: cst.CSTNode) -> tuple[cst.BaseExpression, bool] | None:
    """How this module names the class of another module that ``target`` (holding ``value``) is,
    or is an instance of (then True): the imported name itself, or the callee of the call that
    built the instance (the value layer's Module class or instance of framework None)."""
    if value is None:
        return None
    if value.kind == "imported" and isinstance(target, (cst.Name, cst.Attribute)):
        return target, False
    built = value.node if value.framework is None else None  # framework None: a class of another module
    if value.kind in ("module_class", "module_instance") and isinstance(built, cst.Call):
        return built.func, value.kind == "module_instance"
    return None


def _class_message(api: str, cls: str) -> str:
    return (
        f"`{api}` is applied to the Flax Module class `{cls}`. It returns a plain function, not a Module class, so "
        "instantiating it raises `TypeError` (a Module is not a valid JAX type) and it has no `init`/`apply`; use "
        f"the lifted `nn.remat({cls})`"
    )


def _instance_message(api: str, target: str, cls: str) -> str:
    return (
        f"`{api}` is applied to the Flax Module instance `{target}`. The result is a plain function with no "
        "`init`/`apply`, and calling it inside a parent Module raises `TypeError: Can't call __hash__ on modules "
        f"that hold variables`; use the lifted `nn.remat({cls})(...)`"
    )


def _transform_expr(site: RematSite) -> cst.BaseExpression | None:
    """The expression naming the JAX transform, written at this site: the callee or decorator,
    or the first argument of a partial written there."""
    callee = site.node.decorator if isinstance(site.node, cst.Decorator) else site.node.func
    if not site.ref.partials:
        return callee
    partial = site.ref.partials[0]
    return partial.args[0].value if len(site.ref.partials) == 1 and partial is callee else None


def _literal_ints(arg: cst.Arg | None) -> set[int]:
    if arg is None:
        return set()
    value = arg.value
    elements = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
    return {int(e.value) for e in elements if isinstance(e, cst.Integer)}
