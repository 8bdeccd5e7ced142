"""A module imported on first use. A rule module whose project phase needs no parse (a warm run
often runs only that) binds libcst and the analyses this way, so importing the rule imports
neither; they load when a file is checked (tests/engine/test_scale.py)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule(ModuleType):
    """Stands for the module ``name``: the first attribute read imports it and copies its
    namespace in, so later reads are plain attribute reads. Nothing is put in ``sys.modules``."""

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attribute)
