import flax.linen as nn
import jax.numpy as jnp

# How a model keeps its activations, by name (a training config picks one).
MEMORY = {"keep": lambda cls: cls, "recompute": nn.remat}


class Block(nn.Module):
    width: int
    heads: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        mask = nn.make_causal_mask(jnp.ones(x.shape[:2]))
        x = x + nn.SelfAttention(self.heads, qkv_features=self.width)(h, mask=mask)
        h = nn.LayerNorm()(x)
        return x + nn.Dense(self.width)(nn.gelu(nn.Dense(4 * self.width)(h)))


class GPT(nn.Module):
    vocab: int
    width: int
    depth: int
    heads: int
    block_memory: str = "keep"

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(self.vocab, self.width)(tokens)
        x = x + self.param("position", nn.initializers.normal(0.02), (tokens.shape[1], self.width))
        block = MEMORY[self.block_memory](Block)
        for _ in range(self.depth):
            x = block(self.width, self.heads)(x)
        return nn.Dense(self.vocab)(nn.LayerNorm()(x))


def build(config):
    """The model class of a config: the whole model recomputed in the backward pass, or its blocks."""
    cls = MEMORY[config["model_memory"]](GPT)
    return cls(config["vocab"], config["width"], config["depth"], config["heads"], config["block_memory"])
