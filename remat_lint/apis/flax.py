"""Flax's APIs shared by linen and NNX (measured on flax 0.12.8)."""

from __future__ import annotations

PREFIX = "flax."  # every Flax API
STRUCT_DATACLASS = "flax.struct.dataclass"
PYTREE_NODE = "flax.struct.PyTreeNode"
