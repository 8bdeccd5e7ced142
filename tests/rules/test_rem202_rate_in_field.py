"""REM202 on a dropout rate held in a field of the Module (``nn.Dropout(self.dropout_rate)``):
Flax tests ``deterministic`` only when the rate is nonzero, so the traced flag fails only if every
construction of the Module in the project leaves the rate nonzero."""

from __future__ import annotations

import pytest

from tests.helpers import lint
from tests.project_messages import project_messages

BLOCK = """\
import flax.linen as nn


class Block(nn.Module):
    features: int
    dropout_rate: float = 0.1

    @nn.compact
    def __call__(self, x, deterministic):
        x = nn.Dense(self.features)(x)
        return nn.Dropout(self.dropout_rate)(x, deterministic=deterministic)


RematBlock = nn.remat(Block)
"""


def model(construction: str) -> str:
    return (
        "import flax.linen as nn\n\nfrom pkg.block import RematBlock\n\n\nclass Model(nn.Module):\n"
        f"    @nn.compact\n    def __call__(self, x, deterministic):\n        return {construction}(x, deterministic)\n"
    )


def test_a_nonzero_default_left_by_this_module_is_reported_at_the_dropout_call() -> None:
    (finding,) = lint(BLOCK, {"REM202"})
    assert finding.start.row == 11
    assert finding.message.startswith("Python `if deterministic` in `Dropout` on `deterministic` fails")


@pytest.mark.parametrize(
    "change",
    [
        ("dropout_rate: float = 0.1", "dropout_rate: float = 0.0"),  # a zero default
        ("dropout_rate: float = 0.1", "dropout_rate: float = RATE"),  # unknown here
        ("RematBlock = nn.remat(Block)", "RematBlock = nn.remat(Block)\nquiet = RematBlock(4, dropout_rate=0.0)"),
        ("RematBlock = nn.remat(Block)", "RematBlock = nn.remat(Block)\nquiet = Block(4, 0.0)"),  # by position
        ("RematBlock = nn.remat(Block)", "RematBlock = nn.remat(Block)\nquiet = Block(**settings)"),
        ("RematBlock = nn.remat(Block)", "RematBlock = nn.remat(Block)\nmake = partial(Block, 4)"),  # passed on
        (
            "RematBlock = nn.remat(Block)",
            "RematBlock = nn.remat(Block)\nclass Quiet(Block):\n    dropout_rate: float = 0.0",
        ),
        ("    @nn.compact", "    def setup(self):\n        self.dropout_rate = 0.0\n\n    @nn.compact"),
        ("    @nn.compact", "    def __post_init__(self):\n        super().__post_init__()\n\n    @nn.compact"),
    ],
)
def test_a_rate_that_may_be_zero_in_this_module_is_not_reported(change: tuple[str, str]) -> None:
    assert lint(BLOCK.replace(*change), {"REM202"}) == []


def test_a_construction_in_this_module_with_a_nonzero_rate_or_fewer_positions_keeps_it() -> None:
    source = BLOCK + "a = RematBlock(4, dropout_rate=0.2)\nb = nn.remat(Block)(8)\n"
    assert [f.start.row for f in lint(source, {"REM202"})] == [11]


@pytest.mark.parametrize(
    ("construction", "found"),
    [
        ("RematBlock(4)", True),
        ("RematBlock(4, dropout_rate=0.2)", True),
        ("RematBlock(4, dropout_rate=0.0)", False),  # Flax never tests the flag: it runs
        ("RematBlock(4, 0.0)", False),
        ("RematBlock(4, dropout_rate=self.rate)", False),
        ("nn.remat(RematBlock)(4)", False),  # another wrap: passed on
    ],
)
def test_other_modules_constructions_decide(tmp_path, capsys, monkeypatch, construction: str, found: bool) -> None:
    files = {"pkg/__init__.py": "", "pkg/block.py": BLOCK, "pkg/model.py": model(construction)}
    messages = project_messages(tmp_path, capsys, monkeypatch, files, "REM202")
    assert [(path, row) for path, row, _ in messages] == ([("pkg/block.py", 11)] if found else [])


def test_a_subclass_in_another_module_may_change_the_default(tmp_path, capsys, monkeypatch) -> None:
    other = "from pkg.block import Block\n\n\nclass Quiet(Block):\n    dropout_rate: float = 0.0\n"
    files = {"pkg/__init__.py": "", "pkg/block.py": BLOCK, "pkg/quiet.py": other}
    assert project_messages(tmp_path, capsys, monkeypatch, files, "REM202") == []


def test_a_module_that_never_names_the_class_does_not_set_its_field(tmp_path, capsys, monkeypatch) -> None:
    unrelated = "import flax.linen as nn\n\nhead = nn.Dropout(rate=0.0)\nother = dict(dropout_rate=0.0)\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/block.py": BLOCK,
        "pkg/model.py": model("RematBlock(4)"),
        "pkg/head.py": unrelated,
    }
    messages = project_messages(tmp_path, capsys, monkeypatch, files, "REM202")
    assert [(path, row) for path, row, _ in messages] == [("pkg/block.py", 11)]


def test_a_module_that_only_annotates_with_the_class_does_not_set_its_field(tmp_path, capsys, monkeypatch) -> None:
    typed = "from pkg.block import Block\n\n\ndef describe(block: Block) -> str:\n    return repr(block)\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/block.py": BLOCK,
        "pkg/model.py": model("RematBlock(4)"),
        "pkg/typed.py": typed,
    }
    messages = project_messages(tmp_path, capsys, monkeypatch, files, "REM202")
    assert [(path, row) for path, row, _ in messages] == [("pkg/block.py", 11)]
