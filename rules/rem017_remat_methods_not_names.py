from __future__ import annotations

import libcst as cst

from remat_lint.analysis.bodies import method
from remat_lint.findings import Applicability, Severity
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule


class RematMethodsNotNames(Rule):
    """
    ## What it does
    Flags a method itself given in `methods=` of Flax linen `nn.remat` / `nn.checkpoint` /
    `nn_partitioning.remat`: `nn.remat(Block, methods=[Block.encode])`.

    ## Why is this bad?
    Flax looks each entry up by name on the class: the wrap itself raises
    `TypeError: attribute name must be string, not 'function'` (measured, flax 0.12.8). The
    entries must be the methods' names: `methods=["encode"]`.

    ## Example
    ```python
    RematBlock = nn.remat(Block, methods=[Block.encode, Block.decode])
    ```

    ## Use instead
    ```python
    RematBlock = nn.remat(Block, methods=["encode", "decode"])
    ```

    ## Fix safety
    Safe: the original always raises, and the name of a method of that class is what Flax
    expects.

    ## References
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    """

    code = "REM017"
    trace_check = Rule.TraceCheck("exception", raises=(("TypeError", "attribute name must be string"),), refutes=True)
    name = "remat-methods-not-names"
    severity = Severity.ERROR
    fix = FixAvailability.ALWAYS
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        'import flax.linen as nn\nclass B(nn.Module):\n    def encode(self, x):\n        return x\nR = nn.remat(B, methods=["encode"])',
        "import flax.linen as nn\nR = nn.remat(B, methods=METHODS)",
        "import jax\nclass B:\n    def encode(self, x):\n        return x\ng = jax.jit(f, methods=[B.encode])",
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn\nclass B(nn.Module):\n    def encode(self, x):\n        return x\nR = nn.remat(B, methods=[B.encode])",
            fixed='import flax.linen as nn\nclass B(nn.Module):\n    def encode(self, x):\n        return x\nR = nn.remat(B, methods=["encode"])',
        ),
    ]

    def check(self) -> None:
        for site in self.ctx.sites:
            arg = site.keyword("methods")
            if site.api.family != "flax" or arg is None or not isinstance(arg.value, (cst.List, cst.Tuple)):
                continue
            for element in arg.value.elements:
                name = self._method_name(element.value)
                if name is not None:
                    self.report(
                        element.value,
                        f"`methods=` takes method names, but `{self.ctx.code(element.value)}` is the method itself. "
                        f"Flax looks each entry up by name, so the wrap raises `TypeError: attribute name must be "
                        f"string, not 'function'`; write `\"{name}\"`",
                        fix=FixSpec(f'Use the name `"{name}"`', [(element.value, f'"{name}"')]),
                    )

    def _method_name(self, value: cst.BaseExpression) -> str | None:
        """``Cls.m`` where ``Cls`` is a class of this module with a method ``m``."""
        if not isinstance(value, cst.Attribute):
            return None
        cls = self.ctx.model.definition(value.value)
        if not isinstance(cls, cst.ClassDef) or method(self.ctx.model, cls, value.attr.value) is None:
            return None
        return value.attr.value
