"""Each API family's ``static_argnums`` convention, pinned by the index a user must write.

``jax.checkpoint``/``jax.remat``/``hk.remat``/``nnx.remat`` count the call's positional arguments
(``self`` too, for a decorated method); ``nn.remat``/``nn.checkpoint`` count the Module as 0;
``nn_partitioning.remat`` does not count it; ``eqx.filter_checkpoint`` has no ``static_argnums``
and keeps non-array arguments static. (Measured on jax 0.10.2 / flax 0.12.8 in the claims tests:
tests/jax_claims/test_bodies.py and tests/jax_claims/test_modules.py.)

Each case is linted with the three rules whose findings depend on the convention: REM202 (the
flag is traced; its message names the index that makes it static), REM011 (the index selects the
wrong argument or none) and REM010 (its fix writes the index). Message parts pinned here are the
ones that carry the convention: the index, the parameter, the exception.
"""

from __future__ import annotations

import json

import pytest

from remat_lint.cli import command as cli
from tests.helpers import lint

RULES = frozenset({"REM010", "REM011", "REM202"})

FUNCTION = """\
import functools
import jax
import haiku as hk
from flax import nnx

def block(x, w, training):
    if training:
        return x @ w
    return x

g = {api}(block{args})
"""

LINEN = """\
import flax.linen as nn
import flax.linen.partitioning as nn_partitioning

class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool):
        y = nn.Dense(4)(x)
        if not deterministic:
            y = y * 0.5
        return y

R = {api}(Block{args})
"""

METHOD = """\
import functools
import jax.numpy as jnp
from flax import nnx

class Mlp(nnx.Module):
    @functools.partial(nnx.remat{args})
    def __call__(self, x, train):
        return x @ self.w if train else x
"""

FUNCTION_APIS = ["jax.checkpoint", "jax.remat", "hk.remat", "nnx.remat"]


def found(source: str) -> list[tuple[str, int, str]]:
    return [(f.code, f.start.row, f.message) for f in lint(source, RULES)]


@pytest.mark.parametrize("api", FUNCTION_APIS)
def test_function_apis_count_positional_arguments(api):
    """``training`` is argument 2 for every function API (nothing counted before ``x``)."""
    assert found(FUNCTION.format(api=api, args=", static_argnums=(2,)")) == []
    [(code, row, message)] = found(FUNCTION.format(api=api, args=", static_argnums=(1,)"))
    assert (code, row) == ("REM202", 7)
    assert f"`{api}` traces `training`" in message and "static_argnums=(2,)" in message
    assert "TracerBoolConversionError" in message
    [(code, row, message)] = found(FUNCTION.format(api=api, args=", static_argnums=(3,)"))
    assert (code, row) == ("REM011", 11)
    assert "Index 3 is out of range" in message and "ValueError" in message


def test_static_argnames_fix_writes_the_positional_index():
    [finding] = lint(FUNCTION.format(api="jax.checkpoint", args=", static_argnames=('training',)"), RULES)
    assert finding.code == "REM010" and finding.start.row == 11
    assert finding.fix is not None and finding.fix.message.startswith("Use `static_argnums=(2,)`")


def test_equinox_needs_no_static_argnums():
    """``eqx.filter_checkpoint`` keeps a Python bool static by itself: the ``if`` runs."""
    assert found(FUNCTION.format(api="eqx.filter_checkpoint", args="")) == []


@pytest.mark.parametrize("api", ["nn.remat", "nn.checkpoint"])
def test_linen_counts_the_module_as_zero(api):
    assert found(LINEN.format(api=api, args=", static_argnums=(2,)")) == []
    [(traced, row, flag), (code, row_of_remat, message)] = found(LINEN.format(api=api, args=", static_argnums=(1,)"))
    assert (traced, row, code, row_of_remat) == ("REM202", 8, "REM011", 12)
    # flax.linen.checkpoint is flax.linen.remat: messages name it nn.remat
    assert f"`{api.replace('checkpoint', 'remat')}` traces `deterministic`" in flag and "static_argnums=(2,)" in flag
    assert "`static_argnums=(1,)`" in message and "counts `self` as argument 0" in message
    assert "index 1 selects `x`, not `deterministic`" in message and "`deterministic` is index 2" in message
    assert "TracerBoolConversionError" in message


def test_linen_partitioning_does_not_count_the_module():
    assert found(LINEN.format(api="nn_partitioning.remat", args=", static_argnums=(1,)")) == []
    [(traced, row, flag), (code, row_of_remat, message)] = found(
        LINEN.format(api="nn_partitioning.remat", args=", static_argnums=(2,)")
    )
    assert (traced, row, code, row_of_remat) == ("REM202", 8, "REM011", 12)
    assert "static_argnums=(1,)" in flag
    assert "`static_argnums=(2,)`" in message and "`nn_partitioning.remat`" in message
    assert "it does not count `self`: `deterministic` is 1" in message


def test_linen_partitioning_given_the_linen_index_selects_the_next_argument():
    """T5X style: ``nn_partitioning.remat`` with the index ``nn.remat`` would take."""
    source = LINEN.replace("deterministic: bool):", "deterministic: bool, mask):")
    assert found(source.format(api="nn_partitioning.remat", args=", static_argnums=(1,)")) == []
    [(traced, row, flag), (code, row_of_remat, message)] = found(
        source.format(api="nn_partitioning.remat", args=", static_argnums=(2,)")
    )
    assert (traced, row, code, row_of_remat) == ("REM202", 8, "REM011", 12)
    assert "does not count `self`, so index 2 selects `mask`, not `deterministic`" in message
    assert "`deterministic` is index 1" in message and "static_argnums=(1,)" in flag


def test_linen_traced_flag_names_the_linen_index():
    [(code, row, message)] = found(LINEN.format(api="nn.remat", args=""))
    assert (code, row) == ("REM202", 8)
    assert "`nn.remat` traces `deterministic`" in message and "static_argnums=(2,)" in message


def test_linen_partitioning_traced_flag_names_its_index():
    [(code, row, message)] = found(LINEN.format(api="nn_partitioning.remat", args=""))
    assert (code, row) == ("REM202", 8)
    assert "static_argnums=(1,)" in message


def test_nnx_method_counts_self():
    assert found(METHOD.format(args=", static_argnums=(2,)")) == []
    [(off, off_row, off_message), (code, row, message)] = found(METHOD.format(args=", static_argnums=(1,)"))
    assert (code, row) == ("REM202", 8)
    assert "`nnx.remat` traces `train`" in message and "static_argnums=(2,)" in message
    # The off-by-one itself, at the decorator (issue 10: nnx counts ``self`` too).
    assert (off, off_row) == ("REM011", 6)
    assert "`nnx.remat` counts `self` as argument 0, so index 1 selects `x`, not `train`" in off_message
    [(code, row, message)] = found(METHOD.format(args=", static_argnums=(3,)"))
    assert (code, row) == ("REM011", 6)
    assert "Index 3 is out of range" in message


def test_module_class_from_another_module_uses_the_same_conventions(tmp_path, monkeypatch, capsys):
    """REM011 judges an imported Module class against its ``__call__`` in the other file."""
    (tmp_path / "layers.py").write_text(
        LINEN.replace("deterministic: bool):", "deterministic: bool, mask):").split("\nR = ")[0]
    )
    (tmp_path / "model.py").write_text(
        "import flax.linen as nn\nimport flax.linen.partitioning as nn_partitioning\nfrom layers import Block\n"
        "P_ok = nn_partitioning.remat(Block, static_argnums=(1,))\n"
        "P_bad = nn_partitioning.remat(Block, static_argnums=(2,))\n"
        "L_ok = nn.remat(Block, static_argnums=(2,))\n"
        "L_bad = nn.remat(Block, static_argnums=(1,))\n"
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--no-cache", "-j", "1", "--select", "REM011", "--output-format", "json", "."]) == 1
    found = [
        (f["filename"], f["location"]["row"], f["message"] + " " + (f.get("detail") or ""))
        for f in json.loads(capsys.readouterr().out)
    ]
    assert [(path, row) for path, row, _ in found] == [("model.py", 5), ("model.py", 7)]
    assert "index 2 selects `mask`, not `deterministic`" in found[0][2] and "`deterministic` is index 1" in found[0][2]
    assert "index 1 selects `x`, not `deterministic`" in found[1][2] and "`deterministic` is index 2" in found[1][2]
