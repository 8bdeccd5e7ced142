"""Which framework's Module a class of this module is: Flax linen, Flax NNX, Haiku or Equinox.

A class is a Module when one of its bases is a framework's Module class or layer
(``apis.MODULE_FAMILIES``: ``nn.Module``, ``nnx.Module``, ``hk.Module``, ``eqx.Module``,
``nn.Dense``...), directly or through classes of this module. A base that cannot be resolved
(imported from another module of the project, computed) leaves the class unknown.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.apis import MODULE_FAMILIES, Family

_MAX_DEPTH = 16


def module_family(model: SemanticModel, cls: cst.ClassDef, depth: int = 0) -> Family | None:
    """The framework whose Module ``cls`` certainly is (its first base that is one decides)."""
    if depth > _MAX_DEPTH:
        return None
    for base in cls.bases:
        if base.keyword is not None:
            continue  # ``metaclass=...``
        family = MODULE_FAMILIES.get(model.qualified_name(base.value) or "")
        definition = model.definition(base.value) if family is None else None
        if family is None and isinstance(definition, cst.ClassDef):
            family = module_family(model, definition, depth + 1)
        if family is not None:
            return family
    return None
