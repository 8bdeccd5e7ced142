from __future__ import annotations

from remat_lint.findings import Severity
from remat_lint.rule import DynamicRule


class CheckpointNeverApplied(DynamicRule):
    """
    ## What it does
    Reports, under `--trace --trace-run CMD`, a checkpoint site the static pass knows that no
    differentiated program of the run applied: a branch on the layer count, a configuration flag or
    a factory bypasses it, or the run called it only forward (the message says both, since the
    trace sees only the differentiated programs). Found by tracing only, and only when the run recorded at least one
    differentiated program that was built.

    ## Why is this bad?
    Every checkpoint JAX applies is a `checkpoint` equation in the differentiated program. When the
    site's equation is in none of the programs the project's own run differentiates, the setting
    does nothing there: the memory the checkpoint was written to save is not saved.

    ## Example
    ```python
    import jax

    layer = jax.checkpoint(dense)

    def forward(ws, x):
        for w in ws:
            x = dense(w, x) if len(ws) >= 8 else layer(w, x)
        return x
    ```

    ## Use instead
    ```python
    def forward(ws, x):
        for w in ws:
            x = layer(w, x)
        return x
    ```

    ## Fix safety
    No fix: whether the branch or the checkpoint is wrong depends on the project.

    ## References
    - [Gradient checkpointing](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM402"
    name = "checkpoint-never-applied"
    severity = Severity.WARNING

    VALID = ["import jax\nlayer = jax.checkpoint(dense)"]
