from __future__ import annotations

import libcst as cst

from remat_lint.analysis.loops import body_argument
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.values import Possible
from remat_lint.apis.linen import PARTITIONING, REMAT_SCAN
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

_MAX_DEPTH = 8


class RematScanPartitionedParams(Rule):
    """
    ## What it does
    Flags `nn.remat_scan(Layer, ...)` where `Layer` (or a Module or helper of this file it builds)
    creates parameters through `nn.with_partitioning` or `nn.with_logical_partitioning`. The layer
    may be spelled `functools.partial(Layer, ...)`, a function's result or a loop variable over
    classes: every class it can be must create such parameters.

    ## Why is this bad?
    `nn.remat_scan` stacks the layer's parameters along a new axis but takes no `metadata_params`,
    so it cannot tell Flax which mesh axis that new dimension has. Initialising the model raises
    `PartitioningUnspecifiedError: Trying to transform a Partitioned variable but "partition_name"
    is not specified in metadata_params` (measured on flax 0.12.8: a `Dense` with a partitioned
    `kernel_init`, a `self.param` with a partitioned initializer, logical partitioning,
    `lengths=(3,)` and `(2, 2)`). `nn.scan(nn.remat(Layer), ..., metadata_params={nn.PARTITION_NAME:
    "layers"})` initialises the same layer, its kernel named `("layers", None, "model")`.

    On by default: the rule fires only when the layer's partitioned initializer is found in this
    file, and then initialisation always raises.

    ## Example
    ```python
    import flax.linen as nn

    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x):
            init = nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model"))
            return nn.Dense(4, kernel_init=init)(x)

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(Layer, lengths=(4,))()(x)
    ```

    ## Use instead
    ```python
    class ScanLayer(Layer):
        def __call__(self, x, _):
            return super().__call__(x), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            scan = nn.scan(nn.remat(ScanLayer), variable_axes={"params": 0}, split_rngs={"params": True},
                           length=4, metadata_params={nn.PARTITION_NAME: "layers"})
            return scan()(x, None)[0]
    ```

    ## Fix safety
    No fix: the scanned layer's signature changes (`(carry, x) -> (carry, y)`).

    ## References
    - [`flax.linen.remat_scan`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat_scan)
    - [`flax.linen.scan` `metadata_params`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.scan)
    """

    code = "REM018"
    trace_check = Rule.TraceCheck("exception", raises=(("PartitioningUnspecifiedError", ""),))
    name = "remat-scan-partitioned-params"
    severity = Severity.ERROR

    VALID = [
        "import flax.linen as nn\nclass L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn.Dense(4)(x)\ny = nn.remat_scan(L, lengths=(2,))",
        "import flax.linen as nn\nclass L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn.Dense(4, kernel_init=nn.with_partitioning(init, ('a', None)))(x)\n"
        "S = nn.scan(nn.remat(L), variable_axes={'params': 0}, metadata_params={nn.PARTITION_NAME: 'l'})",
        "import flax.linen as nn\ny = nn.remat_scan(layer_cls, lengths=(2,))",
        "import flax.linen as nn\nclass L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn.Dense(4, kernel_init=nn.with_partitioning(init, ('a', None)))(x)\n"
        "class P(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return nn.Dense(4)(x)\n"
        "y = nn.remat_scan(L if sharded else P, lengths=(2,))",
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn\nclass L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return nn.Dense(4, kernel_init=nn.with_partitioning(init, ('a', None)))(x)\n"
            "y = nn.remat_scan(L, lengths=(2,))"
        ),
        Invalid(
            "import flax.linen as nn\nINIT = nn.with_logical_partitioning(init, ('embed', 'mlp'))\n"
            "class L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return x @ self.param('w', INIT, (4, 4))\ny = nn.remat_scan(L, lengths=(2, 2))"
        ),
        Invalid(
            "import functools\nimport flax.linen as nn\nclass L(nn.Module):\n    features: int = 4\n    @nn.compact\n"
            "    def __call__(self, x):\n"
            "        return nn.Dense(self.features, kernel_init=nn.with_partitioning(init, ('a', None)))(x)\n"
            "def layer_cls():\n    return L\n"
            "a = nn.remat_scan(functools.partial(L, features=8), lengths=(2,))\nb = nn.remat_scan(layer_cls(), lengths=(2,))"
        ),
    ]

    def check(self) -> None:
        model = self.ctx.model
        for call in model.calls:
            if model.qualified_name(call.func) != REMAT_SCAN:
                continue
            target = body_argument(call, 0, "target")
            layers = _linen_classes(self.ctx.values.possible(target)) if target is not None else None
            found = [(layer, _partitioning_call(model, layer, set())) for layer in layers or ()]
            if not found or any(where is None for _, where in found):
                continue  # every class the call may scan must have partitioned parameters
            layer, where = found[0]
            assert where is not None
            self.report(
                call,
                f"`nn.remat_scan` over `{layer.name.value}` raises `PartitioningUnspecifiedError` at init: its "
                f"parameters are partitioned (`{self.ctx.code(where.func)}`). Flax says: 'Trying to transform a "
                'Partitioned variable but "partition_name" is not specified in metadata_params\', and '
                "`nn.remat_scan` takes no `metadata_params`; use `nn.scan(nn.remat(...), ..., "
                "metadata_params={nn.PARTITION_NAME: 'layers'})`",
            )


def _linen_classes(found: Possible | None) -> list[cst.ClassDef] | None:
    """The linen Module classes of this file a layer argument can be (``Layer``, ``partial(Layer,
    ...)``, a factory's result, a loop variable over classes); None when one is anything else."""
    if not found or any(v.kind != "module_class" or v.framework != "flax" or v.definition is None for v in found):
        return None
    return list(dict.fromkeys(v.definition for v in found if v.definition is not None))


def _partitioning_call(
    model: SemanticModel, definition: cst.ClassDef | cst.FunctionDef, seen: set[int]
) -> cst.Call | None:
    """A partitioning initializer that ``definition`` (a class or def of this file) creates, directly,
    through a module-level name bound to one, or through the classes and functions of this file it
    calls."""
    if id(definition) in seen or len(seen) > _MAX_DEPTH:
        return None
    seen.add(id(definition))
    stack: list[cst.CSTNode] = [definition.body]
    while stack:
        node = stack.pop()
        stack.extend(child_nodes(node))
        if isinstance(node, cst.Name):
            value = model.assigned_value(node)  # INIT = nn.with_partitioning(...) at module level
            if isinstance(value, cst.Call) and model.qualified_name(value.func) in PARTITIONING:
                return value
        if not isinstance(node, cst.Call):
            continue
        if model.qualified_name(node.func) in PARTITIONING:
            return node
        callee = model.definition(node.func)
        if isinstance(callee, (cst.ClassDef, cst.FunctionDef)):
            found = _partitioning_call(model, callee, seen)
            if found is not None:
                return found
    return None
