"""The analysis behind REM101-REM103 and REM301: differentiated callables in every form, the
flow-sensitive resolution of re-bound names, loop and vmap bodies, last stages, test code."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from remat_lint.analysis.last_stage import last_stages
from remat_lint.analysis.smoke_tests import in_smoke_test
from remat_lint.engine.context import LintContext
from tests.helpers import lint


def context(code: str) -> LintContext:
    source = textwrap.dedent(code)
    return LintContext("example.py", source, cst.parse_module(source))


def differentiated(code: str) -> list[tuple[str, str, list[str], str | None]]:
    """(api, kind, checkpoint sites wrapping the whole function, the function's name)."""
    ctx = context(code)
    found = []
    for d in ctx.differentiations.all:
        function = d.denoted.function
        name = function.name.value if isinstance(function, cst.FunctionDef) else ("lambda" if function else None)
        found.append((d.api.qname, d.api.kind, [ctx.code(s.node).strip() for s in d.denoted.sites], name))
    return found


# --- forms of differentiation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import jax\ng = jax.grad(jax.checkpoint(loss))", ("jax.grad", "grad", ["jax.checkpoint(loss)"], None)),
        (
            "import jax as j\ng = j.value_and_grad(fun=j.checkpoint(loss))",
            ("jax.value_and_grad", "value_and_grad", ["j.checkpoint(loss)"], None),
        ),
        ("from jax import vjp, remat\nout = vjp(remat(f), x)", ("jax.vjp", "value_and_grad", ["remat(f)"], None)),
        ("import jax\nj = jax.jacfwd(f)", ("jax.jacfwd", "forward", [], None)),
        (
            "import jax\n@jax.grad\n@jax.checkpoint\ndef f(x):\n    return x",
            ("jax.grad", "grad", ["@jax.checkpoint"], "f"),
        ),
        ("import jax\n@jax.checkpoint\n@jax.grad\ndef f(x):\n    return x", ("jax.grad", "grad", [], "f")),
        (
            "import functools, jax\n@functools.partial(jax.value_and_grad, has_aux=True)\ndef f(x):\n    return x, x",
            ("jax.value_and_grad", "value_and_grad", [], "f"),
        ),
        (
            "import functools, jax\ng = functools.partial(jax.grad, argnums=1)(jax.checkpoint(f))",
            ("jax.grad", "grad", ["jax.checkpoint(f)"], None),
        ),
        (
            "from functools import partial\nimport jax\nG = partial(jax.grad, argnums=1)\ndef f(x):\n    return x\n"
            "g = G(f)",
            ("jax.grad", "grad", [], "f"),
        ),
        ("from flax import nnx\n@nnx.grad(argnums=1)\ndef f(m, x):\n    return x", ("flax.nnx.grad", "grad", [], "f")),
        (
            "from flax import nnx\ng = nnx.value_and_grad(argnums=1)(nnx.remat(f))",
            ("flax.nnx.value_and_grad", "value_and_grad", ["nnx.remat(f)"], None),
        ),
        (
            "import equinox as eqx\ng = eqx.filter_grad(eqx.filter_checkpoint(f))",
            ("equinox.filter_grad", "grad", ["eqx.filter_checkpoint(f)"], None),
        ),
        ("import haiku as hk\ng = hk.grad(hk.remat(f))", ("haiku.grad", "grad", ["hk.remat(f)"], None)),
        (
            "import flax.linen as nn\ny = nn.grad(lambda mdl, x: mdl(x), self, x)",
            ("flax.linen.grad", "grad", [], "lambda"),
        ),
        (
            "import jax\ng = jax.hessian(jax.checkpoint(lambda x: x))",
            ("jax.hessian", "hessian", ["jax.checkpoint(lambda x: x)"], "lambda"),
        ),
    ],
)
def test_every_form_of_differentiation(code, expected):
    assert differentiated(code) == [expected]


@pytest.mark.parametrize(
    "code",
    [
        "def grad(f):\n    return f\ng = grad(f)",  # a local function named grad
        "import torch\ng = torch.autograd.grad(y, x)",
        "import jax\ng = jax.grad",  # passed as a value
        "from flax import nnx\ng = nnx.grad(argnums=1)",  # a factory, not applied
        "import jax\ng = jax.grad(*args)",
    ],
)
def test_not_a_differentiation(code):
    assert differentiated(code) == []


def test_partial_of_the_function_is_the_function():
    code = "import functools, jax\n@jax.checkpoint\ndef loss(p, b):\n    return p\ng = jax.grad(functools.partial(loss, b=1))"
    assert differentiated(code) == [("jax.grad", "grad", ["@jax.checkpoint"], "loss")]


def test_lambda_calling_a_checkpoint_is_wrapped():
    ctx = context("import jax\nck = jax.checkpoint(loss)\ng = jax.grad(lambda p: ck(p, x))")
    (d,) = ctx.differentiations.all
    assert d.denoted.sites == [] and [ctx.code(s.node) for s in d.denoted.wrapped] == ["jax.checkpoint(loss)"]


# --- re-bound names -------------------------------------------------------------------------------

REBOUND = """
import jax

def loss(p):
    return p

before = jax.grad(loss)
loss = jax.checkpoint(loss)
after = jax.grad(loss)

def step(p):
    return jax.grad(loss)(p)
"""


def test_the_binding_that_reaches_each_use():
    assert differentiated(REBOUND) == [
        ("jax.grad", "grad", [], "loss"),  # before the re-binding: the plain def
        ("jax.grad", "grad", ["jax.checkpoint(loss)"], "loss"),
        ("jax.grad", "grad", ["jax.checkpoint(loss)"], "loss"),  # a nested function runs later
    ]


@pytest.mark.parametrize(
    ("code", "conditional"),
    [
        ("import jax\ndef make(loss, remat):\n    loss = jax.checkpoint(loss)\n    return jax.grad(loss)", False),
        (
            "import jax\ndef loss(p):\n    return p\nif remat:\n    loss = jax.checkpoint(loss)\ng = jax.grad(loss)",
            True,
        ),
        (
            "import jax\ndef make(loss, remat):\n    if remat:\n        loss = jax.checkpoint(loss)\n    return jax.grad(loss)",
            True,
        ),
        ("import jax\nif remat:\n    f = jax.checkpoint(loss)\nelse:\n    f = loss\ng = jax.grad(f)", True),
    ],
)
def test_checkpoints_on_some_paths_are_conditional(code, conditional):
    ctx = context(code)
    (d,) = ctx.differentiations.all
    assert [ctx.code(s.node) for s in d.denoted.sites] == ["jax.checkpoint(loss)"]
    assert d.denoted.conditional is conditional


def test_a_later_unconditional_binding_hides_earlier_ones():
    code = "import jax\nf = jax.checkpoint(loss)\nif x:\n    f = other\nf = plain\ng = jax.grad(f)"
    assert [sites for _, _, sites, _ in differentiated(code)] == [[]]


# --- loops ----------------------------------------------------------------------------------------

LOOPS = """
import functools
import flax.linen as nn
import jax
from flax import nnx

def body(c, x):
    return c, x

body = jax.checkpoint(body)
a = jax.lax.scan(body, 0, xs)
b = jax.lax.fori_loop(0, 3, jax.checkpoint(lambda i, c: c), 0)
c = jax.lax.while_loop(cond, body_fun=jax.remat(step), init_val=0)
d = nn.scan(nn.remat(Block), variable_axes={"params": 0})
e = jax.lax.map(functools.partial(chunk, k=1), xs)
f = jax.vmap(jax.checkpoint(per_example))
g = jax.lax.scan(*args)

@nnx.scan(in_axes=(nnx.Carry, 0))
@nnx.remat
def forward(x, layer):
    return layer(x)
"""


def test_loop_bodies_and_their_checkpoints():
    ctx = context(LOOPS)
    bodies = [(b.api, b.kind, [ctx.code(s.node).strip() for s in b.denoted.sites]) for b in ctx.loops.bodies]
    assert bodies == [
        ("jax.lax.scan", "loop", ["jax.checkpoint(body)"]),
        ("jax.lax.fori_loop", "loop", ["jax.checkpoint(lambda i, c: c)"]),
        ("jax.lax.while_loop", "loop", ["jax.remat(step)"]),
        ("flax.linen.scan", "loop", ["nn.remat(Block)"]),
        ("jax.lax.map", "loop", []),
        ("jax.vmap", "vmap", ["jax.checkpoint(per_example)"]),
        ("flax.nnx.scan", "loop", ["@nnx.remat"]),
    ]
    loop_sites = [ctx.code(s.node).strip() for s in ctx.sites if ctx.loops.is_loop_body(s)]
    assert "jax.checkpoint(per_example)" not in loop_sites  # vmap is not a loop
    assert len(loop_sites) == 5 and ctx.loops.has_loops


def test_code_that_runs_per_iteration():
    ctx = context(
        "import jax\ndef body(c, x):\n    return f(c), None\ny = jax.lax.scan(body, 0, xs)\n"
        "for mb in mbs:\n    g(mb)\nz = [h(v) for v in vs]\nw = jax.vmap(k(1))\nonce = top(1)\n"
    )
    per_iteration = {ctx.code(c.func) for c in ctx.model.calls if ctx.loops.in_body(c)}
    assert per_iteration == {"f", "g", "h", "k"}


# --- last stages ----------------------------------------------------------------------------------


def stages(body: str) -> list[tuple[str, list[str]]]:
    code = "import jax\nimport jax.numpy as jnp\nimport optax\nck = jax.checkpoint(model)\n" + textwrap.dedent(body)
    ctx = context(code)
    function = next(i.node for i in ctx.model.functions.values() if isinstance(i.node, cst.FunctionDef))
    return [(ctx.code(s.call), s.after) for s in last_stages(ctx.model, ctx.callables, function)]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("def f(p, x):\n    return ck(p, x)\n", [("ck(p, x)", [])]),
        (
            "def f(p, x):\n    y = ck(p, body(x))\n    e = y - 1\n    return jnp.mean(e ** 2), {'e': e}\n",
            [("ck(p, body(x))", ["-", "jnp.mean", "**"])],
        ),
        (
            "def f(p, x, t):\n    return optax.softmax_cross_entropy(ck(p, x), t).mean()\n",
            [("ck(p, x)", [".mean()", "optax.softmax_cross_entropy"])],
        ),
        ("def f(p, x):\n    y = ck(p, x)\n    y += 1\n    return y.sum()\n", [("ck(p, x)", ["+", ".sum()"])]),
    ],
)
def test_last_stage_with_a_cheap_tail(body, expected):
    assert stages(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "def f(p, x):\n    return head(ck(p, x))\n",  # an unknown function follows
        "def f(p, x):\n    return jnp.sum(ck(p, x) @ p)\n",  # a matmul follows
        "def f(p, x):\n    return jnp.einsum('ij,jk->ik', ck(p, x), p).sum()\n",
        "def f(p, x):\n    y = ck(p, x)\n    return jnp.mean(x)\n",  # the result never reaches the return
        "def f(p, x):\n    y = ck(p, x)\n    if y.ndim:\n        y = y + 1\n    return y\n",  # a branch follows
        "def f(p, xs):\n    return sum(ck(p, x) for x in xs)\n",  # per chunk
        "def f(p, x):\n    for w in p:\n        x = ck(w, x)\n    return x.sum()\n",  # in a loop
        "def f(p, x):\n    return ck(p, x) + ck(p, -x)\n",  # another checkpoint follows
    ],
)
def test_no_last_stage(body):
    assert stages(body) == []


# --- test code ------------------------------------------------------------------------------------


def test_smoke_tests_are_test_code():
    ctx = context(
        "import jax\nfrom unittest import mock\nreal = jax.grad(f)\n"
        "if __name__ == '__main__':\n    a = jax.grad(g)\nelse:\n    b = jax.grad(h)\n"
        "def test_it():\n    jax.grad(k)\n"
        "with mock.patch.object(jax, 'checkpoint', wraps=jax.checkpoint):\n    jax.grad(m)\n"
    )
    in_test = {ctx.code(d.target): in_smoke_test(ctx.model, d.node) for d in ctx.differentiations.all}
    assert in_test == {"f": False, "g": True, "h": False, "k": True, "m": True}


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import jax\ng = jax.grad(jax.checkpoint(loss))", [True]),
        ("import jax\ndef train_step(p):\n    return jax.grad(jax.checkpoint(f))(p)", [True]),
        ("import jax\nloss_grad_fn = jax.grad(f)", [True]),
        ("import jax\nforces_fn = jax.grad(jax.checkpoint(energy))", [True]),  # names do not decide
        (  # forces trained on: a loss of them is differentiated in the module
            "import jax\ndef forces(p):\n    return jax.grad(jax.checkpoint(energy))(p)\n"
            "def loss(p):\n    return forces(p).sum()\ng = jax.grad(loss)",
            [False, True],
        ),
        ("import jax\ndef inner(p):\n    return jax.grad(loss)(p).sum()\nouter = jax.grad(inner)", [False, True]),
        ("import jax\nh = jax.grad(jax.grad(loss))", [True, False]),  # the outer, then the inner one
    ],
)
def test_first_order_gradients(code, expected):
    ctx = context(code)
    found = [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all]
    assert found == expected


def test_a_gradient_inside_a_loss_is_differentiated_again():
    # nequix: forces (and a jvp of them) computed in the loss that train_step differentiates.
    code = (
        "import jax\ndef loss(model, graph, checkpoint_grad_energy):\n    def total_energy_fn(x):\n        return x.sum()\n"
        "    if checkpoint_grad_energy:\n        grad_energy = jax.grad(jax.checkpoint(total_energy_fn))\n"
        "    else:\n        grad_energy = jax.grad(total_energy_fn)\n    return grad_energy(graph).sum()\n"
    )
    ctx = context(code)
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [False, False]


def test_a_conditional_expression_denotes_either_side():
    ctx = context("import jax\nforward = jax.checkpoint(forward_fn) if remat else forward_fn\ng = jax.grad(forward)")
    (d,) = ctx.differentiations.all
    assert [ctx.code(s.node) for s in d.denoted.sites] == ["jax.checkpoint(forward_fn)"] and d.denoted.conditional


def test_decorated_vmap_bodies_run_per_element():
    ctx = context(
        "import functools, jax\n@jax.vmap\ndef per_example(x):\n    return jax.grad(jax.checkpoint(loss))(x)\n"
        "@functools.partial(jax.vmap, in_axes=(None, 0))\ndef per_row(w, x):\n    return jax.grad(jax.checkpoint(loss))(w, x)\n"
        "whole = jax.grad(jax.checkpoint(loss))\n"
    )
    assert [ctx.loops.in_body(d.node) for d in ctx.differentiations.all] == [True, True, False]


@pytest.mark.parametrize(
    ("checkpoint", "reported"),
    [
        ("jax.checkpoint(loss)", True),
        ("jax.checkpoint(loss, policy=None)", True),
        ("jax.checkpoint(loss, policy=jax.checkpoint_policies.nothing_saveable)", True),
        ("jax.checkpoint(loss, policy=jax.checkpoint_policies.dots_saveable)", False),  # saves more: -10 % temp
        ("jax.checkpoint(loss, **opts)", False),  # the options may hold a policy
    ],
)
def test_rem101_reports_a_whole_loss_checkpoint_only_with_the_default_policy(checkpoint, reported):
    code = f"import jax\ndef loss(p, x):\n    return ((p * x) ** 2).mean()\nopts = {{}}\ng = jax.value_and_grad({checkpoint})\n"
    assert [(f.code, f.start.row, f.start.column) for f in lint(code)] == ([("REM101", 5, 23)] if reported else [])


@pytest.mark.parametrize("word", ["loss", "objective", "cost", "mse", "nll", "entropy", "helper", "compute"])
def test_a_gradient_taken_inside_a_loss_is_not_first_order(word):  # the function returns a sum of it, whatever its name
    ctx = context(f"import jax\ndef {word}_fn(p):\n    return jax.grad(g)(p).sum()\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [False]


@pytest.mark.parametrize("word", ["train", "step", "update", "fit", "optimize", "loss", "energy", "helper"])
def test_a_gradient_of_an_energy_taken_in_a_training_step_is_first_order(word):
    ctx = context(f"import jax\ndef {word}_fn(p):\n    return jax.grad(energy)(p)\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True]


@pytest.mark.parametrize(
    "word", ["loss", "objective", "cost", "mse", "nll", "entropy", "train", "step", "update", "fit", "optimize"]
)
def test_a_gradient_named_for_training_is_first_order_even_of_an_energy(word):
    ctx = context(f"import jax\n{word}_grad = jax.grad(energy)\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True]


@pytest.mark.parametrize("word", ["energy", "potential", "force", "hamiltonian", "lagrangian", "inner", "meta"])
def test_a_gradient_named_for_physics_or_an_inner_loop_is_judged_as_any_other(word):
    ctx = context(f"import jax\n{word}_grad = jax.grad(g)\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # grad with has_aux returns the primal's outputs too: its forward runs as value_and_grad's does
        (
            "import jax\ng = jax.grad(jax.checkpoint(loss), has_aux=True)",
            [("jax.grad", "value_and_grad", ["jax.checkpoint(loss)"], None)],
        ),
        (
            "import jax\ng = jax.grad(jax.checkpoint(loss), has_aux=aux)",
            [("jax.grad", "value_and_grad", ["jax.checkpoint(loss)"], None)],
        ),
        (
            "import jax\ng = jax.grad(jax.checkpoint(loss), has_aux=False)",
            [("jax.grad", "grad", ["jax.checkpoint(loss)"], None)],
        ),
        (
            "import functools, jax\ng = functools.partial(jax.grad, has_aux=True)(jax.checkpoint(loss))",
            [("jax.grad", "value_and_grad", ["jax.checkpoint(loss)"], None)],
        ),
        (
            "from flax import nnx\ng = nnx.grad(has_aux=True)(nnx.remat(loss))",
            [("flax.nnx.grad", "value_and_grad", ["nnx.remat(loss)"], None)],
        ),
        ("import jax\nG = jax.grad\ng = G(loss)", [("jax.grad", "grad", [], None)]),
        (
            "import functools, jax\n@functools.partial(jax.grad, has_aux=True)\ndef f(x):\n    return x, x",
            [("jax.grad", "value_and_grad", [], "f")],
        ),
        # partial(jax.grad, loss) already holds the function: calling it evaluates the gradient
        ("import functools, jax\ng = functools.partial(jax.grad, loss)(x)", []),
        ("import functools, jax\ng = functools.partial(jax.grad, *a)(loss)", []),
        ("import jax\nG = H\nH = G\ng = G(loss)", []),  # bound to another name, not to a transform call
    ],
)
def test_has_aux_and_transform_forms(code, expected):
    assert differentiated(code) == expected


def test_a_decorated_gradient_is_judged_by_its_name_not_its_body():
    ctx = context("import jax\n@jax.grad\ndef f(x):\n    return potential(x)\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True]


@pytest.mark.parametrize(
    ("body", "first_order"),
    [
        ("    return jax.grad(energy)(p)\n", True),
        ("    forces = jax.grad(energy)(p)\n    return jnp.mean((forces - target) ** 2)\n", False),
        ("    grad_fn = jax.grad(energy)\n    return (grad_fn(p) ** 2).sum()\n", False),
        ("    g = jax.grad(energy)(p)\n    return p - 0.1 * g, jnp.mean(p)\n", True),  # the sum is not of the gradient
    ],
)
def test_a_function_returning_a_sum_of_its_gradient_is_a_loss_term(body, first_order):
    ctx = context(f"import jax\nimport jax.numpy as jnp\ndef helper(p):\n{body}")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [first_order]


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("    out, pullback = jax.vjp(jax.checkpoint(loss), p, x)\n    return pullback(1.0)\n", [("REM101", 5, 28)]),
        # not certainly called at once: kept for later, as pipeline schedules do
        ("    out, pullback = jax.vjp(jax.checkpoint(loss), p, x)\n    scale = 1.0\n    return pullback(scale)\n", []),
        ("    out = jax.vjp(jax.checkpoint(loss), p, x)\n    return out[1](1.0)\n", []),
        ("    return jax.vjp(jax.checkpoint(loss), p, x)[1](1.0)\n", []),
    ],
    ids=["called-next", "called-later", "kept-in-a-tuple", "unassigned"],
)
def test_rem101_reports_a_vjp_only_when_its_pullback_is_called_in_the_next_statement(body, found):
    code = "import jax\ndef loss(p, x):\n    return ((p * x) ** 2).mean()\ndef train_step(p, x):\n" + body
    assert [(f.code, f.start.row, f.start.column) for f in lint(code)] == found


def test_a_gradient_in_a_function_a_differentiated_one_calls_two_levels_down_is_not_first_order():
    ctx = context(
        "import jax\nouter_fn = jax.grad(a)\ndef a(p):\n    return b(p)\ndef b(p):\n    return jax.grad(g)(p).sum()\n"
    )
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True, False]


@pytest.mark.parametrize(("levels", "expected"), [(8, [("jax.grad", "grad", [], None)]), (9, [])])
def test_partials_of_a_transform_are_followed_eight_levels_deep(levels, expected):
    expr = "jax.grad"
    for _ in range(levels):
        expr = f"functools.partial({expr})"
    assert differentiated(f"import functools, jax\ng = {expr}(loss)") == expected


def test_a_recursive_differentiated_function_is_walked_once():
    ctx = context("import jax\nouter_fn = jax.grad(a)\ndef a(p):\n    return a(p) + jax.grad(g)(p).sum()\n")
    assert [ctx.differentiations.first_order(d, ctx.bodies) for d in ctx.differentiations.all] == [True, False]


@pytest.mark.parametrize(("renames", "expected"), [(3, [("jax.grad", "grad", [], None)]), (4, [])])
def test_names_bound_to_partials_of_a_transform_count_toward_the_depth(renames, expected):
    """Each ``G{i} = functools.partial(G{i-1})`` is two steps (the name, the partial): three are followed."""
    lines = [
        "import functools, jax",
        "G0 = functools.partial(jax.grad)",
        *(f"G{i} = functools.partial(G{i - 1})" for i in range(1, renames + 1)),
    ]
    assert differentiated("\n".join([*lines, f"g = G{renames}(loss)"])) == expected


def test_a_lambda_before_a_decorated_gradient_does_not_hide_it():
    assert differentiated("import jax\nh = lambda x: x\n@jax.grad\ndef f(x):\n    return x\n") == [
        ("jax.grad", "grad", [], "f")
    ]
