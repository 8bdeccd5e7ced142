from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from remat_lint.apis import DIFF_APIS, VJPS
from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.differentiation import Differentiation
    from remat_lint.analysis.sites import RematSite
    from remat_lint.project.model import Project, ProjectModule
else:
    cst = LazyModule("libcst")

# libcst and the analyses are imported where a file is checked: the project phase (check_project),
# often all a warm run does, needs neither (tests/engine/test_scale.py).

# What a checkpoint of the whole differentiated function costs, per kind of transform (measured on
# jax 0.10.2, compiled with optimization barriers kept: tests/jax_claims/test_grad.py).
EFFECT = {
    "value_and_grad": (
        "As a result the forward pass runs twice, once for the value and again inside the backward pass "
        "(measured on JAX 0.10.2: +33-35 % FLOPs), and no memory is saved"
    ),
    "grad": (
        "It saves nothing: compiled, the program has the same FLOPs and temp memory as without it (measured on "
        "JAX 0.10.2; XLA:CPU with optimization barriers kept adds one 64-byte buffer, a visible share only at toy shapes)"
    ),
    "grad has_aux": (
        "As a result the forward pass runs twice, once for the auxiliary outputs (`has_aux`) and again inside the "
        "backward pass (measured on JAX 0.10.2: +33-35 % FLOPs), and no memory is saved"
    ),
    "hessian": "It saves no memory: nothing outside it stays live",
    "forward": "It does nothing: forward mode keeps no residuals",
}
_WORST_FIRST = ("value_and_grad", "hessian", "grad", "forward")


class CheckpointWholeLoss(Rule):
    """
    ## What it does
    Flags a checkpoint that wraps the whole function handed to `jax.grad`, `jax.value_and_grad`,
    `jax.vjp`, `jax.jacrev`, `jax.jacfwd`, `jax.hessian`, `nnx.grad`, `nnx.value_and_grad`,
    `hk.grad`, `eqx.filter_grad` or `eqx.filter_value_and_grad`: `grad(checkpoint(loss))`, a
    decorated `@jax.checkpoint def loss`, a re-bound `loss = jax.checkpoint(loss)`, also when
    configuration switches it on (`if cfg.remat: loss = jax.checkpoint(loss)`, or a conditional
    expression): wasted whenever it is on.

    Where it is reported: at the checkpoint (the line to change), also when the grad is in another
    module: the message names the grad, and JSON and SARIF carry it as a related location.
    Linting only the module with the grad reports nothing there: the checkpoint's file was not
    linted.

    ## Why is this bad?
    A checkpoint saves memory by not keeping its function's intermediates for the backward pass
    while *something else* runs in between; it pays with a recomputation. When the checkpoint is
    the whole differentiated function, nothing else runs in between:

    - under `grad` (and `jacrev`) the primal forward is dead code, and the compiled program has
      the same FLOPs and temp memory as without the checkpoint (XLA:CPU with optimization
      barriers kept adds one 64-byte buffer: +12 % temp at `f32[8,8]`, +0.0 % at `f32[64,256]`);
    - under `value_and_grad` (and `vjp` when the pullback is called at once, and `grad` with
      `has_aux`, whose auxiliary outputs come from the forward pass) the value is
      needed, so the forward runs once for it and again inside the backward pass: measured
      +33-35 % FLOPs, and the same temp memory;
    - under `jacfwd` (forward mode) there are no residuals to save at all.

    The fix is to checkpoint the layers or blocks inside the loss (for a layer stack, the body of
    the `lax.scan` over layers). See jax-ml/jax#19822 ("jax.checkpoint does not reduce memory
    footprint").

    Across modules: a checkpoint that a module defines at module level (`@jax.checkpoint def
    loss`, `loss = jax.checkpoint(f)`) and another module of the project imports and
    differentiates whole is reported at the checkpoint, where the fix goes, and the message names
    the place of the differentiation (`differentiated by jax.value_and_grad at train.py:14`),
    also through one-line wrappers in other modules (`def objective(params, batch): return
    loss_fn(params, batch)`, up to three); quiet when a loop body anywhere in the project calls it
    (up to three calls away).

    Not reported when:
    - the gradient may itself be differentiated (forces from `grad(checkpoint(energy))` that a
      force-matching loss trains on, meta-learning): there the checkpoint saves memory in the
      outer backward pass. So the gradient must not be differentiated in the module, nor be
      computed by a function the module differentiates or one that returns a sum or mean of it
      (a loss term). What the code does decides, never a function's or variable's name;
    - a `vjp`'s pullback is kept for later (pipeline schedules): meanwhile only the inputs are
      held, which is a real saving;
    - the checkpoint has a policy that saves something (`dots_saveable` on a whole function
      does save memory: measured -10 % temp);
    - the checkpointed function is also a loop body, or the gradient is taken per chunk or
      per microbatch (in a loop, a scan body, a comprehension or under `vmap`), except a `vjp`
      in a Python `for`/`while` whose pullback is called at once (measured on jax 0.10.2, per
      microbatch: +25 % FLOPs, the same temp);
    - in test code: files matching `test-paths`, `if __name__ == "__main__":` blocks that do
      not train (a loop or a parameter update there makes it a script's entry point, judged),
      `with mock.patch(...)` blocks and `test_*` functions, which checkpoint whole losses on
      purpose to compare gradients or count forward passes.

    ## Example
    ```python
    import jax

    @jax.checkpoint
    def loss(params, batch):
        return jnp.mean((model(params, batch.x) - batch.y) ** 2)

    loss_and_grads = jax.value_and_grad(loss)
    ```

    ## Use instead
    ```python
    import jax

    def loss(params, batch):
        x = batch.x
        for layer_params in params:
            x = jax.checkpoint(layer)(layer_params, x)
        return jnp.mean((x - batch.y) ** 2)

    loss_and_grads = jax.value_and_grad(loss)
    ```

    ## Fix safety
    No fix: where to checkpoint instead depends on the model.

    ## References
    - [Gradient checkpointing with `jax.checkpoint`](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [jax-ml/jax#19822: jax.checkpoint does not reduce memory footprint](https://github.com/jax-ml/jax/issues/19822)
    """

    code = "REM101"
    trace_check = Rule.TraceCheck("cost", cost="recompute-for-nothing")
    name = "checkpoint-whole-loss"
    severity = Severity.WARNING
    project_wide = True  # the grad may be in another module than the checkpoint
    quiet_in_tests = True  # tests checkpoint whole losses on purpose (gradient equality, forward counts)

    VALID = [
        # The layers are checkpointed, not the loss.
        "import jax\ndef loss(ps, x):\n    for p in ps:\n        x = jax.checkpoint(layer)(p, x)\n    return x.sum()\ng = jax.grad(loss)",
        # A policy that saves matmuls does save memory on a whole function.
        "import jax\ng = jax.grad(jax.checkpoint(loss, policy=jax.checkpoint_policies.dots_saveable))",
        # A scan body that is also differentiated on its own.
        "import jax\nstep = jax.checkpoint(step)\ndef run(c, xs):\n    return jax.lax.scan(step, c, xs)\ng = jax.grad(step)",
        # Forces from an energy: a force-matching loss may differentiate them again.
        (  # forces trained on: the gradient is differentiated again
            "import jax\ndef forces(p):\n    return jax.grad(jax.checkpoint(energy))(p)\n"
            "def loss(p):\n    return (forces(p) ** 2).sum()\ng = jax.grad(loss)"
        ),
        "import jax\nck = jax.checkpoint(loss)\ndef outer(p):\n    return jax.grad(ck)(p).sum()\nmeta = jax.grad(outer)",
        # Per-example gradients.
        "import jax\ng = jax.vmap(jax.grad(jax.checkpoint(loss)))",
        # Per-microbatch gradients in a loop.
        "import jax\ndef accumulate(p, mbs):\n    return [jax.grad(jax.checkpoint(loss))(p, mb) for mb in mbs]",
        # A pullback kept while other work runs: only the inputs are held meanwhile.
        "import jax\ny, pull = jax.vjp(jax.checkpoint(f), x)\nz = other(x)\ng = pull(y)",
        "def checkpoint(f):\n    return f\nimport jax\ng = jax.grad(checkpoint(loss))",
    ]
    INVALID = [
        Invalid("import jax\ng = jax.grad(jax.checkpoint(loss))"),
        Invalid(
            "import jax\ndef loss(p, x):\n    return (p * x).sum()\nloss = jax.checkpoint(loss)\ng = jax.value_and_grad(loss)"
        ),
        Invalid("import jax\n@jax.value_and_grad\n@jax.checkpoint\ndef loss(p, x):\n    return (p * x).sum()"),
        Invalid(
            "import functools, jax\n@jax.checkpoint\ndef loss(p, x):\n    return (p * x).sum()\n"
            "g = functools.partial(jax.grad, argnums=1)(loss)"
        ),
        Invalid("import equinox as eqx\nimport jax\ng = eqx.filter_value_and_grad(jax.checkpoint(loss))"),
        Invalid("from flax import nnx\ng = nnx.grad(nnx.remat(loss))"),
        Invalid("import jax\nckpt_loss = jax.checkpoint(loss)\ng = jax.grad(lambda p: ckpt_loss(p, batch))"),
        # Checkpointing switched on by configuration: wasted whenever it is on.
        Invalid(
            "import jax\ndef step(params, batch, use_remat):\n    def loss_fn(p):\n        return model(p, batch)\n"
            "    if use_remat:\n        loss_fn = jax.checkpoint(loss_fn)\n    return jax.value_and_grad(loss_fn)(params)"
        ),
    ]

    def check(self) -> None:
        if not self.ctx.sites:
            return
        found: dict[int, tuple[RematSite, list[Differentiation]]] = {}
        for d in self.ctx.differentiations.all:
            site = self._whole_checkpoint(d)
            if site is not None:
                found.setdefault(id(site), (site, []))[1].append(d)
        for site, ds in found.values():
            kinds = {d.api.kind for d in ds}
            kind = next(k for k in _WORST_FIRST if k in kinds)
            d = next(d for d in ds if d.api.kind == kind)
            transform = self.ctx.code(d.node.func if isinstance(d.node, cst.Call) else d.node.decorator)
            self.report(site.node, message(transform, _effect(d), conditional=d.denoted.conditional))
        differentiated = {id(s) for d in self.ctx.differentiations.all for s in (d.denoted.sites or d.denoted.wrapped)}
        for site, symbol in self._exported():
            if id(site) not in differentiated and not self._exempt(site):
                # Another module may differentiate it: the project phase decides (check_project).
                self.candidate(site.node, [symbol])

    def _whole_checkpoint(self, d: Differentiation) -> RematSite | None:
        """The outermost checkpoint wrapping all of ``d``'s function, when nothing exempts it."""
        from remat_lint.analysis.differentiation import pullback_deferred
        from remat_lint.analysis.smoke_tests import in_smoke_test

        sites = d.denoted.sites or d.denoted.wrapped
        if not sites or sites[0].api.family == "flax":
            return None  # linen's remat lifts Module classes; they are not differentiated directly
        if pullback_deferred(self.ctx.model, d):
            return None  # a pullback kept for later holds only the inputs meanwhile: a real saving
        model, loops = self.ctx.model, self.ctx.loops
        # A vjp whose pullback is called at once runs the forward twice in each unrolled iteration too.
        python_loops = d.api.qname not in VJPS
        if in_smoke_test(model, d.node) or loops.in_body(d.node, python_loops=python_loops):
            return None  # test code; a gradient per chunk, microbatch or example
        if any(self._exempt(s) for s in sites):
            return None
        return sites[0] if self.ctx.differentiations.first_order(d, self.ctx.bodies) else None

    def _exempt(self, site: RematSite) -> bool:
        """A policy that saves something does save memory on a whole function; a checkpoint that
        is also a loop body or called per chunk does its job there."""
        from remat_lint.analysis.differentiation import default_policy

        loops = self.ctx.loops
        return not default_policy(self.ctx.model, site) or loops.is_loop_body(site) or self._called_per_chunk(site)

    def _exported(self) -> Iterator[tuple[RematSite, str]]:
        """The checkpoints other modules can import under a name: ``@jax.checkpoint def loss``
        (the outermost decorator) and ``loss = jax.checkpoint(f)`` at module level."""
        from remat_lint.analysis.exports import exported_name

        for site in self.ctx.sites:
            name = exported_name(self.ctx.model, site) if site.api.family != "flax" else None
            if name is not None:  # linen's remat lifts Module classes; they are not differentiated directly
                yield site, name

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the exported checkpoints (pending) that another module differentiates whole."""
        from remat_lint.project.model import place, related

        kept = []
        for candidate in candidates:
            finding = candidate.finding
            symbol = (module.name, candidate.symbols[0])
            if project.in_loop_body(symbol):
                continue
            uses = [reach for reach in project.differentiations_reaching(symbol) if reach.whole]  # itself, or a wrapper
            if uses:
                reach = min(uses, key=lambda r: r.rank(_WORST_FIRST))
                d = reach.differentiation
                where = place(reach.module, d.row, module)
                effect = "grad has_aux" if d.kind != DIFF_APIS[d.qname].kind else d.kind
                wrappers = f" through {', '.join(f'`{f}`' for f in reach.path)}" if reach.path else ""
                finding.message = message(d.transform, effect, where=where + wrappers)
                finding.data = {"symbol": symbol[1], "differentiated_at": where}
                finding.related = (related(reach.module, d.row, f"differentiated whole here by `{d.transform}`"),)
                kept.append(finding)
        return kept

    def _called_per_chunk(self, site: RematSite) -> bool:
        """The checkpointed callable is also called per iteration or chunk somewhere."""
        callables, loops = self.ctx.callables, self.ctx.loops
        return any(
            isinstance(call.func, cst.Name) and site in callables.denote(call.func).sites and loops.in_body(call)
            for call in self.ctx.model.calls
        )


def message(transform: str, effect: str, *, conditional: bool = False, where: str | None = None) -> str:
    return (
        f"The whole function differentiated by `{transform}`{f' at {where}' if where else ''} is checkpointed"
        f"{' (where this checkpoint is enabled)' if conditional else ''}. {EFFECT[effect]}; "
        "checkpoint the layers or blocks inside it instead"
    )


def _effect(d: Differentiation) -> str:
    """``grad`` with ``has_aux`` counts as ``value_and_grad`` (its outputs need the forward)."""
    return "grad has_aux" if d.api.kind != DIFF_APIS[d.api.qname].kind else d.api.kind
