"""REM102 across modules: a checkpoint another module differentiates whole (REM101's) does not hide
the next one, and of several grads the message names the worst (`value_and_grad`); written against
surviving mutants."""

from __future__ import annotations

import json
import os

from remat_lint.cli import main
from tests.test_project import make_project

LAYERS = """\
import jax


def _whole(p, x):
    return (x * p).sum()


def _head(p, x):
    return x * p


whole = jax.checkpoint(_whole)
head = jax.checkpoint(_head)
"""


def lint(tmp_path, capsys, monkeypatch, train: str) -> list[tuple[int, str]]:
    """(row, code and whole message) of the findings in losses.py, the project linted whole."""
    make_project(tmp_path, train, losses=LAYERS)
    monkeypatch.chdir(tmp_path)
    main(["--select", "ALL", "--no-cache", "--output-format", "json", "."])
    found = json.loads(capsys.readouterr().out)
    return [
        (f["location"]["row"], f"{f['code']} {f['message']} {f['detail'] or ''}".strip())
        for f in found
        if f["filename"] == os.path.join("pkg", "losses.py")
    ]


def test_a_checkpoint_differentiated_whole_does_not_hide_the_next_last_stage(tmp_path, capsys, monkeypatch):
    train = (
        "import jax\nfrom .losses import whole, head\ng1 = jax.grad(whole)\n"
        "def loss(p, x):\n    return head(p, x).mean()\ng2 = jax.grad(loss)\n"
    )
    found = lint(tmp_path, capsys, monkeypatch, train)
    assert [(row, message.split()[0]) for row, message in found] == [(12, "REM101"), (13, "REM102")]
    assert found[1][1].startswith("REM102 `head(...)` is the last stage of `loss`: checkpointing it saves little or no memory")


def test_of_two_grads_the_message_names_value_and_grad(tmp_path, capsys, monkeypatch):
    train = (
        "import jax\nfrom .losses import head\n"
        "def loss(p, x):\n    return head(p, x).mean()\ng1 = jax.grad(loss)\ng2 = jax.value_and_grad(loss)\n"
    )
    [(row, message)] = lint(tmp_path, capsys, monkeypatch, train)
    assert row == 13
    assert "under `jax.value_and_grad` it recomputes the stage in the backward pass" in message
    assert message.endswith("(differentiated at train.py:6). Checkpoint an earlier stage instead")
