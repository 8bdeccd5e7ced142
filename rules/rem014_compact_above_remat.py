from __future__ import annotations

import libcst as cst

from remat_lint.analysis.linen import is_linen_class, is_linen_classdef
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.apis.linen import COMPACT
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

_CREATED = {"param": "parameter", "variable": "variable"}  # ``self.param(...)``, ``self.variable(...)``


class CompactAboveRemat(Rule):
    """
    ## What it does
    Flags a Flax linen Module method decorated `@nn.compact` above `@nn.remat` (or
    `@nn.checkpoint`, `@nn_partitioning.remat`, a `functools.partial` of one) whose body
    creates a submodule (`nn.Dense(4)(x)`), a parameter (`self.param(...)`) or a variable
    (`self.variable(...)`).

    ## Why is this bad?
    Decorators apply bottom-up: the lifted remat wraps the method first, and `@nn.compact` then
    marks the wrapper, not the function that creates the submodules. Flax raises at `init`
    (measured, flax 0.12.8): `AssignSubModuleError: Submodule Dense must be defined in setup()
    or in a method wrapped in @compact` for a submodule, `ValueError: Parameters must be
    initialized in setup() or in a method wrapped in @compact` for `self.param` (`Variables
    must be initialized...` for `self.variable`). The other order
    (`@nn.remat` above `@nn.compact`) works.

    ## Example
    ```python
    import flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        @nn.remat
        def __call__(self, x):
            return nn.Dense(4)(x)
    ```

    ## Use instead
    ```python
    class Block(nn.Module):
        @nn.remat
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(x)
    ```

    ## Fix safety
    Safe: swapping the two decorators is the documented form, and the original always fails.

    ## References
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [`AssignSubModuleError`](https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.AssignSubModuleError)
    """

    code = "REM014"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(
            ("AssignSubModuleError", ""),
            ("ValueError", "Parameters must be"),
            ("ValueError", "Variables must be"),
        ),
    )
    name = "compact-above-remat"
    severity = Severity.ERROR
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import flax.linen as nn\nclass B(nn.Module):\n    @nn.remat\n    @nn.compact\n    def __call__(self, x):\n        return nn.Dense(4)(x)",
        "import flax.linen as nn\nclass B(nn.Module):\n    @nn.compact\n    @nn.remat\n    def __call__(self, x):\n        return x * 2",
        (
            "import flax.linen as nn\nclass B(nn.Module):\n    def setup(self):\n        self.d = nn.Dense(4)\n"
            "    @nn.compact\n    @nn.remat\n    def __call__(self, x):\n        return self.d(x)"
        ),
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn\nclass B(nn.Module):\n    @nn.compact\n    @nn.remat\n    def __call__(self, x):\n        return nn.Dense(4)(x)",
            fixed="import flax.linen as nn\nclass B(nn.Module):\n    @nn.remat\n    @nn.compact\n"
            "    def __call__(self, x):\n        return nn.Dense(4)(x)",
        ),
        Invalid(
            "import functools\nimport flax.linen as nn\nclass B(nn.Module):\n    @nn.compact\n"
            "    @functools.partial(nn.checkpoint, static_argnums=(2,))\n    def __call__(self, x, train):\n"
            "        w = self.param('w', nn.initializers.ones, (4,))\n        return x * w",
            fixed="import functools\nimport flax.linen as nn\nclass B(nn.Module):\n"
            "    @functools.partial(nn.checkpoint, static_argnums=(2,))\n    @nn.compact\n    def __call__(self, x, train):\n"
            "        w = self.param('w', nn.initializers.ones, (4,))\n        return x * w",
        ),
    ]

    def check(self) -> None:
        model = self.ctx.model
        for site in self.ctx.sites:
            method = site.target
            if site.api.family != "flax" or site.form != "decorator" or not isinstance(method, cst.FunctionDef):
                continue
            owner = model.functions[id(method)].class_node
            decorators = list(method.decorators)
            compact = next((d for d in decorators if model.qualified_name(d.decorator) == COMPACT), None)
            if (
                owner is None
                or compact is None
                or not isinstance(site.node, cst.Decorator)
                or decorators.index(compact) > decorators.index(site.node)
            ):
                continue
            if not is_linen_classdef(model, owner):
                continue
            created = self._creates(method)
            if created is None:
                continue
            error = "`AssignSubModuleError`" if created == "submodule" else "`ValueError`"
            self.report(
                compact,
                f"`@nn.compact` above `@{site.api.display}` marks the remat wrapper, so `init` raises {error}. "
                f"Decorators apply bottom-up: the body creating the {created} is not the compact method, and "
                f"Flax allows {created}s only there; put `@{site.api.display}` above `@nn.compact`",
                fix=self._fix(site, compact),
            )

    def _creates(self, method: cst.FunctionDef) -> str | None:
        """What the body creates that needs ``@compact``: a submodule, a parameter, a variable, or None."""
        model = self.ctx.model
        stack: list[cst.CSTNode] = [method.body]
        found = None
        while stack:
            node = stack.pop()
            stack.extend(child_nodes(node))
            if not isinstance(node, cst.Call):
                continue
            if is_linen_class(self.ctx.values, node.func):
                return "submodule"
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _CREATED
                and _is_first_param(model, func.value, method)
            ):
                found = _CREATED[func.attr.value]
        return found

    def _fix(self, site: RematSite, compact: cst.Decorator) -> FixSpec | None:
        if not isinstance(site.node, cst.Decorator):
            return None
        remat, compact_code = site.node.decorator, compact.decorator
        return FixSpec(
            f"Put `@{site.api.display}` above `@nn.compact`",
            [(compact_code, self.ctx.code(remat)), (remat, self.ctx.code(compact_code))],
        )


def _is_first_param(model: SemanticModel, expr: cst.BaseExpression, method: cst.FunctionDef) -> bool:
    binding = model.single_binding(expr)
    params = method.params.params
    return binding is not None and bool(params) and binding.node is params[0]
