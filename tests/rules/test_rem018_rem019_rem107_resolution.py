"""REM018, REM019 and REM107 report only what they resolve, on the line to change, and never crash
on partial or odd code."""

from __future__ import annotations

import pytest

from tests.helpers import lint

RULES = {"REM018", "REM019", "REM107"}
TABLE = "import jax\nP = {'full': None, 'dots': jax.checkpoint_policies.dots_saveable}\n"


def rows(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.start.row) for f in lint(source, RULES)]


@pytest.mark.parametrize(
    "source",
    [
        "import flax.linen as nn\ny = nn.remat_scan()",
        "import flax.linen as nn\ny = nn.remat_scan(*layers)",
        "import flax.linen as nn\nclass L(nn.Module):\n    def __call__(self, x):\n        return L()(x)\ny = nn.remat_scan(L)",
        "import flax.linen as nn\ndef f():\n    return g()\ndef g():\n    return f()\n"
        "class L(nn.Module):\n    def __call__(self, x):\n        return f()\ny = nn.remat_scan(L)",
        "from flax import nnx\nclass B(nnx.Module):\n    def __call__(self, x):\n        return nnx.remat(lambda h: self.bn(h))(x)",
        TABLE + "p = P[a:b]\nif p:\n    f = jax.checkpoint(f, policy=p)",
        "import jax\nP = {**Q, b'full': None, 'x': 1}\np = P[s]\nif p:\n    f = jax.checkpoint(f, policy=p)",
    ],
    ids=["no-args", "star-args", "recursive-class", "recursive-helpers", "unknown-attribute", "slice", "odd-keys"],
)
def test_partial_or_odd_code_is_not_reported(source):
    assert rows(source) == []


def test_remat_scan_over_a_layer_from_elsewhere_is_not_reported():
    assert rows("import flax.linen as nn\nfrom model import Layer\ny = nn.remat_scan(Layer, lengths=(2,))") == []


def test_a_local_function_named_with_partitioning_is_not_flax():
    source = (
        "import flax.linen as nn\ndef with_partitioning(init, names):\n    return init\n"
        "class L(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn.Dense(4, kernel_init=with_partitioning(i, ('a',)))(x)\ny = nn.remat_scan(L, lengths=(2,))"
    )
    assert rows(source) == []


def test_a_layer_written_twice_is_not_resolved():
    source = (
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, r, frozen):\n"
        "        self.bn = nnx.BatchNorm(4, rngs=r)\n        if frozen:\n            self.bn = nnx.Linear(4, 4, rngs=r)\n"
        "    def __call__(self, x):\n        return nnx.remat(lambda h: self.bn(h))(x)"
    )
    assert rows(source) == []


def test_dropout_given_rngs_at_the_call_is_not_reported():
    source = (
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, r):\n        self.do = nnx.Dropout(0.5)\n"
        "    def __call__(self, x, rngs):\n        return nnx.remat(lambda h, rngs: self.do(h, rngs=rngs))(x, rngs)"
    )
    assert rows(source) == []


def test_a_closure_reports_each_stateful_call_once_on_its_line():
    source = (
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, r):\n"
        "        self.lin = nnx.Linear(4, 4, rngs=r)\n        self.bn = nnx.BatchNorm(4, rngs=r)\n"
        "        self.do = nnx.Dropout(0.5, rngs=r)\n    def __call__(self, x):\n        def body(h):\n"
        "            h = self.bn(self.lin(h))\n            return self.do(h)\n"
        "        return nnx.remat(body)(x) + nnx.remat(body)(x)"
    )
    assert sorted(rows(source)) == [("REM019", 9), ("REM019", 10)]


def test_a_literal_key_other_than_full_is_not_reported():
    assert rows(TABLE + "p = P['dots']\nif p:\n    f = jax.checkpoint(f, policy=p)") == []
    assert rows(TABLE + "p = P['full']\nif p:\n    f = jax.checkpoint(f, policy=p)") == [("REM107", 4)]


def test_a_guard_on_another_variable_or_in_another_function_is_not_reported():
    guarded_elsewhere = TABLE + "p = P[s]\nif q is not None:\n    f = jax.checkpoint(f, policy=p)"
    nested = (
        TABLE
        + "def b(f, s):\n    p = P[s]\n    if p:\n        def g():\n            return jax.checkpoint(f, policy=p)\n"
    )
    rebound = (
        TABLE
        + "p = P[s]\nif p is not None:\n    p = jax.checkpoint_policies.dots_saveable\n    f = jax.checkpoint(f, policy=p)"
    )
    assert rows(guarded_elsewhere) == rows(nested) == rows(rebound) == []


def test_the_guard_is_reported_and_names_the_table():
    [finding] = lint(TABLE + "p = P.get(s)\nif p is not None:\n    f = jax.checkpoint(f, policy=p)", {"REM107"})
    assert finding.start.row == 4
    assert finding.message.startswith(
        'The guard `p is not None` skips the checkpoint for the setting "full", which `P` maps to None'
    )


def test_a_dict_call_is_a_table_and_a_local_dict_is_not():
    guarded = "def b(f, s):\n    p = P[s]\n    if p is not None:\n        f = jax.checkpoint(f, policy=p)\n    return f"
    assert rows("import jax\nP = dict(full=None)\n" + guarded) == [("REM107", 5)]
    assert rows("import jax\nP = dict(none=None)\n" + guarded) == []
    assert rows("import jax\ndef dict(**k):\n    return k\nP = dict(full=None)\n" + guarded) == []


@pytest.mark.parametrize(
    ("branch", "reported"),
    [
        ("    if p is not None and on:\n        f = jax.checkpoint(f, policy=p)\n    return f", True),
        ("    if p is None or not on:\n        return f\n    else:\n        return jax.checkpoint(f, policy=p)", True),
        ("    if p is not None or on:\n        f = jax.checkpoint(f, policy=p)\n    return f", False),
        ("    if p is None and on:\n        return f\n    else:\n        return jax.checkpoint(f, policy=p)", False),
    ],
    ids=["and-in-body", "or-in-else", "or-in-body", "and-in-else"],
)
def test_a_guard_combined_with_another_condition(branch, reported):
    source = "import jax\nP = {'full': None}\ndef b(f, s, on):\n    p = P[s]\n" + branch
    assert rows(source) == ([("REM107", 5)] if reported else [])
