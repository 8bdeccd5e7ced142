"""Lint a small project in-process and read each finding's whole message (the JSON report's first
sentence, its period stripped, and its detail), for tests that pin what a cross-module message says."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from remat_lint.cli.command import main


def project_messages(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, files: dict[str, str], *select: str
) -> list[tuple[str, int, str]]:
    """(path, row, "CODE whole message") of each finding, ``files`` (path: source) linted as one project."""
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for path, source in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(source))
    monkeypatch.chdir(root)
    main(["--select", ",".join(select) or "ALL", "--no-cache", "--output-format", "json", "."])
    return [
        (
            f["filename"],
            f["location"]["row"],
            f"{f['code']} {f['message']}" + (f". {f['detail']}" if f["detail"] else ""),
        )
        for f in json.loads(capsys.readouterr().out)
    ]
