"""target-jax-version: messages about removed or changed APIs say what the project's planned
upgrade breaks. Version facts checked against JAX's own sources (jax 0.8.3, 0.10.1, 0.10.2 wheels)
and the installed jax's deprecation messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = (
    "import jax\nimport jax.ad_checkpoint\n"
    "g = jax.ad_checkpoint.checkpoint(f)\n"
    "p = jax.checkpoint_policies.save_anything_except_these_names('a')\n"
)


def messages(*args: str, cwd: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", "--output-format", "json", *args, "m.py"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    return [item["message"] for item in json.loads(proc.stdout)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "m.py").write_text(SOURCE)
    return tmp_path


def test_the_newest_jax_says_removed(project):
    removed, policy = messages("--target-jax-version", "0.10.2", cwd=project)
    assert removed.startswith("`jax.ad_checkpoint.checkpoint` was removed in JAX 0.10.0")
    assert "saves everything" in policy and "breaks on upgrade" not in policy


def test_an_older_target_says_what_breaks_on_upgrade(project):
    removed, policy = messages("--target-jax-version", "0.8", cwd=project)
    assert removed.startswith("`jax.ad_checkpoint.checkpoint` is deprecated, removed in JAX 0.10.0 — breaks on upgrade")
    assert policy.startswith(
        "`jax.checkpoint_policies.save_anything_except_these_names(...)` saves everything from JAX "
        "0.10.2 — breaks on upgrade"
    )
    removed, policy = messages("--target-jax-version", "0.10.1", cwd=project)
    assert "was removed in JAX 0.10.0" in removed and "breaks on upgrade" in policy


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["jax[cuda12]==0.8.3", "flax"]\n'),
        ("requirements-gpu.txt", "numpy\njax==0.8.3  # pinned for TPU v4\n"),
        ("uv.lock", 'version = 1\n\n[[package]]\nname = "jax"\nversion = "0.8.3"\n'),
        ("pyproject.toml", '[tool.remat-lint]\ntarget-jax-version = "0.8.3"\n'),
    ],
)
def test_the_default_target_is_the_projects_pin(project, name, text):
    (project / name).write_text(text)
    assert "breaks on upgrade" in messages(cwd=project)[0]
    settings = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--show-settings", "m.py"], cwd=project, capture_output=True, text=True
    ).stdout
    assert "target-jax-version 0.8.3 (" in settings and name in settings


def test_an_invalid_target_is_an_error(project):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\ntarget-jax-version = "soon"\n')
    proc = subprocess.run([sys.executable, "-m", "remat_lint", "m.py"], cwd=project, capture_output=True, text=True)
    assert proc.returncode == 2 and "target-jax-version: 'soon' is not a version" in proc.stderr


def test_flake8_words_findings_for_the_pin(project):
    (project / "requirements.txt").write_text("jax==0.8.3\n")
    out = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=REM005", "m.py"], cwd=project, capture_output=True, text=True
    ).stdout
    assert "breaks on upgrade" in out
