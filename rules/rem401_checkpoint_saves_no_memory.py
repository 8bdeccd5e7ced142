from __future__ import annotations

from remat_lint.findings import Severity
from remat_lint.rule import DynamicRule


class CheckpointSavesNoMemory(DynamicRule):
    """
    ## What it does
    Reports, under `--trace --trace-run CMD`, a checkpoint that a differentiated program of the run
    applied and that saves no peak temp memory there while it costs compute, whatever its spelling:
    a checkpoint around the whole loss or the whole forward pass followed only by a cheap loss, the
    last stage, a single linear map, a policy that keeps everything. Found by tracing only: the
    static pass never reports it.

    ## Why is this bad?
    A checkpoint trades compute for memory: the backward pass recomputes what the forward pass did
    not keep. When nothing after the checkpoint needs its activations alive (a squared-error loss on
    the model output), the compiled program's peak temp memory is the same with and without it, and
    the recomputation is pure cost (measured on jax 0.10.2, XLA:CPU with
    `--xla_disable_hlo_passes=cse_barrier_expander` as on GPU/TPU: a whole-forward `nnx.remat` of a
    3-layer MLP under an MSE loss, temp 4,152 vs 4,096 bytes, FLOPs +31 %).

    Each finding names the program and its shapes, the test that differentiated it, and the
    compiled temp bytes and FLOPs as written and without the checkpoint, at the recorded shapes and
    at 16 times their batch.

    A static finding about the same checkpoint (REM102 at a call of the wrap, REM101, REM104…, found
    through the equations both name) is confirmed instead, with the wrap's line as its related
    location: one misuse, one finding. Two wraps of one function (`jax.checkpoint(f)` and
    `jax.checkpoint(f, policy=...)`, `nn.remat(Block)` applied twice) are told apart by the name each
    call goes through (`lean(w, x)` calls what `lean = ...` bound; where no call says, as with
    `layers[i](x)`, neither is judged); a wrap made by a helper (`lean = checkpointed(dense, policy)`)
    is reported at the line that called the helper.

    Tests run models at tiny shapes, where fixed-size buffers rather than activations decide peak
    memory, so a verdict there is confirmed on the same program re-traced with the leading dimension
    of its non-differentiated arrays (the inputs, not the parameters; dimensions of size 1 kept) 16
    times larger. A per-layer checkpoint compiled to more temp than none at a test's batch (2.09 vs
    2.00 KiB, `jax.checkpoint` of two tanh layers at f32[8,16]) and saves memory at 16 times it
    (32.1 vs 40.0 KiB): it is not reported. A checkpoint that lowers peak temp at the recorded shapes,
    or by 5 % or more at the larger batch, or whose program does not trace at the larger batch, is
    never reported. A whole linen GPT under `nn.remat` before a cross-entropy lowered it by 1.3 % at
    16 times the batch (one activation; +0.7 % at the test's) for +31.6 % FLOPs: reported, with both
    figures. Programs with less than
    1 KiB of peak temp without the checkpoint are not judged: such a test configuration (two layers
    of `Dense(8)`, dropout off) stands for a deeper, wider model, where a per-layer checkpoint saves
    what it cannot save at two layers.

    ## Example
    ```python
    from flax import nnx

    forward = nnx.remat(lambda model, x: model(x))

    def loss(model, x, y):
        return ((forward(model, x) - y) ** 2).mean()
    ```

    ## Use instead
    ```python
    def loss(model, x, y):
        return ((model(x) - y) ** 2).mean()
    ```
    or checkpoint each layer, where the saving is.

    ## Fix safety
    No fix: where to checkpoint depends on the model.

    ## References
    - [Gradient checkpointing](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM401"
    name = "checkpoint-saves-no-memory"
    severity = Severity.WARNING

    VALID = ["import jax\nforward = jax.checkpoint(model_forward)"]
