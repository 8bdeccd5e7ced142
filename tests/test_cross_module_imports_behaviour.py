"""A call in another module reaches the wrap whichever way that module imports it (analysis/semantic.py
binds ``import pkg.layers`` as the top-level name ``pkg``; the project layer follows it)."""

from __future__ import annotations

import os

import pytest

from tests.test_cross_module_breadth import lint_project


@pytest.mark.parametrize(
    "model",
    [
        "import pkg.layers\ny = pkg.layers.double(1.0, n=3)\n",
        "import pkg.layers as layers\ny = layers.double(1.0, n=3)\n",
        "from pkg.layers import double\ny = double(1.0, n=3)\n",
        "from pkg import layers\ny = layers.double(1.0, n=3)\n",
    ],
    ids=["import-dotted", "import-as", "from-import", "from-package-import-module"],
)
def test_a_keyword_call_in_another_module_is_reported_at_the_wrap_for_every_import_form(tmp_path, capsys, model):
    [(path, row, message)] = lint_project(tmp_path, capsys, model)
    assert (path, row) == (os.path.join("pkg", "layers.py"), 16)
    assert message.startswith("REM012 `n` is in `static_argnums` but `double` is called with `n=` at model.py:2")
