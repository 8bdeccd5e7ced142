"""Without a project root (no pyproject.toml, .git or configuration above the files), a file in a
package is named as Python imports it, from the folder above the package: two packages that each
hold a ``cfg.py`` do not read each other's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.project.model import Project
from remat_lint.project.summary import ModuleSummary

MODEL = """\
import jax
from jax import checkpoint_policies as cp
from jax.ad_checkpoint import checkpoint_name

from .cfg import KEEP


def block(x):
    return checkpoint_name(x * 2, "k_proj")


F = jax.checkpoint(block, policy=cp.save_only_these_names(*KEEP))
"""


def write(folder: Path, keep: str) -> None:
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "cfg.py").write_text(f"KEEP = ({keep!r},)\n")
    (folder / "model.py").write_text(MODEL)


def test_each_package_reads_its_own_module(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "wrong", "k_pro")
    write(tmp_path / "right", "k_proj")
    main(
        [
            "--select",
            "REM008",
            "--no-cache",
            "--output-format",
            "json",
            str(tmp_path / "right"),
            str(tmp_path / "wrong"),
        ]
    )
    found = json.loads(capsys.readouterr().out)
    assert [(Path(f["filename"]).parent.name, f["location"]["row"]) for f in found] == [("wrong", 12)]


def test_a_name_two_files_claim_resolves_to_neither(tmp_path: Path) -> None:
    project = Project(None)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "cfg.py").write_text("")
        summary = ModuleSummary(defines={"KEEP"})
        project.add(str(tmp_path / folder / "cfg.py"), summary, {})
    assert project.resolve(project.by_path[str((tmp_path / "a" / "cfg.py").resolve())], (0, "cfg.KEEP")) is None
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "__init__.py").write_text("")
    (tmp_path / "c" / "cfg.py").write_text("")
    project.add(str(tmp_path / "c" / "cfg.py"), ModuleSummary(defines={"KEEP"}), {})
    assert project.modules["c.cfg"].path.endswith("c/cfg.py")
