from __future__ import annotations

from remat_lint.findings import Severity
from remat_lint.rule import DynamicRule


class PolicyNamesUnmatched(DynamicRule):
    """
    ## What it does
    Reports, under `--trace --trace-run CMD`, a name-based checkpoint policy
    (`save_only_these_names`, `save_and_offload_only_these_names`…) applied in a differentiated
    program of the run whose names match no `checkpoint_name` in the program, wherever the
    names come from (a config file, a registry, an environment variable). Found by tracing only;
    REM008 reports the literal names the static pass can read.

    ## Why is this bad?
    JAX matches names exactly and never validates them: a policy whose names match nothing saves
    (or offloads) nothing by name, and the values are recomputed as with `nothing_saveable`.

    ## Example
    ```python
    import jax
    from jax.ad_checkpoint import checkpoint_name

    def block(w, x):
        return checkpoint_name(jnp.tanh(x @ w), "hidden")

    block = jax.checkpoint(block, policy=jax.checkpoint_policies.save_only_these_names(*config.save))
    # config.save == ("hiden",)
    ```

    ## Use instead
    A name the body declares (`"hidden"`).

    ## Fix safety
    No fix: the intended name is the project's.

    ## References
    - [Gradient checkpointing: names](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM403"
    name = "policy-names-unmatched"
    severity = Severity.WARNING

    VALID = ["import jax\nblock = jax.checkpoint(block, policy=policy)"]
