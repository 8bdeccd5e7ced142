import os

# what the checkpointed blocks save, overridable from the environment
SAVE = {
    "attention": os.environ.get("SAVE_ATTENTION", "attn_out,attn_weights").split(","),
    "mlp": os.environ.get("SAVE_MLP", "mlp_hidden").split(","),
}
