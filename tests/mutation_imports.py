"""pytest plugin for mutation runs (``[tool.mutmut]`` in pyproject.toml loads it with ``-p``).

mutmut runs the tests in ``mutants/``, where it put mutated copies of ``remat_lint/`` and
``rules/``, and names a rule's mutants by its file (``rules.rem011_...``). The package imports the
rules as ``remat_lint.rules.*``, which an editable install maps to the original ``rules/``. This
finder loads ``remat_lint.rules.*`` from the ``rules/`` beside the imported ``remat_lint`` and runs
each module under the name mutmut gave its mutants, so that they switch on.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from pathlib import Path
from types import ModuleType

import remat_lint

_RULES = Path(remat_lint.__file__).resolve().parent.parent / "rules"
_PACKAGE = "remat_lint.rules"


class _AsMutmutNames(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        code = self.loader.get_code(module.__name__)  # type: ignore[attr-defined]
        module.__name__ = "rules" + module.__name__[len(_PACKAGE) :]  # what functions and classes record as __module__
        sys.modules[module.__name__] = module
        exec(code, module.__dict__)  # noqa: S102


class _RulesFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _PACKAGE and not fullname.startswith(_PACKAGE + "."):
            return None
        location = [str(_RULES)] if fullname != _PACKAGE else None
        spec = (
            importlib.machinery.PathFinder.find_spec(fullname, location)
            if location
            else importlib.util.spec_from_file_location(
                fullname, _RULES / "__init__.py", submodule_search_locations=[str(_RULES)]
            )
        )
        if spec is not None and spec.loader is not None and fullname != _PACKAGE:
            spec.loader = _AsMutmutNames(spec.loader)
        return spec


if (_RULES / "__init__.py").is_file():
    import importlib.util

    sys.meta_path.insert(0, _RulesFinder())
