"""A call in another module reaches the wrap whichever way that module imports it (analysis/semantic.py
binds ``import pkg.layers`` as the top-level name ``pkg``; the project layer follows it), and only a
wrap bound at module level is what another module imports (analysis/exports.py)."""

from __future__ import annotations

import os
import textwrap

import pytest

from tests.analysis.test_cross_module_breadth import LAYERS, lint_project
from tests.analysis.test_project import cli


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
def test_a_keyword_call_in_another_module_is_reported_at_the_call_for_every_import_form(tmp_path, capsys, model):
    [(path, row, message)] = lint_project(tmp_path, capsys, model)
    assert (path, row) == (os.path.join("pkg", "model.py"), 2)
    assert message.startswith("REM012 `n` is in `static_argnums` of `double` (layers.py:16) but passed by keyword")


SHADOWED = """\
import functools
import jax


def double(x, n=2):
    return x * n


class Ops:
    @functools.partial(jax.checkpoint, static_argnums=(1,))
    def double(x, n=2):
        return x * n
"""


def test_a_checkpointed_method_is_not_the_module_function_of_the_same_name(tmp_path, capsys, monkeypatch):
    # `from pkg.layers import double` imports the plain function, not the method of Ops.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(SHADOWED)
    (tmp_path / "pkg" / "model.py").write_text("from pkg.layers import double\ny = double(1.0, n=3)\n")
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


def test_a_call_in_a_src_layout_reaches_the_wrap_its_package_imports(tmp_path, capsys, monkeypatch):
    # `pkg` lives in src/ (the layout setuptools and hatch recommend): `pkg.layers` is src/pkg/layers.py,
    # read although only the calling file is linted.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    package = tmp_path / "src" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(textwrap.dedent(LAYERS))
    (package / "model.py").write_text("from pkg.layers import double\ny = double(1.0, n=3)\n")
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--select", "REM012", "--no-cache", os.path.join("src", "pkg", "model.py"))
    assert (path, row) == (os.path.join("src", "pkg", "model.py"), 2)
    assert message.startswith("REM012 `n` is in `static_argnums` of `double` (layers.py:16) but passed by keyword")


def test_a_relative_import_beyond_the_projects_top_is_left_alone(tmp_path, capsys, monkeypatch):
    # From pkg/model.py, `...layers` is two levels above pkg: Python cannot import it, so it is not
    # the top-level layers.py.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "layers.py").write_text(textwrap.dedent(LAYERS))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "model.py").write_text("from ...layers import double\ny = double(1.0, n=3)\n")
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--select", "REM012", "--no-cache", os.path.join("pkg", "model.py")) == []


def test_a_script_reaches_the_wrap_of_the_module_beside_it(tmp_path, capsys, monkeypatch):
    # tools/ is a folder of scripts (no __init__.py): `import layers` there is tools/layers.py.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "layers.py").write_text(textwrap.dedent(LAYERS))
    (tmp_path / "tools" / "train.py").write_text("import layers\ny = layers.double(1.0, n=3)\n")
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--select", "REM012", "--no-cache", os.path.join("tools", "train.py"))
    assert (path, row) == (os.path.join("tools", "train.py"), 2)
    assert message.startswith("REM012 `n` is in `static_argnums` of `double` (layers.py:16) but passed by keyword")
