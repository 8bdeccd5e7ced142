from __future__ import annotations

import libcst as cst

from remat_lint.analysis.reaching import reaching_bindings
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.apis.nnx import MODULE_CLASSES as NNX_MODULE_CLASSES
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

_MAX_DEPTH = 16


class NnxRematModuleClass(Rule):
    """
    ## What it does
    Flags `nnx.remat` applied to an NNX Module class (`RematBlock = nnx.remat(Block)`,
    `@nnx.remat` on the class) or decorating its `__init__`.

    ## Why is this bad?
    `nnx.remat` checkpoints the function it is given. Given a class, that function is the
    constructor, run under the checkpoint with its arguments traced, and the calls of the Module
    it builds are not checkpointed at all. On `__init__` the same holds. Measured on flax
    0.12.8: a keyword argument (`rngs=rngs`) raises `TypeError: keyword arguments could not be
    resolved to positions`, an int size (`Block(4, rngs)`) raises `TypeError` (a traced shape);
    built from `rngs` alone (`nnx.remat(Block)(rngs)`), a two-layer block's gradient saves 7
    residuals, the same as without remat, and 4 with `nnx.remat` on `__call__`: a silent no-op.

    `nnx.remat` on a method (`@nnx.remat def __call__`), on an instance (`nnx.remat(block)(x)`)
    or on a function that takes the Module (`nnx.remat(lambda m, x: m(x))`) checkpoints the
    call and is not flagged.

    ## Example
    ```python
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return nnx.relu(self.linear(x))

    RematBlock = nnx.remat(Block)
    ```

    ## Use instead
    ```python
    class Block(nnx.Module):
        ...
        @nnx.remat
        def __call__(self, x):
            return nnx.relu(self.linear(x))
    ```

    ## Fix safety
    No fix: moving the checkpoint to the call changes which code is recomputed.

    ## References
    - [`flax.nnx.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html#flax.nnx.remat)
    """

    code = "REM013"
    trace_check = Rule.TraceCheck("exception", raises=(("TypeError", ""),))
    name = "nnx-remat-module-class"
    severity = Severity.WARNING

    VALID = [
        "from flax import nnx\nclass Block(nnx.Module):\n    @nnx.remat\n    def __call__(self, x):\n        return x",
        "from flax import nnx\ny = nnx.remat(lambda m, x: m(x))(block, x)",
        "from flax import nnx\ny = nnx.remat(nnx.Linear(4, 4, rngs=nnx.Rngs(0)))(x)",
        "from flax import nnx\nclass Config:\n    pass\nc = nnx.remat(Config)",
        "import flax.linen as nn\nclass Block(nn.Module):\n    pass\nR = nn.remat(Block)",
    ]
    INVALID = [
        Invalid("from flax import nnx\nclass Block(nnx.Module):\n    pass\nRematBlock = nnx.remat(Block)"),
        Invalid(
            "from flax import nnx\nclass Block(nnx.Module):\n    @nnx.remat\n    def __init__(self, rngs):\n        pass"
        ),
        Invalid("from flax import nnx\nclass Base(nnx.Module):\n    pass\n@nnx.remat\nclass Block(Base):\n    pass"),
    ]

    def check(self) -> None:
        model = self.ctx.model
        for site in self.ctx.sites:
            if site.api.family != "nnx" or site.target is None:
                continue
            target = site.target
            if isinstance(target, cst.FunctionDef) and target.name.value == "__init__":
                owner = model.functions[id(target)].class_node
                if owner is not None and _is_nnx_classdef(model, owner):
                    self.report(
                        site.node,
                        f"`nnx.remat` on `{owner.name.value}.__init__` checkpoints only the constructor, not calls. "
                        f"{_WHY}; decorate `__call__` (or the method doing the work) instead",
                    )
            elif _is_nnx_class(model, target):
                name = target.name.value if isinstance(target, cst.ClassDef) else self.ctx.code(target)
                self.report(
                    site.node,
                    f"`nnx.remat` on the Module class `{name}` checkpoints only its constructor, not its calls. "
                    f"{_WHY}; apply `nnx.remat` to `__call__` or to the instance's call",
                )


_WHY = (
    "The constructor runs under the checkpoint with traced arguments: a keyword argument or an int "
    "size raises `TypeError`; built from `rngs` alone, the Module is ordinary and its gradient saves "
    "the same residuals as without remat (measured on Flax 0.12.8, a two-layer block: 7 and 7; 4 with "
    "`nnx.remat` on `__call__`)"
)


def _is_nnx_class(model: SemanticModel, expr: cst.CSTNode, depth: int = 0) -> bool:
    """``expr`` certainly denotes an NNX Module class of this module (deriving from ``nnx.Module``
    through classes of this module). flax.nnx's own layers are left out: their keyword-only
    ``rngs`` makes ``nnx.remat(nnx.Linear)(4, 4, rngs=r)`` raise ``TypeError`` before any no-op."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.ClassDef):
        return _is_nnx_classdef(model, expr, depth)
    if model.qualified_name(expr) in NNX_MODULE_CLASSES:
        return True
    definition: cst.CSTNode | None = model.definition(expr)
    if definition is None and isinstance(expr, cst.Name):
        bindings, certain = reaching_bindings(model, expr)
        definition = bindings[0].node if certain and bindings[0].kind == "class" else None
    return isinstance(definition, cst.ClassDef) and _is_nnx_classdef(model, definition, depth)


def _is_nnx_classdef(model: SemanticModel, node: cst.ClassDef, depth: int = 0) -> bool:
    return any(_is_nnx_class(model, base.value, depth + 1) for base in node.bases)
