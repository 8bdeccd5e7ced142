"""Which module-level definitions own a finding, and which functions reach them (no JAX)."""

from __future__ import annotations

import textwrap

from remat_lint.trace.worker.plan import plan_module

SOURCE = textwrap.dedent(
    """\
    import jax

    POLICY = jax.checkpoint_policies.save_only_these_names("h")


    @jax.checkpoint
    def block(x):
        return x


    inner = jax.checkpoint(lambda x: helper(x))


    def helper(x):
        return x


    def loss(params, x, y=1):
        return block(x) + inner(x)


    def train_step(params, x):
        return jax.value_and_grad(loss)(params, x)


    @jax.checkpoint
    def uses_policy(x):
        return x
    """
).replace("@jax.checkpoint\ndef uses_policy", "@jax.checkpoint(policy=POLICY)\ndef uses_policy")


def names(defs):
    return [d.name for d in defs]


def test_a_line_inside_a_definition_is_owned_by_it_decorators_included():
    plan = plan_module(SOURCE)
    assert names(plan.owners(6, 6)) == ["block"]  # the decorator line
    assert names(plan.owners(8, 8)) == ["block"]


def test_a_module_level_statement_is_owned_by_what_it_names_and_what_uses_it():
    plan = plan_module(SOURCE)
    assert names(plan.owners(11, 11)) == ["helper", "loss"]  # inner = checkpoint(lambda: helper(x)), used by loss
    assert names(plan.owners(3, 3)) == ["uses_policy"]  # POLICY = ... is used by uses_policy


def test_callers_are_found_through_module_level_aliases():
    plan = plan_module(SOURCE)
    assert names(plan.callers({"helper"})) == ["loss", "train_step"]  # loss calls inner = ...helper


def test_required_parameters_and_train_steps():
    defs = plan_module(SOURCE).definitions
    assert defs["loss"].params == ["params", "x"]
    assert defs["train_step"].differentiates and not defs["loss"].differentiates
