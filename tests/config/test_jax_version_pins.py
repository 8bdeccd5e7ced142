"""The JAX version a project pins (remat_lint/jax_version.detect), pinned where hand-made edits of
2026-11-25 passed the suite: a lower bound or a wildcard is no pin, an optional dependency's pin
and poetry.lock's version count."""

from __future__ import annotations

from importlib import metadata

import pytest
from packaging.version import Version

from remat_lint.config.jax_version import detect

INSTALLED = (Version(metadata.version("jax")), "the installed jax")


@pytest.mark.parametrize(
    ("name", "text", "pinned"),
    [
        ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["jax>=0.8.3"]\n', False),
        ("requirements.txt", "jax==0.8.*\n", False),
        ("pyproject.toml", '[project]\nname = "p"\n[project.optional-dependencies]\ntpu = ["jax[tpu]==0.8.3"]\n', True),
        ("poetry.lock", '[[package]]\nname = "jax"\nversion = "0.8.3"\n', True),
    ],
)
def test_what_counts_as_the_projects_pin(tmp_path, name, text, pinned):
    (tmp_path / name).write_text(text)
    assert detect(str(tmp_path)) == ((Version("0.8.3"), str(tmp_path / name)) if pinned else INSTALLED)
