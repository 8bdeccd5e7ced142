"""What a user reads, against literal text: each rule's position (row and column as written, the
decorator's ``@`` for a decorator) and the parts of its message that state a fact about JAX (the
exception, how often a callback runs, the index), and flake8's columns for the same findings.
The JAX facts themselves are measured in tests/jax_claims/."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import lint

CASES = [
    pytest.param(
        "REM004",
        """\
        import flax.linen as nn
        class M(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.remat(nn.Dense(4, name='d'))(x)
        """,
        (5, 15),
        [
            "`nn.remat`",
            "Module instance `nn.Dense(4, name='d')`",
            "flax.errors.TransformTargetError",
            "`nn.remat(nn.Dense)(...)`",
        ],
        id="REM004",
    ),
    pytest.param(
        "REM009",
        """\
        import jax
        import flax.linen as nn
        class Block(nn.Module):
            @jax.checkpoint
            @nn.compact
            def __call__(self, x):
                return nn.Dense(4)(x)
        """,
        (4, 4),
        [
            "`jax.checkpoint` decorates the Flax Module method `Block.__call__`",
            "TypeError: Cannot interpret value",
            "`nn.remat`",
        ],
        id="REM009",
    ),
    pytest.param(
        "REM010",
        """\
        import functools
        import jax
        @functools.partial(jax.checkpoint, static_argnames=('training',))
        def f(x, training):
            return x
        """,
        (3, 0),
        [
            "`jax.checkpoint` ignores `static_argnames=('training',)`",
            "`jax_remat3`",
            "`training` is traced",
            "TracerBoolConversionError",
            "`static_argnums=`",
        ],
        id="REM010",
    ),
    pytest.param(
        "REM011",
        """\
        import jax
        def f(x, n):
            return x
        g = jax.checkpoint(f, static_argnums=[1])
        """,
        (4, 4),
        ["`static_argnums=[1]`", "TypeError"],
        id="REM011-list",
    ),
    pytest.param(
        "REM201",
        """\
        import jax
        @jax.checkpoint
        def f(x):
            print('x is', x)
            return x
        """,
        (4, 4),
        ["`print`", "once per trace", "not again in the backward recompute", "`jax.debug.print`"],
        id="REM201",
    ),
    pytest.param(
        "REM202",
        """\
        import jax
        @jax.checkpoint
        def f(x, training):
            if training:
                x = x * 2
            return x
        """,
        (4, 4),
        [
            "Python `if` on `training`",
            "`jax.checkpoint` traces `training`",
            "TracerBoolConversionError",
            "`static_argnums=(1,)`",
        ],
        id="REM202",
    ),
    pytest.param(
        "REM203",
        """\
        import jax
        @jax.checkpoint
        def f(x):
            jax.debug.print('x={x}', x=x)
            return x
        """,
        (4, 4),
        [
            "`jax.debug.print`",
            "runs twice per step under `grad`",
            "once in the forward pass and again when the backward pass recomputes",
        ],
        id="REM203",
    ),
    pytest.param(
        "REM203",
        """\
        import jax
        from jax.experimental import io_callback
        @jax.checkpoint
        def f(x):
            io_callback(print, None, 1)
            return x
        """,
        (5, 4),
        ["NotImplementedError: Effects not supported in partial-eval of checkpoint/remat", "ValueError"],
        id="REM203-io_callback",
    ),
    pytest.param(
        "REM302",
        """\
        import jax
        @jax.remat
        def f(x):
            return x
        """,
        (2, 0),
        ["`jax.checkpoint`", "alias `jax.remat`"],
        id="REM302-decorator",
    ),
    pytest.param(
        "REM302",
        "import jax\ng = jax.remat(f, prevent_cse=False)\n",
        (2, 4),
        ["`jax.checkpoint`", "alias `jax.remat`"],
        id="REM302-call",
    ),
]


@pytest.mark.parametrize(("code", "source", "start", "parts"), CASES)
def test_position_and_message(code, source, start, parts):
    [finding] = lint(source, {code})
    assert (finding.start.row, finding.start.column) == start
    for part in parts:
        assert part in finding.message


def test_flake8_columns_are_literal(tmp_path):
    """flake8 prints 1-based columns: the CLI's column, the decorator's ``@`` at 1."""
    (tmp_path / "m.py").write_text(
        "import functools\nimport jax\n"
        "g = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
        "@jax.remat\ndef f(x):\n    return x\n"
        "@functools.partial(jax.checkpoint, static_argnames=('n',))\ndef h(x, n):\n    return x\n"
        "    # a comment\n"
        "k = [jax.checkpoint(f, save_policy=p)]\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=REM", "--extend-select=REM302", "m.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = [" ".join(line.split(" ")[:2]) for line in proc.stdout.splitlines()]
    assert rows == ["m.py:3:5: REM001", "m.py:4:1: REM302", "m.py:7:1: REM010", "m.py:11:6: REM002"], (
        proc.stdout + proc.stderr
    )
