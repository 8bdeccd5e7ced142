"""REM101 and REM102 through a call chain across a third module (fixtures/xmod_chain/): train.py
differentiates functions of model.py and objectives.py that end with the checkpoints of layers.py
and losses.py. Found with only the checkpoint's file linted (the staged file of a pre-commit run),
in the CLI and in flake8; the claims of the messages are checked on the fixture's own code, compiled
under the grads train.py takes (tests/analysis/chain_costs.py); the quiet twins save memory."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.flake8_plugin import Plugin

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "xmod_chain"
KEEP_BARRIERS = "--xla_disable_hlo_passes=cse_barrier_expander"  # as tests/jax_claims/test_grad.py


def staged(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[int, str]]:
    """The (row, message) of the CLI's findings with only ``pkg/<name>`` linted, as flake8 finds them too."""
    monkeypatch.chdir(FIXTURE)
    main(["--no-cache", "--output-format", "concise", os.path.join("pkg", name)])
    rows = [
        (int(line.split(":")[1]), line.split(": ", 1)[1])
        for line in capsys.readouterr().out.splitlines()
        if ": REM" in line
    ]
    source = (FIXTURE / "pkg" / name).read_text()
    found = Plugin(ast.parse(source), source.splitlines(keepends=True), os.path.join("pkg", name)).run()
    assert sorted((row, text) for row, _, text, _ in found) == rows  # flake8 sorts what plugins yield
    return rows


def test_a_grad_two_modules_away_reaches_the_last_stage(capsys, monkeypatch):
    # train.py names neither `head` nor `logits`: it is read because it names what calls them
    assert staged(capsys, monkeypatch, "layers.py") == [
        (
            18,
            "REM102 `jax.checkpoint(_project)(...)` is the last stage of `loss` (through `head`): checkpointing it saves "
            "little or no memory",
        ),
        (
            23,
            "REM102 `jax.checkpoint(_project)(...)` is the last stage of `loss_fn` (through `forward`, `logits`): "
            "checkpointing it saves little or no memory",
        ),
        (36, "REM102 `readout(...)` is the last stage of `readout_loss`: checkpointing it saves little or no memory"),
        # a same-module hop in the middle module (model.chained_loss ends with model._tail_loss), and in the
        # differentiating one (train.scaled_loss ends with train._halved): +9.1 % FLOPs, temp unchanged, as `loss`
        (
            50,
            "REM102 `jax.checkpoint(_project)(...)` is the last stage of `chained_loss` (through `_tail_loss`, `tail`): "
            "checkpointing it saves little or no memory",
        ),
        (
            60,
            "REM102 `jax.checkpoint(_project)(...)` is the last stage of `scaled_loss` (through `_halved`, `final_loss`, "
            "`final`): checkpointing it saves little or no memory",
        ),
    ]


def test_a_whole_loss_differentiated_through_a_one_line_wrapper_module(capsys, monkeypatch):
    assert staged(capsys, monkeypatch, "losses.py") == [
        (
            14,
            "REM101 The whole function differentiated by `jax.value_and_grad` at train.py:25 through `objective` is "
            "checkpointed",
        ),
    ]


def test_the_place_of_the_differentiation_is_in_the_full_message(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURE)
    main(["--no-cache", "--output-format", "json", os.path.join("pkg", "layers.py")])
    details = [f["detail"] for f in json.loads(capsys.readouterr().out)]
    places = [d.split("(differentiated at ")[1][:11] for d in details]
    assert places == ["train.py:12", "train.py:21", "train.py:37", "train.py:45", "train.py:61"]


@pytest.fixture(scope="module")
def costs() -> dict[str, list[dict[str, float]]]:
    pytest.importorskip("jax")
    env = {**os.environ, "XLA_FLAGS": KEEP_BARRIERS, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(FIXTURE)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "analysis" / "chain_costs.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=FIXTURE,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def flops_increase(pair: list[dict[str, float]]) -> float:
    return pair[1]["flops"] / pair[0]["flops"] - 1


def same_temp(pair: list[dict[str, float]]) -> bool:
    return abs(pair[1]["temp"] - pair[0]["temp"]) <= 1024  # a few bytes of bookkeeping, no activations


@pytest.mark.parametrize("case", ["REM102 loss", "REM102 readout_loss"])
def test_rem102_the_last_stage_runs_twice_for_no_memory(costs, case):
    # "under `jax.value_and_grad` it recomputes the stage in the backward pass for little or no memory"
    pair = costs[case]
    assert 0.05 < flops_increase(pair) < 0.15 and same_temp(pair), pair  # measured +9.1 %, the same temp


def test_rem101_the_forward_runs_twice_and_no_memory_is_saved(costs):
    # "the forward pass runs twice, once for the value and again inside the backward pass ... no memory is saved"
    pair = costs["REM101 objective"]
    assert 0.25 < flops_increase(pair) < 0.5 and same_temp(pair), pair  # measured +36.1 %, the same temp


@pytest.mark.parametrize("twin", ["quiet accumulated", "quiet scan", "quiet stacked"])
def test_the_quiet_twins_checkpoints_save_memory(costs, twin):
    without, checkpointed = costs[twin]
    assert checkpointed["temp"] < 0.5 * without["temp"], costs[twin]  # measured -91 %, -71 % and -58 %


LAYERS = "import jax\n\n\n@jax.checkpoint\ndef head(w, h):\n    return jax.nn.gelu(h @ w)\n"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # the grad's module ends its loss with the imported checkpoint: its last stage
        (
            "def loss(w, x):\n    return jnp.mean(head(w, x) ** 2)\n\n\ngrads = jax.value_and_grad(loss)\n",
            "REM102 `head(...)` is the last stage of `loss`: checkpointing it saves little or no memory",
        ),
        # differentiated whole: REM101's finding, and no REM102 beside it
        (
            "grads = jax.value_and_grad(head)\n",
            "REM101 The whole function differentiated by `jax.value_and_grad` at model.py:6 is checkpointed",
        ),
    ],
)
def test_an_imported_checkpoint_called_last_is_the_last_stage(tmp_path, capsys, monkeypatch, model, expected):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "model.py").write_text("import jax\nimport jax.numpy as jnp\n\nfrom layers import head\n\n" + model)
    monkeypatch.chdir(tmp_path)
    main(["--no-cache", "--output-format", "concise", "layers.py"])
    assert [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines() if ": REM" in line] == [expected]
