from __future__ import annotations

from remat_lint.analysis.policies import constant_return, site_policy
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

# Measured on jax 0.10.2 (tests/jax_claims/test_policies.py).
ALWAYS_FALSE = (
    "always returns `False`, so it saves nothing. It behaves exactly like the default policy "
    "(`nothing_saveable`); drop `policy=` or write `jax.checkpoint_policies.nothing_saveable`"
)
NOT_A_BOOL = (
    "always returns `{}`, which is not a bool. JAX accepts it when wrapping, and the first grad/vjp raises `TypeError: Value "
    "returned by a remat policy should be a bool or ...`; return `False` to save nothing, or drop `policy=`"
)


class TrivialCustomPolicy(Rule):
    """
    ## What it does
    Flags a custom checkpoint policy (a `def` or `lambda` passed as `policy=`) that returns the
    same constant on every path other than `True`: always `False`, or always a value that is not
    a bool (`None`, including a function that never returns, a number such as `0` or `1`, a
    string).

    ## Why is this bad?
    A policy that always returns `False` saves nothing, which is what every checkpoint does
    without a policy (`nothing_saveable`): the custom function only hides that. A policy that
    returns `None` is worse: JAX accepts it when wrapping, plain calls, `jit` and `jvp` never
    consult it, and the first `grad`/`vjp` raises `TypeError: Value returned by a remat policy
    should be a bool or ...`; so does any other value that is not a bool, `0` and `1` included
    (measured, jax 0.10.2: `None`, `0`, `1`, `0.0` and `"yes"` raise under `grad` and
    `value_and_grad`; `False` and `True` do not). Often the function was meant to decide per primitive
    (`return prim is lax.dot_general_p`) and lost its condition.

    Not reported in test files (`tests/`, `test_*.py`, `*_test.py`).

    ## Example
    ```python
    import jax

    def policy(prim, *args, **params):
        return False

    block = jax.checkpoint(block, policy=policy)
    ```

    ## Use instead
    ```python
    import jax

    block = jax.checkpoint(block)  # or policy=jax.checkpoint_policies.nothing_saveable
    ```

    ## Fix safety
    No fix: the intended policy may have been a real one.

    ## References
    - [Gradient checkpointing: custom policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM105"
    name = "trivial-custom-policy"
    severity = Severity.INFO
    quiet_in_tests = True  # tests write trivial policies on purpose

    VALID = [
        "import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)",
        "import jax\ndef policy(prim, *args, **params):\n    return prim.name == 'dot_general'\ng = jax.checkpoint(f, policy=policy)",
        "import jax\ndef policy(prim, *args, **params):\n    if prim.name == 'dot_general':\n        return True\n    return False\n"
        "g = jax.checkpoint(f, policy=policy)",
        "import jax\ndef policy(prim, *args, **params):\n    raise NotImplementedError\ng = jax.checkpoint(f, policy=policy)",
        "import jax\npolicy = lambda *_, **__: False\npolicy = make_policy()\ng = jax.checkpoint(f, policy=policy)",
    ]
    INVALID = [
        Invalid("import jax\ng = jax.checkpoint(f, policy=lambda *_, **__: False)"),
        Invalid(
            "import jax\ndef policy(prim, *args, **params):\n    return False\ng = jax.checkpoint(f, policy=policy)"
        ),
        Invalid("import haiku as hk\ndef policy(prim, *args, **params):\n    pass\ng = hk.remat(f, policy=policy)"),
        Invalid("import jax\ng = jax.checkpoint(f, policy=lambda prim, *_, **__: 0)"),
    ]

    def check(self) -> None:
        for site in self.ctx.sites:
            value = site_policy(site)
            constant = None if value is None else constant_return(self.ctx.values, value)
            if constant is None or constant[0] is True:
                continue
            problem = ALWAYS_FALSE if constant[0] is False else NOT_A_BOOL.format(repr(constant[0]))
            self.report(site.node, f"`policy={self.ctx.code(value)}` is a custom policy that {problem}")  # type: ignore[arg-type]  # ``constant`` is None when ``value`` is
