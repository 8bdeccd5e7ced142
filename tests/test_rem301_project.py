"""REM301 across modules on one staged file (what pre-commit passes): the scan's module is linted
alone and the project's other files are read for the grad that reaches it. The whole-project run
and flake8 are checked on the same fixture by tests/test_fixtures.py and the snapshots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from remat_lint.cli import main
from remat_lint.project.summary import ModuleSummary

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "xmod_scan_linen"


def staged(capsys: pytest.CaptureFixture[str], path: str) -> list[tuple[int, str]]:
    """(row, message) of each finding of ``remat-lint --select REM301`` on ``path`` alone."""
    main(["--select", "REM301", "--no-cache", "--output-format", "concise", "-q", path])
    return [(int(line.split(":")[1]), line.split(" REM301 ")[1]) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_linen_module_class_reached_from_another_modules_grad(project, capsys):
    assert staged(capsys, "pkg/layers.py") == [
        (18, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:32 has no checkpoint on its body"),
        (26, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:33 has no checkpoint on its body"),
        # StackDecoder: train.py builds the Transformer whose setup builds it
        (47, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:42 has no checkpoint on its body"),
        # DeepDecoder: train.py builds nets.Seq2Seq, whose setup builds it (DeepEncoder: nets.Featurizer, run forward)
        (61, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:57 has no checkpoint on its body"),
    ]


def test_a_scan_in_a_module_that_differentiates_something_else(project, capsys):
    assert [row for row, _ in staged(capsys, "pkg/model.py")] == [12]


def test_quiet_once_the_grads_are_gone(project, capsys):
    train = project / "pkg" / "train.py"
    train.write_text(train.read_text().split("decoder_grad =")[0])  # the losses stay, nothing differentiates them
    assert staged(capsys, "pkg/layers.py") == []
    assert staged(capsys, "pkg/model.py") == []


def test_files_naming_the_classes_that_build_a_class_are_read_next():
    """The project pass reads next the files naming what calls a candidate's symbol: a class whose
    method builds it (nets.Seq2Seq for layers.DeepDecoder), not every class calling a function
    (``nn.remat`` in a method would draw in most of a large project: flax's own repository)."""
    nets = ModuleSummary(
        calls={"Seq2Seq": [(0, "pkg.layers.DeepDecoder")], "Model": [(0, "flax.linen.remat")], "helper": [(0, "flax.linen.remat")]},
        bases={"Seq2Seq": [(0, "flax.linen.Module")], "Model": [(0, "flax.linen.Module")]},
    )
    assert nets.related_names(frozenset({"DeepDecoder"})) == {"Seq2Seq"}
    assert nets.related_names(frozenset({"remat"})) == {"helper"}
