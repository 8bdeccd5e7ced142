"""REM012, REM016 and REM003 with the wrap (or the table) in one module and its call (or lookup) in
another: REM012 and REM016 reported at the call with the wrap's place, REM003 at the table with the
lookup's, in the CLI and in flake8 on the calling file alone; quiet for positional calls, forwarded
``**kwargs``, tables without factories and test code.
(fixtures/xmod_static/ pins the main forms; these are the other forms.)"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from remat_lint.flake8_plugin import Plugin
from tests.analysis.test_project import cli

LAYERS = """
import flax.linen as nn
import flax.linen.partitioning as nn_partitioning
import jax
from jax import checkpoint_policies as cp


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic=False):
        return x if deterministic else nn.Dropout(0.5, deterministic=False)(x)


RematBlock = nn.remat(Block, static_argnums=(2,))
remat_block = nn_partitioning.remat(Block)
double = jax.checkpoint(lambda x, n=2: x * n, static_argnums=(1,))
POLICIES = dict(dots=cp.dots_saveable, names=cp.save_only_these_names)
REMAT = True
MaybeRemat = nn.remat(Block, static_argnums=(2,)) if REMAT else Block
"""


def lint_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, *, model_path: str = "pkg/model.py", init: str = ""
) -> list[tuple[str, int, str]]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(init)
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS))
    (tmp_path / model_path).parent.mkdir(exist_ok=True)
    (tmp_path / model_path).write_text(textwrap.dedent(model))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return cli(capsys, "--select", "REM003,REM012,REM016", "--no-cache", ".")  # the last --select counts
    finally:
        os.chdir(cwd)


SETUP_CALL = """
import flax.linen as nn

from pkg.layers import RematBlock as RB


class Model(nn.Module):
    def setup(self):
        self.block = RB()

    def __call__(self, x):
        return self.block(x)
"""


def test_a_static_argument_left_to_its_default_through_setup_and_an_alias(tmp_path, capsys):
    rows = lint_project(tmp_path, capsys, SETUP_CALL)
    assert rows == [
        (
            "pkg/model.py",
            12,
            "REM012 `deterministic` is in `static_argnums` of `RematBlock` (layers.py:14) but not "
            "passed, so this call raises `ValueError`",
        ),
    ]


def test_instances_built_in_a_list_in_setup_and_called_in_a_loop(tmp_path, capsys):
    model = """
    import flax.linen as nn

    from .layers import remat_block


    class Stack(nn.Module):
        def setup(self):
            self.blocks = [remat_block(name=f"b{i}") for i in range(2)]

        def __call__(self, x, deterministic):
            for block in self.blocks:
                x = block(x, deterministic=deterministic)
            return x
    """
    [(path, row, message)] = lint_project(tmp_path, capsys, model)
    assert (path, row) == ("pkg/model.py", 13)
    assert message.startswith("REM016 `remat_block` is wrapped at layers.py:15: ")


def test_a_wrap_that_configuration_turns_on(tmp_path, capsys):
    model = "from pkg.layers import MaybeRemat\n\ny = MaybeRemat()(1.0, deterministic=True)\n"
    assert lint_project(tmp_path, capsys, model) == [
        (
            "pkg/model.py",
            3,
            "REM012 `deterministic` is in `static_argnums` of `MaybeRemat` (layers.py:19) but passed "
            "by keyword, so this call raises `ValueError` where the remat is enabled",
        ),
    ]


def test_calls_through_a_reexport_and_a_module_import(tmp_path, capsys):
    model = """
    import pkg
    from pkg import layers


    def run(x, h):
        y = pkg.double(x, n=3)
        return layers.remat_block()(h, deterministic=True), layers.POLICIES.get("dots"), y
    """
    rows = lint_project(tmp_path, capsys, model, init="from .layers import double\n")
    assert [(path, row, message.split(" ", 1)[0]) for path, row, message in rows] == [
        ("pkg/layers.py", 17, "REM003"),
        ("pkg/model.py", 7, "REM012"),
        ("pkg/model.py", 8, "REM016"),
    ]
    assert "(`POLICIES[...]` at model.py:8)" in rows[0][2]
    assert "`static_argnums` of `double` (layers.py:16)" in rows[1][2]
    assert "`remat_block` is wrapped at layers.py:15" in rows[2][2]


@pytest.mark.parametrize(
    "model",
    [
        # Positional static arguments, keywords forwarded as **kwargs, a table read and called at once.
        """
    from pkg.layers import POLICIES, RematBlock, double, remat_block


    def run(x, flag, name, **kwargs):
        return RematBlock()(x, flag), remat_block()(x, **kwargs), double(x, 3), POLICIES[name]()
    """,
        # Keywords to the constructor, and ones that are no parameter of __call__, are not dropped arguments.
        """
    from pkg.layers import RematBlock, remat_block


    def run(x, flag):
        return RematBlock(name="b")(x, flag), remat_block(parent=None)(x, rngs=None)
    """,
        # A local function of the same name: not the imported wrap.
        """
    def double(x, n=2):
        return x * n


    y = double(1.0, n=3)
    """,
    ],
)
def test_quiet_forms(tmp_path, capsys, model):
    assert lint_project(tmp_path, capsys, model) == []


def test_a_test_file_calling_the_wrap_wrongly_on_purpose_is_not_a_call_site(tmp_path, capsys):
    model = """
    import pytest

    from pkg.layers import double


    def test_keyword_raises():
        with pytest.raises(ValueError):
            double(1.0, n=3)
    """
    assert lint_project(tmp_path, capsys, model, model_path="tests/test_layers.py") == []


def test_flake8_on_the_calling_file_alone_sees_the_wrap_in_another_module(tmp_path, capsys):
    lint_project(tmp_path, capsys, "from pkg.layers import double\ny = double(1.0, n=3)\n")
    path = tmp_path / "pkg" / "model.py"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        import ast

        source = path.read_text()
        found = list(Plugin(ast.parse(source), source.splitlines(keepends=True), str(path)).run())
    finally:
        os.chdir(cwd)
    assert [(row, text.split(" ", 1)[0]) for row, _, text, _ in found] == [(2, "REM012")]
