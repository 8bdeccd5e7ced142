from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from remat_lint.analysis.last_stage import ARRAY_METHODS
from remat_lint.analysis.loops import LoopBody, body_argument
from remat_lint.analysis.scanned_weights import applies_scanned_weights
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.smoke_tests import in_smoke_test
from remat_lint.apis import SCANS
from remat_lint.apis.flax import PREFIX as FLAX_PREFIX
from remat_lint.apis.jax import PREFIX as JAX_PREFIX
from remat_lint.apis.linen import SCANS as LINEN_SCANS
from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    from remat_lint.engine.context import LintContext
    from remat_lint.project.model import Project, ProjectModule


class ScanBodyNotCheckpointed(Rule):
    """
    ## What it does
    Flags a `lax.scan`, `hk.scan` or Flax `nn.scan` over layers whose body certainly has no
    checkpoint (the body and what it calls are visible and apply none), in code that is
    differentiated: the function handed to `jax.grad` (and the same-module functions it calls),
    or a Flax linen Module scanned over its `params` in a module that differentiates something.

    Across modules: a module-level function that scans such a body outside the code its module
    differentiates, or a module-level Flax linen Module class whose methods (`__call__`, `setup`)
    `nn.scan` an un-checkpointed layer in a module that differentiates nothing, is reported when a
    grad in another module of the project reaches it (up to three calls away; a class is reached
    where that code builds it, `Decoder().apply(...)`, or a class that builds it in a method,
    in its module or another: a Transformer whose `setup` builds the Decoder); the message names the place
    (`differentiated by jax.grad at train.py:12`).

    "Over layers" means: `nn.scan` with `variable_axes={"params": ...}`, or a `scan` whose body
    applies each step's slice of `xs` as weights to its carry: a matrix product of the two
    (`c @ p`, `jnp.einsum(..., c, p["w"])`), or a same-module function that does so given both. Scans over time steps or chunks (`h * x`,
    `h @ W + x` with `W` bound outside) are left alone, whatever anything is named. Off by default.

    Where it is reported: at the scan whose body is not checkpointed (the line to change), also
    when the grad is in another module: the message names the grad, and JSON and SARIF carry it as
    a related location. Linting only the module with the grad reports nothing there.

    ## Why is this bad?
    Under `grad`, a `scan` keeps every iteration's intermediates for the backward pass, stacked
    per layer, and XLA cannot optimise across the loop boundary to free them. Checkpointing the
    body keeps only the carry per layer and recomputes each layer in the backward loop.
    Measured (jax 0.10.2, residual-MLP blocks scanned): 5-7x less temp memory with
    `jax.checkpoint(body)` (8 blocks: 259 → 52 MiB; 6 smaller blocks: 11.9 → 1.7 MB), for
    +17 % FLOPs. Whether that trade is right depends on the model's size: hence info, and off
    by default.

    ## Example
    ```python
    import jax

    def forward(params, x):
        x, _ = jax.lax.scan(layer, x, params["layers"])
        return x

    grads = jax.grad(lambda p, x: forward(p, x).mean())(params, x)
    ```

    ## Use instead
    ```python
    import jax

    def forward(params, x):
        x, _ = jax.lax.scan(jax.checkpoint(layer), x, params["layers"])
        return x
    ```

    ## Fix safety
    No fix: pick a policy (`dots_with_no_batch_dims_saveable` is often the best trade) first.

    ## References
    - [Gradient checkpointing: `jax.checkpoint` and `lax.scan`](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [flax PR #3267: `nn.scan(nn.remat(...))`](https://github.com/google/flax/pull/3267)
    - [jax-ml/jax#14056: memory without scan over layers](https://github.com/jax-ml/jax/issues/14056)
    """

    code = "REM301"
    name = "scan-body-not-checkpointed"
    severity = Severity.INFO
    default_enabled = False
    quiet_in_tests = True  # tests scan small models without checkpoints on purpose
    prefilter_apis = ("scan",)  # the differentiation may be in another module
    project_wide = True  # the grad may be in another module than the scan

    VALID = [
        "import jax\ndef f(ps, x):\n    return jax.lax.scan(jax.checkpoint(layer), x, ps['layers'])[0].sum()\ng = jax.grad(f)",
        (
            "import jax\ndef layer(c, p):\n    return jax.checkpoint(block)(c, p), None\n"
            "def f(ps, x):\n    return jax.lax.scan(layer, x, ps)[0].sum()\ng = jax.grad(f)"
        ),
        # Over time steps, not layers (jax's RNN test: the parameters are bound, not scanned).
        (
            "import functools, jax\ndef step(params, h, x):\n    return h @ params + x, h\n"
            "def rnn(params, xs):\n    return jax.lax.scan(functools.partial(step, params), xs[0], xs)[0].sum()\n"
            "g = jax.grad(rnn)"
        ),
        "import jax\ndef cell(h, x):\n    return h * x, h\ndef rnn(p, xs):\n    return jax.lax.scan(cell, p, xs)[0].sum()\ng = jax.grad(rnn)",
        # The body's decorator checkpoints it (or may: a decorator that is not JAX's or Flax's).
        "import jax\ndef deco(f):\n    return jax.checkpoint(f)\n@deco\ndef layer(c, p):\n    return c @ p, None\n"
        "def f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0].sum()\ng = jax.grad(f)",
        # Not differentiated here.
        "import jax\ndef f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0]",
        (
            "import flax.linen as nn\nclass S(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return nn.scan(nn.remat(Block), variable_axes={'params': 0}, split_rngs={'params': True}, length=4)()(x, None)"
        ),
    ]
    INVALID = [
        Invalid(
            "import jax\ndef layer(c, p):\n    return c @ p, None\n"
            "def f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0].sum()\ng = jax.grad(f)"
        ),
        Invalid(
            "import jax\ndef body(c, p):\n    return c @ p, None\ndef forward(params, x):\n    return jax.lax.scan(body, x, params)[0]\n"
            "@jax.value_and_grad\ndef loss(params, x):\n    return forward(params, x).mean()"
        ),
        Invalid(
            "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, _):\n"
            "        return nn.Dense(4)(x), None\nclass S(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=4)()(x, None)\n"
            "import jax\ng = jax.grad(lambda v, x: S().apply(v, x)[0].sum())"
        ),
    ]

    def check(self) -> None:
        model = self.ctx.model
        scans = [b for b in self.ctx.loops.bodies if b.api in SCANS]
        if not scans:
            return
        differentiated = self.ctx.differentiations.under_grad(self.ctx.bodies, lambda d: in_smoke_test(model, d.node))
        for body in scans:
            if body.api not in SCANS or body.kind != "loop" or body.denoted.sites:
                continue
            call = body.call
            if not isinstance(call, cst.Call) or in_smoke_test(model, call):
                continue
            linen = body.api in LINEN_SCANS
            if not (self._scans_params(call) if linen else self._over_layers(body)):
                continue
            # Linen Modules are differentiated through `apply` elsewhere: ask for some grad here.
            in_grad = bool(differentiated) if linen else self._inside(call, differentiated)
            # Not differentiated here: another module's grad may reach the function (the Module class).
            symbols = [] if in_grad else self._reachable_as(call, linen)
            if not (in_grad or symbols) or not self._remat_free(body):
                continue
            scan = self.ctx.code(call.func)
            if in_grad:
                self.report(call, message(scan))
            else:  # the project phase decides (check_project)
                self.candidate(call, symbols, {"scan": scan})

    @staticmethod
    def collect_facts(ctx: LintContext) -> list[tuple[int, str, str, int]] | None:
        """The module-level functions this module differentiates in reverse mode, outside test
        code: (ref level, ref name, the transform as written, row)."""
        from remat_lint.project.extract import ref_of
        from remat_lint.project.modules import LOCAL

        if ctx.is_test_file:
            return None
        model, facts = ctx.model, []
        for d in ctx.differentiations.all:
            if not d.api.reverse or in_smoke_test(model, d.node):
                continue
            if isinstance(d.node, cst.Decorator):  # @jax.grad def loss
                ref = (LOCAL, d.target.name.value) if model.parent(d.target) is model.module else None  # type: ignore[attr-defined]  # a decorator's target is the def it decorates
                transform = d.node.decorator
            else:
                ref, transform = ref_of(model, d.target), d.node.func
            if ref is not None:
                facts.append((*ref, ctx.code(transform), ctx.positions.start_line(d.node)))
        return facts

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm a scanning function or Flax Module class (pending) that a grad in another module reaches."""
        from remat_lint.project.model import place, related

        kept = []
        grads = [
            (other, transform, row, start)
            for other, facts in project.facts(cls.code)
            if other is not module
            for level, name, transform, row in facts
            if (start := project.resolve(other, (level, name))) is not None
        ]
        for candidate in candidates:
            finding = candidate.finding
            symbols = [(module.name, name) for name in candidate.symbols]
            reaching = sorted(
                (other.path, row, other, transform)
                for other, transform, row, start in grads
                if any(project.reaches(start, symbol) for symbol in symbols)
            )
            if reaching:
                _, row, other, transform = reaching[0]
                where = place(other, row, module)
                finding.message = message(str(candidate.values["scan"]), f"`{transform}` at {where}")
                finding.data = {"symbol": symbols[0][1], "differentiated_at": where}
                finding.related = (related(other, row, f"differentiated here by `{transform}`"),)
                kept.append(finding)
        return kept

    def _reachable_as(self, scan: cst.Call | cst.Decorator, linen: bool) -> list[str]:
        """The module-level names through which another module's grad may reach ``scan``: the
        function it is in; for ``nn.scan``, the Module class it is in and the classes of this
        module that build that one (a Transformer whose ``setup`` builds the scanning Decoder),
        up to three levels."""
        from remat_lint.project.extract import top_level_function
        from remat_lint.project.model import CALL_DEPTH

        model = self.ctx.model
        if not linen:
            function = top_level_function(model, scan)
            return [function] if function else []
        found = [cls] if (cls := _module_class(model, scan)) is not None else []
        frontier = found
        for _ in range(CALL_DEPTH):
            builders = {
                id(builder): builder
                for call in model.calls
                if any(model.definition(call.func) is built for built in frontier)
                and (builder := _module_class(model, call)) is not None
                and all(builder is not known for known in found)
            }
            frontier = list(builders.values())
            found += frontier
        return [cls.name.value for cls in found]

    def _inside(self, node: cst.CSTNode, functions: set[int]) -> bool:
        return any(id(a) in functions for a in self.ctx.model.ancestors(node))

    def _over_layers(self, body: LoopBody) -> bool:
        """The body applies each step's slice of ``xs`` as weights to its carry (scanned_weights.py)."""
        function = body.denoted.function
        return function is not None and applies_scanned_weights(self.ctx.model, self.ctx.bodies, function)

    def _scans_params(self, call: cst.Call) -> bool:
        axes = body_argument(call, 1, "variable_axes")
        if not isinstance(axes, cst.Dict):
            return False
        keys = [e.key for e in axes.elements if isinstance(e, cst.DictElement)]
        return any(isinstance(k, cst.SimpleString) and k.evaluated_value == "params" for k in keys)

    def _remat_free(self, body: LoopBody) -> bool:
        """The body certainly applies no checkpoint: neither it nor the same-module functions it
        calls contain one, and every other call is a library function (a layer from another
        module may checkpoint inside)."""
        scope: cst.CSTNode | None = body.denoted.function
        if scope is None:
            definition = self.ctx.model.definition(body.expr)
            scope = definition if isinstance(definition, cst.ClassDef) else None
        if scope is None:
            return False
        scopes = [scope]
        if isinstance(scope, (cst.FunctionDef, cst.Lambda)):
            scopes += [h.function for h in self.ctx.bodies.helpers(scope)]
        model = self.ctx.model
        for current in scopes:
            if any(_within(model, site.node, current) for site in self.ctx.sites):
                return False
            if not all(map(self._known_decorator, _decorators(current))):
                return False
            if not all(self._known_call(c) for c in model.calls if _within(model, c, current)):
                return False
        return True

    def _known_decorator(self, decorator: cst.Decorator) -> bool:
        """JAX's, Flax's or a builtin: another decorator may checkpoint what it decorates
        (``def deco(f): return jax.checkpoint(f)``, an imported ``@remat_block``)."""
        expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = self.ctx.qualified_name(expr)
        return name is not None and (name.startswith((JAX_PREFIX, FLAX_PREFIX)) or name in _BUILTIN_DECORATORS)

    def _known_call(self, call: cst.Call) -> bool:
        """A call of a library function, a same-module function, or an array method."""
        ctx = self.ctx
        func = call.func
        if ctx.callables.denote(func).sites:
            return False  # calls a checkpointed function
        if ctx.qualified_name(func) is not None or ctx.bodies.callee(call) is not None:
            return True
        if isinstance(func, cst.Call):  # nn.Dense(4)(x)
            return ctx.qualified_name(func.func) is not None
        return isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS


def message(scan: str, differentiated_by: str | None = None) -> str:
    where = f"code differentiated by {differentiated_by}" if differentiated_by else "differentiated code"
    return (
        f"`{scan}` over layers in {where} has no checkpoint on its body. "
        "The backward pass keeps every layer's intermediates, stacked (measured on JAX 0.10.2: 5-7x the temp memory of a "
        "checkpointed body, which costs about +17 % FLOPs); wrap the body in `jax.checkpoint` / `nn.remat`"
    )


_BUILTIN_DECORATORS = frozenset({"builtins.staticmethod", "builtins.classmethod", "builtins.property"})


def _decorators(scope: cst.CSTNode) -> Iterator[cst.Decorator]:
    """The decorators of ``scope`` and of the functions and classes inside it."""
    stack = [scope]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            yield from node.decorators
        stack.extend(child_nodes(node))


def _within(model: SemanticModel, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    return any(a is scope for a in model.ancestors(node))


def _module_class(model: SemanticModel, node: cst.CSTNode) -> cst.ClassDef | None:
    """The module-level class that ``node`` is in (a method of a Flax Module)."""
    outermost = next((a for a in reversed(list(model.ancestors(node))) if isinstance(a, cst.ClassDef)), None)
    return outermost if outermost is not None and model.parent(outermost) is model.module else None
