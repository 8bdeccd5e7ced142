"""REM401's saving thresholds, on costs measured in bench/done_when (jax 0.10.2, XLA:CPU).

The observed program decides strictly (a single byte saved: not reported); the 16-times batch, an
extrapolation, counts a saving only from ``SCALED_SAVING`` of peak temp."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")

from remat_lint.trace.worker.costs import Costs  # noqa: E402
from remat_lint.trace.worker.discovery import SCALED_SAVING, _no_saving  # noqa: E402

MIB = 1024 * 1024


def test_a_whole_gpt_that_saves_one_activation_at_scale_counts_as_saving_nothing() -> None:
    # nn.remat(GPT) before a cross-entropy at i32[128,33]: 74.05 vs 75.05 MiB, FLOPs +31.6 %
    assert _no_saving(Costs(int(74.05 * MIB), 3.80e9), Costs(int(75.05 * MIB), 2.89e9), slack=SCALED_SAVING)


def test_a_per_layer_checkpoint_that_saves_a_fifth_at_scale_is_saving() -> None:
    # jax.checkpoint of two tanh layers at 16 times f32[8,16]: 32.1 vs 40.0 KiB
    assert not _no_saving(Costs(32_870, 2.0e6), Costs(40_960, 1.6e6), slack=SCALED_SAVING)


def test_at_the_observed_shapes_one_byte_saved_is_saving() -> None:
    assert not _no_saving(Costs(4095, 2.0e6), Costs(4096, 1.5e6))
