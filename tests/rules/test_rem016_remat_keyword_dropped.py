"""REM016's message names the dropped keyword and what happens to its parameter: it keeps its
default, or (none) the call raises `TypeError`; written against surviving mutants."""

from __future__ import annotations

import pytest

from tests.helpers import lint

MLP = (
    "import flax.linen as nn\nimport flax.linen.partitioning as nnp\nclass Mlp(nn.Module):\n"
    "    def __call__(self, x, {PARAM}):\n        return x\nR = nnp.remat(Mlp)\ny = R()(x, {KEYWORD}=v)\n"
)


@pytest.mark.parametrize(
    ("param", "keyword", "effect"),
    [
        ("deterministic=True", "deterministic", "`deterministic` keeps its default `True`"),
        ("rng", "rng", "`rng` has no default, so the call raises `TypeError` (missing argument)"),
    ],
)
def test_the_message_says_what_the_dropped_keyword_leaves(param, keyword, effect):
    [finding] = lint(MLP.format(PARAM=param, KEYWORD=keyword), {"REM016"})
    assert (finding.start.row, finding.start.column) == (7, 4)
    assert finding.message == (
        f"`nn_partitioning.remat` drops the keyword argument `{keyword}=` with only a `RuntimeWarning`. It ignores "
        f"every keyword of the call: {effect}; pass it positionally"
    )
