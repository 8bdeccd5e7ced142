"""The shapes of the framework tables: one record per API, filled in by the framework modules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["jax", "flax", "nnx", "haiku", "equinox"]

# Where a transform takes the function it applies: (position of the argument, its keyword name).
BodyParam = tuple[int, str]


@dataclass(frozen=True)
class RematApi:
    qname: str  # canonical dotted name
    family: Family
    target_param: str  # name of the checkpointed callable's parameter
    keywords: frozenset[str]  # every keyword the API accepts (target excluded)
    positional: tuple[str, ...]  # parameters that may also be passed positionally after the target
    decorator_factory: bool  # True when ``@api(policy=...)`` (keywords only) is valid
    display: str  # how users spell it (``nn.remat``)
    function_name: str  # ``__name__``, as Python's TypeErrors spell it (``checkpoint() got ...``)
    self_counts_in_static_argnums: bool = False  # Flax linen counts ``self`` as argument 0


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    kind: Literal["plain", "factory"]
    # For factories: how many positional arguments the call takes (None: any number, *names).
    min_args: int = 0
    max_args: int | None = 0
    keyword_only: tuple[str, ...] = ()
    takes_names: bool = False  # factories whose varargs are checkpoint names
    offloads: bool = False  # returns Offloadable values (not a bool policy)
    alias_of: str | None = None


# Differentiation: what a transform computes (``grad`` includes jacrev, ``value_and_grad`` includes
# vjp: they also run the forward for its value) and the parameter that takes the function.
DiffKind = Literal["grad", "value_and_grad", "forward", "hessian"]


@dataclass(frozen=True)
class DiffApi:
    qname: str
    kind: DiffKind
    target_param: str  # the differentiated function's parameter (always the first)
    pullback: bool = False  # returns the pullback (vjp): the backward runs where that is called

    @property
    def reverse(self) -> bool:
        return self.kind in ("grad", "value_and_grad", "hessian")


@dataclass(frozen=True)
class FlagLayer:
    """How a layer class takes the mode flag it tests in Python (``deterministic``...), and the rate
    without which it never tests it (analysis/layers.py)."""

    flag: str  # the keyword (a call keyword, and a constructor field where ``in_constructor``)
    flag_position: int | None  # the flag's position among the call's arguments, if it has one
    rate: str | None  # the keyword of the rate that must be nonzero, if any
    rate_position: int | None  # the rate's position among the constructor's arguments
    default_rate: float | None = None  # the rate when the constructor is not given one
    also: str | None = None  # a second keyword for the flag (Equinox's deprecated ``deterministic``)


@dataclass(frozen=True)
class ModuleVmap:
    """A map of a Module class over its ``__call__``'s arguments and its variable collections
    (Flax linen's lifted ``vmap``): where it takes each option (positional slot, keyword)."""

    in_axes: BodyParam
    variable_axes: BodyParam
    methods: str  # the keyword that maps other methods than ``__call__``
