from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from remat_lint.findings import Candidate, Finding, Severity
from remat_lint.lazy_import import LazyModule
from remat_lint.rule import Invalid, Rule

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.analysis.differentiation import Differentiation
    from remat_lint.analysis.last_stage import LastStage
    from remat_lint.analysis.sites import RematSite
    from remat_lint.project.model import Project, ProjectModule
else:
    cst = LazyModule("libcst")

# libcst and the analyses are imported where a file is checked: the project phase (check_project),
# often all a warm run does, needs neither (tests/engine/test_scale.py).

# Measured on jax 0.10.2 (tests/jax_claims/test_grad.py): the last 2 of 6 residual-MLP blocks
# checkpointed, barriers kept.
EFFECT = {
    "grad": "under `{t}` the checkpoint saves nothing (compiled: the same FLOPs and temp memory)",
    # A tail that needs the stage's output for its own gradient (``**``, ``log_softmax``, a loss).
    "grad nonlinear": (
        "under `{t}` what follows needs the stage's output for its gradient, so the stage runs twice, "
        "before the loss and again in the backward pass (measured on JAX 0.10.2, a 2-block stage: "
        "+9 % FLOPs for -8 % temp after 4 blocks, +18 % FLOPs for -14 % temp after 1)"
    ),
    "grad unsure": (
        "under `{t}` the checkpoint is a no-op when what follows is linear in the stage's output, and "
        "otherwise the stage runs twice (measured on JAX 0.10.2, a 2-block stage: "
        "+9 % FLOPs for -8 % temp after 4 blocks, +18 % FLOPs for -14 % temp after 1)"
    ),
    "value_and_grad": (
        "under `{t}` it recomputes the stage in the backward pass (measured on JAX 0.10.2, last 2 of 6 blocks: "
        "+9 to +11 % FLOPs; temp unchanged with the loss inside the stage, -8 % with a squared error after it, "
        "+18 % with only a mean after it)"
    ),
    # The stage is the whole forward pass (all the expensive work): measured over 1-8 layers, two
    # layer kinds, four tails (tests/jax_claims/test_whole_model.py, docs/whole-model-checkpoints.md).
    "whole": (
        "under `{t}` it is the whole forward pass, so the forward runs twice, before the loss and again in the "
        "backward pass (measured on JAX 0.10.2, 1 to 8 layers: "
        "+20 to +50 % FLOPs; temp memory at most one activation lower, up to 41 % higher)"
    ),
    "grad unsure whole": (
        "under `{t}` the checkpoint is a no-op when what follows is linear in the stage's output, and otherwise "
        "the whole forward pass runs twice (measured on JAX 0.10.2, 1 to 8 layers: +20 to +50 % FLOPs; temp "
        "memory at most one activation lower)"
    ),
    "hessian": "it saves no memory",
}
# Operations after the stage whose gradient does not need its output (under grad, the forward
# pass of the stage is then dead code); ``*`` and ``/`` may be either.
_WHOLE = ("whole", "grad unsure whole")  # the effects of a checkpoint of the whole forward pass
_WORST_FIRST = ("value_and_grad", "hessian", "grad")  # reverse mode: forward mode keeps no residuals
_LINEAR = frozenset(
    {
        "+",
        "-",
        "mean",
        "sum",
        "astype",
        "reshape",
        "squeeze",
        "transpose",
        "ravel",
        "flatten",
        "stop_gradient",
        "pmean",
        "psum",
        "tuple",
        "dict",
        "get",
        "float",
        "add",
        "subtract",
        "negative",
        "take",
        "take_along_axis",
        "concatenate",
        "stack",
        "expand_dims",
        "swapaxes",
    }
)
_MAYBE_LINEAR = frozenset({"*", "/", "multiply", "divide", "true_divide", "where"})


class CheckpointLastStage(Rule):
    """
    ## What it does
    Flags, inside a function that is differentiated in the same module (`jax.grad(loss)`,
    `@jax.value_and_grad`...), a call of a checkpointed function whose result reaches the return
    with only cheap work after it: elementwise arithmetic, reductions, the loss (`jnp.mean`,
    `optax.softmax_cross_entropy`...), `.mean()`, indexing.

    The stage may be a few calls down: in a function of the same module that the differentiated
    one calls in its own cheap tail (`return head(params, h).mean()`, where `head` returns a
    checkpointed call), up to three calls deep; the message names the functions on the way.
    Across modules: the last stage of a module-level function that another module of the project
    differentiates (`jax.value_and_grad(loss_fn)` in `train.py`), or calls last in a function it
    differentiates (`return forward(params, x).mean()`), is reported too, and the message names
    the place of the differentiation. So is one a grad reaches through other modules' cheap tails,
    also through a plain function of a module on the way (`loss` ends with `_inner`, which ends
    with `head`), up to three calls away: `train.py` differentiates `loss` of `model.py`, which ends with
    `head(params, h)` of `layers.py`, whose last stage is a checkpointed call, or which is itself
    a checkpoint (`@jax.checkpoint def head`, `head = jax.checkpoint(f)`: reported there, unless a
    grad differentiates it whole, REM101's case, or a loop body in the project calls it).

    Where it is reported: at the checkpointed last stage (the line to change), also when the grad
    is in another module: the message names the grad, and JSON and SARIF carry it as a related
    location. Linting only the module with the grad reports nothing there.

    ## Why is this bad?
    A checkpoint saves memory only when something runs between its forward pass and its backward
    pass: its residuals would otherwise stay alive during that time. The last stage before the
    loss has nothing after it, so the backward pass starts with it: its residuals are needed at
    once, and the peak is the same with or without the checkpoint. Measured (jax 0.10.2, 6
    residual-MLP blocks, the last 2 checkpointed): under `grad` the compiled program is identical
    (a no-op) when only a sum or mean follows, and when what follows needs the stage's output for
    its gradient (`(out - y) ** 2`, a cross-entropy) the stage runs twice, +9 % FLOPs for -8 %
    temp (+18 % for -14 % with 1 block before it); under `value_and_grad` the stage is recomputed,
    +9 to +11 % FLOPs, for temp memory unchanged (the loss inside the stage), -8 % (a squared
    error after it) or +18 % (only a mean after it).
    `saved_residuals` does list fewer residuals, which is why this looks like a saving.

    Whole-model checkpoints: when the stage is all the expensive work (the whole forward pass:
    `jax.checkpoint(forward)(params, x)`, `nnx.remat(lambda m: m(x))(model)`,
    `eqx.filter_checkpoint(model)(x)`, `model.apply(params, x)` of a `model = nn.remat(GPT)()`,
    `RematGPT().apply(params, x)` with `RematGPT = nn.remat(GPT)`,
    or `return data_loss(p, b) + l2(p)` with `data_loss` checkpointed and `l2` a function of this
    module made of cheap work), the backward pass needs all of the model's residuals at once.
    Measured on jax 0.10.2 over 192 configurations (tanh-MLP layers and pre-LN residual-MLP
    blocks, 1 to 8 of them, batch x width 8x32 to 256x512, a squared error, a cross-entropy, a
    mean or a sum after it, `grad` and `value_and_grad`; docs/whole-model-checkpoints.md): with a
    tail that needs the model's output, and under `value_and_grad` with any tail, the forward
    runs twice, +20 to +50 % FLOPs, every time; temp memory is at most one activation of the
    widest layer lower (unchanged in a tanh MLP; -29 % for one residual block, -6 % for eight)
    and up to 41 % higher (`value_and_grad`, only a mean after it). Under `grad` with only a sum
    or mean after it, the checkpoint is a no-op. The same holds for `nn.remat`, `nnx.remat`,
    `hk.remat` and `eqx.filter_checkpoint`. Per-layer checkpoints are what save memory.

    Only the function handed to the transform is examined, so a helper that is one stage of a
    longer chain is never reported; the message says what follows the call. Not reported when
    anything else that may be expensive follows it (a model call, an unknown function, `@`,
    another checkpoint); when the call is in a loop, a branch or a comprehension; when the
    checkpoint has a policy that saves something, is a linen `nn.remat` called directly (that
    constructs a Module; `model.apply` of its instance is the stage) or is also a loop body;
    when the gradient may itself be differentiated (see REM101: differentiated again in the module, or summed into a loss) or
    is a `vjp` whose pullback is kept for later;
    and in test code (files matching `test-paths`, `if __name__ == "__main__":` blocks that
    do not train, `with mock.patch(...)` blocks, `test_*` functions), which differentiates single
    checkpointed functions on purpose.

    ## Example
    ```python
    import jax

    encoder = jax.checkpoint(encoder)
    head = jax.checkpoint(head)

    def loss(params, x, y):
        h = encoder(params, x)
        logits = head(params, h)
        return optax.softmax_cross_entropy(logits, y).mean()

    grads = jax.grad(loss)(params, x, y)
    ```

    ## Use instead
    ```python
    import jax

    encoder = jax.checkpoint(encoder)

    def loss(params, x, y):
        h = encoder(params, x)
        logits = head(params, h)
        return optax.softmax_cross_entropy(logits, y).mean()

    grads = jax.grad(loss)(params, x, y)
    ```

    ## Fix safety
    No fix: the checkpoint may be there for another caller.

    ## References
    - [Gradient checkpointing with `jax.checkpoint`](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [jax-ml/jax PR #7989: what a checkpoint saves depends on what is live around it](https://github.com/jax-ml/jax/pull/7989)
    """

    code = "REM102"
    trace_check = Rule.TraceCheck("cost", cost="recompute-for-nothing")
    name = "checkpoint-last-stage"
    severity = Severity.WARNING
    project_wide = True  # the loss may be differentiated in another module
    quiet_in_tests = True  # tests differentiate single checkpointed functions on purpose

    VALID = [
        # An earlier stage: the head runs after it.
        "import jax\nenc = jax.checkpoint(enc)\ndef loss(p, x):\n    h = enc(p, x)\n    return jnp.mean(head(p, h))\ng = jax.grad(loss)",
        # A helper that is one stage of a chain; the differentiated function does more after it.
        (
            "import jax\nimport jax.numpy as jnp\nf3 = jax.checkpoint(f3)\ndef stage(p, h):\n    return jnp.mean(f3(p, h))\n"
            "def loss(p, x):\n    return stage(p, x) + reg(p)\ng = jax.grad(loss)"
        ),
        # Per-chunk calls in a comprehension.
        "import jax\nimport jax.numpy as jnp\nck = jax.checkpoint(chunk_loss)\ndef loss(p, cs):\n"
        "    return jnp.mean(jnp.stack([ck(p, c) for c in cs]))\ng = jax.grad(loss)",
        # Not differentiated here.
        "import jax\nimport jax.numpy as jnp\nck = jax.checkpoint(model)\ndef loss(p, x):\n    return jnp.mean(ck(p, x))",
        # A policy that saves the matmuls.
        (
            "import jax\nimport jax.numpy as jnp\nck = jax.checkpoint(model, policy=jax.checkpoint_policies.dots_saveable)\n"
            "def loss(p, x):\n    return jnp.mean(ck(p, x))\ng = jax.grad(loss)"
        ),
        # Per-layer checkpoints.
        "import jax\nimport jax.numpy as jnp\ndef loss(ps, x, y):\n    for p in ps:\n"
        "        x = jax.checkpoint(layer)(p, x)\n    return jnp.mean((x - y) ** 2)\ng = jax.grad(loss)",
        # A matmul follows.
        "import jax\nck = jax.checkpoint(model)\ndef loss(p, x):\n    return (ck(p, x) @ p['w']).sum()\ng = jax.grad(loss)",
    ]
    INVALID = [
        # The whole forward pass, then the loss.
        Invalid(
            "import jax\nimport jax.numpy as jnp\ndef loss(p, x, y):\n"
            "    return jnp.mean((jax.checkpoint(forward)(p, x) - y) ** 2)\ng = jax.grad(loss)"
        ),
        Invalid(
            "import optax\nfrom flax import nnx\ndef loss(model, x, y):\n"
            "    return optax.softmax_cross_entropy(nnx.remat(lambda m: m(x))(model), y).mean()\ng = nnx.grad(loss)"
        ),
        Invalid(
            "import flax.linen as nn\nimport jax\nimport jax.numpy as jnp\nmodel = nn.remat(GPT)()\n"
            "def loss(params, x, y):\n    return jnp.mean((model.apply(params, x) - y) ** 2)\ng = jax.grad(loss)"
        ),
        Invalid(
            "import jax\nimport jax.numpy as jnp\nhead = jax.checkpoint(head)\ndef loss(p, x, y):\n    h = body(p, x)\n"
            "    logits = head(p, h)\n    return jnp.mean((logits - y) ** 2)\ng = jax.value_and_grad(loss)"
        ),
        Invalid(
            "import jax\nimport optax\n@jax.checkpoint\ndef model(p, x):\n    return x\n@jax.grad\n"
            "def loss(p, x, y):\n    return optax.softmax_cross_entropy(model(p, body(p, x)), y).mean()"
        ),
        Invalid(
            "import jax\nimport jax.numpy as jnp\nloss_grad = jax.grad(lambda p, x: jnp.sum(jax.checkpoint(f)(p, x)))"
        ),
    ]

    def check(self) -> None:
        from remat_lint.analysis.differentiation import pullback_deferred
        from remat_lint.analysis.last_stage import last_stages
        from remat_lint.analysis.smoke_tests import in_smoke_test

        ctx = self.ctx
        if not ctx.sites:
            return
        reported: set[int] = set()
        for d in ctx.differentiations.all:
            function = d.denoted.function
            if function is None or d.denoted.sites or d.denoted.wrapped or not d.api.reverse:
                continue  # no body here, or checkpointed whole (REM101)
            if in_smoke_test(ctx.model, d.node) or pullback_deferred(ctx.model, d):
                continue
            if not ctx.differentiations.first_order(d, ctx.bodies):
                continue
            for stage in last_stages(ctx.model, ctx.callables, function):
                if id(stage.call) in reported or any(self._exempt(s, stage.applied) for s in stage.sites):
                    continue
                reported.add(id(stage.call))
                self.report(stage.call, self._message(d, function, stage))
        differentiated = {id(d.denoted.function) for d in ctx.differentiations.all}
        self._exported(
            [
                s
                for s in ctx.module.body
                if isinstance(s, cst.FunctionDef)
                and id(s) not in differentiated
                and not any(ctx.callables.site_of(d) for d in s.decorators)  # a whole checkpoint is REM101's
            ]
        )
        self._exported_checkpoints(
            {id(s) for d in ctx.differentiations.all for s in (d.denoted.sites or d.denoted.wrapped)}
        )

    def _exported_checkpoints(self, differentiated: set[int]) -> None:
        """The checkpoints other modules can import under a name (``@jax.checkpoint def head``,
        ``head = jax.checkpoint(f)``) and this one does not differentiate whole (REM101's case,
        which also makes these candidates): a function of another module may end with a call of
        one, which is then its last stage."""
        from remat_lint.analysis.exports import exported_name

        for site in self.ctx.sites:
            skip = id(site) in differentiated or self._exempt(site)
            name = exported_name(self.ctx.model, site) if not skip else None
            if name is not None:
                of: dict[str, dict[str, list[str]]] = {name: {"after": [], "through": []}}
                self.candidate(site.node, [name], {"called": name, "of": of, "checkpoint": True})

    def _exported(self, functions: list[cst.FunctionDef]) -> None:
        """The last stages of module-level functions that another module may differentiate: the
        project phase decides (check_project). One candidate per stage, with every function
        whose last stage it is."""
        from remat_lint.analysis.last_stage import last_stages

        stages: dict[int, tuple[LastStage, dict[str, dict[str, Any]]]] = {}
        for function in functions:
            for stage in last_stages(self.ctx.model, self.ctx.callables, function):
                if not any(self._exempt(s, stage.applied) for s in stage.sites):
                    of = stages.setdefault(id(stage.call), (stage, {}))[1]
                    of[function.name.value] = {"after": stage.after, "through": stage.through, "whole": stage.whole}
        for stage, of in stages.values():
            self.candidate(stage.call, list(of), {"called": self.ctx.code(stage.call.func), "of": of})

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """Confirm the candidates whose function another module differentiates (reverse mode)."""
        from remat_lint.project.model import related

        kept = []
        for candidate in candidates:
            finding, data = candidate.finding, candidate.values
            checkpoint = bool(data.get("checkpoint"))  # the symbol is the checkpoint itself
            reaches = [
                (name, reach)
                for name in candidate.symbols
                for reach in project.differentiations_reaching((module.name, name))
                if reach.differentiation.kind in _WORST_FIRST
            ]
            if checkpoint and (
                any(reach.whole for _, reach in reaches)  # differentiated whole: REM101's
                or project.in_loop_body((module.name, candidate.symbols[0]))
            ):
                continue
            if reaches:
                # The worst grad; of equals, one of the function itself (its stage's own tail is known).
                name, reach = min(reaches, key=lambda use: (use[1].rank(_WORST_FIRST), bool(use[1].path)))
                d = reach.differentiation
                where = f"{os.path.relpath(reach.module.path, os.path.dirname(module.path))}:{d.row}"
                stage = data["of"][name]
                after = [*stage["after"], *reach.after]
                # Differentiated itself, or called last by the differentiated function (through other tails).
                on_way = () if checkpoint else (name,)
                through = (*reach.path[1:], *on_way, *stage["through"]) if reach.path else tuple(stage["through"])
                differentiated = reach.path[0] if reach.path else name
                # The whole forward pass only when the differentiated function is the stage's own.
                whole = bool(stage.get("whole")) and not reach.path and not reach.after
                key = _effect_key(d.kind, after, whole)
                effect = EFFECT[key].format(t=d.transform)
                finding.message = message(
                    data["called"], f"`{differentiated}`", after, effect, through, where, whole=key in _WHOLE
                )
                finding.data = {"symbol": name, "differentiated_at": where}
                finding.related = (related(reach.module, d.row, f"differentiated here by `{d.transform}`"),)
                kept.append(finding)
        return kept

    def _exempt(self, site: RematSite, applied: bool = False) -> bool:
        """A checkpoint with a policy that saves something, one made for a loop body, or a linen
        remat (calling its result constructs a Module) unless an instance's ``apply`` is the stage."""
        from remat_lint.analysis.differentiation import default_policy

        if site.api.family == "flax" and not applied:
            return True
        return not default_policy(self.ctx.model, site) or self.ctx.loops.is_loop_body(site)

    def _message(self, d: Differentiation, function: cst.FunctionDef | cst.Lambda, stage: LastStage) -> str:
        ctx = self.ctx
        name = f"`{function.name.value}`" if isinstance(function, cst.FunctionDef) else "the differentiated lambda"
        transform = ctx.code(d.node.func if isinstance(d.node, cst.Call) else d.node.decorator)
        key = _effect_key(d.api.kind, stage.after, stage.whole)
        effect = EFFECT[key].format(t=transform)
        return message(ctx.code(stage.call.func), name, stage.after, effect, stage.through, whole=key in _WHOLE)


def message(
    called: str,
    name: str,
    after: list[str],
    effect: str,
    through: tuple[str, ...] = (),
    where: str | None = None,
    whole: bool = False,
) -> str:
    """``through``: the functions the differentiated one calls to reach the stage; ``where``: the
    place of the differentiation, when it is in another module; ``whole``: the stage is the whole
    forward pass."""
    follows = (
        f"Only cheap work follows it ({', '.join(f'`{a}`' for a in after[:4])})"
        if after
        else "Its result is returned as it is"
    )
    via = f" (through {', '.join(f'`{f}`' for f in through)})" if through else ""
    return (
        f"`{called}(...)` is the last stage of {name}{via}: checkpointing it saves little or no memory. "
        f"{follows}, so nothing computed later keeps memory "
        f"live and the backward pass needs its residuals at once; {effect}"
        + (f" (differentiated at {where})" if where else "")
        + f". Checkpoint {'the layers or blocks inside it' if whole else 'an earlier stage'} instead"
    )


def _effect_key(kind: str, after: list[str], whole: bool) -> str:
    """The EFFECT of a stage followed by ``after``; ``whole``: the stage is all the expensive work."""
    key = _effect_of(kind, after)
    if whole and key in ("grad nonlinear", "value_and_grad"):
        return "whole"
    return "grad unsure whole" if whole and key == "grad unsure" else key


def _effect_of(kind: str, after: list[str]) -> str:
    if kind != "grad":
        return kind
    # A cheap function of this module (``l2()``) may not take the stage's output at all.
    functions = {a for a in after if a.endswith("()") and a[:-2].isidentifier()}
    ops = {a.strip(".()").rsplit(".", 1)[-1] for a in after if a not in functions}
    maybe = bool(functions)
    if ops <= _LINEAR and not maybe:
        return "grad"
    return "grad unsure" if ops <= _LINEAR | _MAYBE_LINEAR else "grad nonlinear"
