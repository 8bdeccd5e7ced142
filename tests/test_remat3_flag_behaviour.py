"""REM010 stays quiet in a module that names the ``jax_remat3`` flag (which makes JAX honour
``static_argnames``) in code, in any spelling, and reports a module that mentions it only in a
comment or names something else (analysis/flags.py)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

CHECKPOINT = "g = jax.checkpoint(f, static_argnames=('training',))\n"


@pytest.mark.parametrize(
    ("flag", "reported"),
    [
        ('jax.config.update("jax_remat3", True)\n', False),  # a string
        ('os.environ["JAX_REMAT3"] = "1"\n', False),  # the environment variable
        ("with jax._src.config.remat3(True):\n    pass\n", False),  # an attribute
        ("@jtu.with_config(jax_remat3=True)\nclass T:\n    pass\n", False),  # a keyword
        ("on = jax.config.jax_remat3\n", False),  # read, not set
        ("# jax_remat3 would make static_argnames work\n", True),  # a comment is no code
        ('jax.config.update("jax_enable_x64", True)\n', True),
        ("@jtu.with_config(jax_enable_x64=True)\nclass T:\n    pass\n", True),
        ("on = jax.config.remat\n", True),
        ("", True),
    ],
)
def test_rem010_is_quiet_where_the_module_names_the_remat3_flag(flag, reported):
    source = "import os\nimport jax\nfrom jax._src import test_util as jtu\n" + flag + CHECKPOINT
    rows = [f.start.row for f in lint(source) if f.code == "REM010"]
    assert rows == ([source.count("\n")] if reported else [])
