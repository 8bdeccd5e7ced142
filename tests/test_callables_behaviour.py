"""What ``analysis/callables.py`` resolves, seen through the findings of the rules that use it;
written against surviving mutants (docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

_BLOCK = """\
from flax import nnx

class Block(nnx.Module):
    def __init__(self, rngs):
        WRITE

    @nnx.remat
    def __call__(self, x, deterministic):
        return self.drop(x, deterministic=deterministic)
"""


def test_a_layer_written_once_to_self_is_followed_to_its_construction():
    [finding] = lint(_BLOCK.replace("WRITE", "self.drop = nnx.Dropout(0.1, rngs=rngs)"))
    assert (finding.code, finding.start.row) == ("REM202", 9)
    assert "`if deterministic` in `Dropout`" in finding.message


@pytest.mark.parametrize(
    "write",
    [
        "self.drop: nnx.Dropout = nnx.Dropout(0.1, rngs=rngs)",  # annotated
        "self.drop, self.scale = nnx.Dropout(0.1, rngs=rngs), 2.0",  # a tuple target
        "self.drop = 0\n        self.drop += 1",  # augmented
    ],
)
def test_writes_to_self_that_are_not_plain_assignments_lint_without_an_internal_error(write: str):
    findings = lint(_BLOCK.replace("WRITE", write))
    assert [f.message for f in findings if f.code == "REM000"] == []
