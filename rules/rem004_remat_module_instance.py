from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from remat_lint.analysis.guards import only_where_error_expected
from remat_lint.analysis.linen import bound_linen_method
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.values import Possible, Value
from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.project.extract import ref_of
from remat_lint.project.modules import LOCAL
from remat_lint.rule import FixAvailability, FixSpec, Invalid, Rule

if TYPE_CHECKING:
    from remat_lint.project.model import Project, ProjectModule

# What the mistakes raise; code that only runs where these are expected is a test of them.
_TARGET_ERROR = frozenset({"TransformTargetError"})
_CALL_ERRORS = frozenset({"AttributeError", "TypeError"})


class RematModuleInstance(Rule):
    """
    ## What it does
    Flags Flax linen `nn.remat` / `nn.checkpoint` / `nn_partitioning.remat` applied to a Module
    instance (`nn.remat(Block(cfg))`, a name bound to one, a submodule assigned in `setup`) or
    to a bound method (`nn.remat(self.encode)`). The Module class may come from another module
    of the project (`from .layers import Block`): its base classes are followed there.

    Where it is reported: at the Linen transform's call, in the module that writes it, also when
    the Module class comes from another module and only that module is linted; JSON and SARIF
    carry the class's definition as a related location.

    ## Why is this bad?
    Linen transforms take a Module *class*, or a function whose first argument is a Module.
    Given an instance, Flax raises `flax.errors.TransformTargetError` ("Linen transformations
    must be applied to Modules classes or functions taking a Module instance as the first
    argument") as soon as it wraps it. Given a bound method, Flax treats it as a function and
    passes the Module as its first argument, so the call fails: `AttributeError` when called
    with arrays, `TypeError` (too many positional arguments) when `self` is passed as well.

    Haiku's `hk.remat`, `nnx.remat` and `eqx.filter_checkpoint` do accept instances: they are
    never flagged. Classes, `functools.partial(Block, ...)`, functions whose first parameter is a
    Module (`nn.remat(Block.__call__)`) and variables holding classes are all valid.

    ## Example
    ```python
    import flax.linen as nn

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(Block(features=64))(x)
    ```

    ## Use instead
    ```python
    import flax.linen as nn

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(Block)(features=64)(x)
    ```

    ## Fix safety
    Safe when the instance is a constructor call written in the remat call and the result is
    applied at once (`nn.remat(Block(a))(x)` becomes `nn.remat(Block)(a)(x)`): the original
    always raises. Without that outer call it is unclear whether a class or an instance was
    meant, and instances bound to names or created in `setup` would need code moved: no fix.

    ## References
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [`TransformTargetError`](https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.TransformTargetError)
    """

    code = "REM004"
    trace_check = Rule.TraceCheck(
        "exception",
        raises=(("TransformTargetError", ""), ("AttributeError", ""), ("TypeError", "positional argument")),
        refutes=True,
    )
    name = "remat-module-instance"
    severity = Severity.ERROR
    project_wide = True  # the Module class may be imported from another module
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)

    VALID = [
        "import flax.linen as nn\nRematBlock = nn.remat(Block)",
        # A test of the error: the Module is only used inside the block that expects it.
        (
            "import flax.linen as nn\nimport pytest\ndef test_instance():\n    class M(nn.Module):\n"
            "        @nn.compact\n        def __call__(self, x):\n            return nn.remat(nn.Dense(2))(x)\n"
            "    with pytest.raises(nn.errors.TransformTargetError):\n        M().init(key, x)"
        ),
        "import flax.linen as nn\nblock = nn.remat(FlaxLLaMABlock, static_argnums=(4, 5, 6))\nlayers = [block(cfg, name=str(i)) for i in range(n)]",
        "import flax.linen as nn\nclass M(nn.Module):\n    def setup(self):\n        self.c1 = nn.remat(nn.remat(C))()",
        "import functools\nimport flax.linen as nn\nB = nn.remat(functools.partial(Block, cfg=cfg), prevent_cse=False)",
        "import flax.linen as nn\nB = nn.remat(get_partial_mLSTMBlock(cfg), prevent_cse=False)",
        "import flax.linen as nn\ndef body_fn(module, carry, x):\n    return module(carry, x)\nbody = nn.remat(body_fn)",
        "import flax.linen as nn\nclass M(nn.Module):\n    block_cls: type = Block\n    def __call__(self, x):\n"
        "        return nn.remat(self.block_cls)()(x)",
        "import flax.linen as nn\nclass M(nn.Module):\n    def __call__(self, x):\n"
        "        return nn.remat(type(self).encode)(self, x)\n    def encode(self, x):\n        return x",
        "import haiku as hk\nlayers = [hk.remat(layer) for layer in layers]",
        "from flax import nnx\ny = nnx.remat(nnx.Linear(4, 4, rngs=nnx.Rngs(0)))(x)",
        "import equinox as eqx\ny = eqx.filter_checkpoint(eqx.nn.MLP(4, 4, 8, 2, key=k))(x)",
        "import flax.linen as nn\nclass Block:\n    pass\nb = nn.remat(Block())",
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn\nclass M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return nn.remat(nn.Dense(4, name='d'))(x)",
            fixed="import flax.linen as nn\nclass M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return nn.remat(nn.Dense)(4, name='d')(x)",
        ),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    pass\ny = nn.checkpoint(Block(cfg), policy=p)(x)",
            fixed="import flax.linen as nn\nclass Block(nn.Module):\n    pass\ny = nn.checkpoint(Block, policy=p)(cfg)(x)",
        ),
        Invalid("import flax.linen as nn\nclass Block(nn.Module):\n    pass\nblock = nn.remat(Block(cfg, name='b0'))"),
        Invalid("from flax import linen as nn\nlayer = nn.Dense(4)\nremat_layer = nn.remat(layer)"),
        Invalid(
            "import flax.linen as nn\nclass M(nn.Module):\n    def setup(self):\n        self.mlp = nn.Dense(4)\n"
            "    def __call__(self, x):\n        return nn.remat(self.mlp)(x)"
        ),
        Invalid(
            "import flax.linen as nn\nclass M(nn.Module):\n    def encode(self, x):\n        return x\n"
            "    def __call__(self, x):\n        return nn.remat(self.encode)(x)"
        ),
        Invalid(
            "import flax.linen.partitioning as nn_partitioning\nimport flax.linen as nn\nremat = nn_partitioning.remat\n"
            "class Base(nn.Module):\n    pass\nclass Block(Base):\n    pass\ny = remat(Block())(x)",
            fixed="import flax.linen.partitioning as nn_partitioning\nimport flax.linen as nn\nremat = nn_partitioning.remat\n"
            "class Base(nn.Module):\n    pass\nclass Block(Base):\n    pass\ny = remat(Block)()(x)",
        ),
    ]

    def check(self) -> None:
        values = self.ctx.values.deferred_imports  # an imported class: the project phase decides
        for site in self.ctx.sites:
            if site.api.family != "flax" or site.form != "call" or site.target is None:
                continue
            instance = _instance(values.possible(site.target))
            if instance is not None and not only_where_error_expected(self.ctx.model, site.node, _TARGET_ERROR):
                self._instance(site, instance)
                continue
            method = bound_linen_method(self.ctx.model, site.target)
            if method is not None and not only_where_error_expected(self.ctx.model, site.node, _CALL_ERRORS):
                self.report(
                    site.node,
                    f"`{site.api.display}` is given the bound method `{self.ctx.code(site.target)}`. Flax passes "
                    "the Module to the wrapped function as its first argument, so calling the result fails "
                    "(`AttributeError` with arrays, `TypeError` if `self` is passed too); pass the unbound "
                    f"method and the Module: `{site.api.display}(type(self).{method.name.value})(self, ...)`",
                )

    def _instance(self, site: RematSite, instance: Value) -> None:
        """Report a linen Module instance; for an instance of a class imported from another module,
        a candidate that the project phase confirms when the class is a linen Module (check_project)."""
        target, constructor = site.target, instance.node
        assert target is not None and isinstance(constructor, cst.Call)  # ``_instance``: built by a call
        message = _instance_message(site.api.display, self.ctx.code(target), self.ctx.code(constructor.func))
        if instance.framework == "flax":
            self.report(site.node, message, fix=self._fix(site, constructor))
            return
        ref = ref_of(self.ctx.model, constructor.func)
        if ref is not None and ref[0] != LOCAL:
            data = {
                "ref": ref,
                "api": site.api.display,
                "target": self.ctx.code(target),
                "cls": self.ctx.code(constructor.func),
            }
            self.candidate(site.node, [ref[1].rsplit(".", 1)[-1]], data, fix=self._fix(site, constructor))

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the candidates whose class is a linen Module of the project."""
        return project.confirm_linen_classes(
            candidates, module, lambda data: _instance_message(data["api"], data["target"], data["cls"])
        )

    def _fix(self, site: RematSite, constructor: cst.Call) -> FixSpec | None:
        """``remat(C(a))(x)`` -> ``remat(C)(a)(x)``: only when the constructor is written in the
        call and the result is applied right away (so an instance was certainly meant)."""
        call = site.call
        applied = self.ctx.model.parent(call) if call is not None else None
        if call is None or constructor is not site.target or not any(a.value is constructor for a in call.args):
            return None
        if not (isinstance(applied, cst.Call) and applied.func is call):
            return None
        fixed = constructor.with_changes(func=call.deep_replace(constructor, constructor.func))
        suggestion = f"{site.api.display}({self.ctx.code(constructor.func)})(...)"
        return FixSpec(f"Transform the class, then instantiate it: `{suggestion}`", [(call, fixed)])


def _instance(found: Possible | None) -> Value | None:
    """A linen Module instance (or an instance of a class of another module of the project) that
    the target certainly is: every value it can hold is one of the same kind, built by a call."""
    if not found or any(v.kind != "module_instance" or not isinstance(v.node, cst.Call) for v in found):
        return None
    linen = [v.framework == "flax" for v in found]
    if all(linen) or (not any(linen) and len({v.qname for v in found}) == 1 and found[0].framework is None):
        return found[0]
    return None


def _instance_message(api: str, target: str, cls: str) -> str:
    return (
        f"`{api}` is given the Module instance `{target}`, not a class. Linen transforms take a Module class (or a "
        "function whose first argument is a Module) and raise `flax.errors.TransformTargetError` for an instance; "
        f"transform the class, then instantiate it: `{api}({cls})(...)`"
    )
