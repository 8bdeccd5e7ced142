"""The pre-commit hook manifest and the composite GitHub Action, checked as far as a laptop can.

The action's shell steps are run with bash the way the runner would: `${{ … }}` expressions
in `env:` replaced by the inputs, GITHUB_OUTPUT/GITHUB_PATH files, the remat-lint of this
environment on PATH (and a stand-in `python3` where the step would pip install).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # pre-commit depends on PyYAML

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def test_pre_commit_manifest_is_valid_and_declares_the_hook():
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "remat-lint" and hook["language"] == "python"
    # pre-commit names every staged file: --force-exclude keeps [tool.remat-lint] excludes working.
    assert hook["entry"] == "remat-lint --force-exclude"
    assert hook["types_or"] == ["python", "pyi", "jupyter"] and hook["require_serial"] is True


def test_pre_commit_entry_is_a_console_script_of_the_package():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'remat-lint = "remat_lint.cli.launch:main"' in pyproject


def test_force_exclude_applies_excludes_to_named_files(tmp_path, monkeypatch, capsys):
    from remat_lint.cli.command import main

    (tmp_path / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["fixtures"]\n')
    (tmp_path / "fixtures").mkdir()
    bad = "import jax\ng = jax.checkpoint(f, policy='dots_saveable')\n"
    (tmp_path / "fixtures" / "bad.py").write_text(bad)
    (tmp_path / "model.py").write_text(bad)
    monkeypatch.chdir(tmp_path)
    assert main(["--output-format", "concise", "fixtures/bad.py"]) == 1  # named: linted, as in ruff
    capsys.readouterr()
    assert main(["--force-exclude", "--output-format", "concise", "fixtures/bad.py", "model.py"]) == 1
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["model.py"]
    assert main(["--force-exclude", "fixtures/bad.py"]) == 0


@pytest.fixture(scope="module")
def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def test_action_is_composite_and_never_splices_inputs_into_scripts(action):
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"paths", "args", "version", "sarif"}
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        assert "${{" not in step["run"]  # inputs arrive through env: no script injection
    ids = {step.get("id") for step in action["runs"]["steps"]}
    for output in action["outputs"].values():
        [step_id] = re.findall(r"steps\.([\w-]+)\.outputs", output["value"])
        assert step_id in ids


Step = tuple[subprocess.CompletedProcess[str], dict[str, str], str]


def run_step(
    action: dict,
    name: str,
    inputs: dict[str, str],
    cwd: Path,
    path: str | None = None,
    executable: str = str(BIN / "remat-lint"),
) -> Step:
    """Run one step's script as the runner would; returns the process, its outputs and GITHUB_PATH.
    ``executable``: what the install step said remat-lint is."""
    [step] = [s for s in action["runs"]["steps"] if s["name"] == name]
    values = {f"inputs.{key}": spec.get("default", "") for key, spec in action["inputs"].items()}
    values.update({f"inputs.{key}": value for key, value in inputs.items()})
    values.update(
        {
            "github.action_path": str(ROOT),
            "runner.temp": str(cwd / "runner-temp"),
            "steps.install.outputs.executable": executable,
        }
    )
    env = {key: EXPRESSION.sub(lambda m: values[m.group(1)], str(value)) for key, value in step.get("env", {}).items()}
    output, github_path = cwd / "github-output", cwd / "github-path"
    output.write_text("")
    github_path.write_text("")
    env.update(
        PATH=path or os.environ["PATH"],
        HOME=str(cwd),
        GITHUB_OUTPUT=str(output),
        GITHUB_PATH=str(github_path),
    )
    shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]  # the runner's `shell: bash`
    done = subprocess.run([*shell, step["run"]], env=env, cwd=cwd, capture_output=True, text=True)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return done, outputs, github_path.read_text()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text("import jax\ng = jax.checkpoint(f, policy='dots_saveable')\n")
    (tmp_path / "src" / "ok.py").write_text("import jax\ng = jax.checkpoint(f)\n")
    return tmp_path


def test_action_annotates_and_fails_on_findings(action, workspace):
    done, outputs, _ = run_step(action, "Run remat-lint", {"paths": "src"}, workspace)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("::error file=src/model.py,line=2,col=5,")
    assert outputs == {}


def test_action_lints_once_for_annotations_and_sarif(action, workspace):
    log = workspace / "calls"
    wrapper = workspace / "remat-lint-logged"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{BIN / "remat-lint"}" "$@"\n')
    wrapper.chmod(0o755)
    done, outputs, _ = run_step(
        action, "Run remat-lint", {"paths": "src", "sarif": "true"}, workspace, executable=str(wrapper)
    )
    assert done.returncode == 1 and done.stdout.startswith("::error file=src/model.py,line=2,col=5,")
    assert len(log.read_text().splitlines()) == 1
    assert outputs == {"sarif-file": "remat-lint.sarif"}
    [result] = json.loads((workspace / "remat-lint.sarif").read_text())["runs"][0]["results"]
    assert result["ruleId"] == "REM001"


def test_action_passes_on_clean_code_and_extra_args(action, workspace):
    done, _, _ = run_step(action, "Run remat-lint", {"paths": "src/ok.py"}, workspace)
    assert (done.returncode, done.stdout) == (0, "")
    done, _, _ = run_step(action, "Run remat-lint", {"paths": "src", "args": "--ignore REM001"}, workspace)
    assert (done.returncode, done.stdout) == (0, "")


def test_action_writes_sarif_and_outputs_its_path(action, workspace):
    done, outputs, _ = run_step(
        action, "Run remat-lint", {"paths": "src", "sarif": "true", "sarif-file": "out.sarif"}, workspace
    )
    assert done.returncode == 1  # the exit code of the annotating run, not of the SARIF run
    assert outputs == {"sarif-file": "out.sarif"}
    [result] = json.loads((workspace / "out.sarif").read_text())["runs"][0]["results"]
    assert result["ruleId"] == "REM001"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/model.py"


def test_action_reports_usage_errors(action, workspace):
    done, _, _ = run_step(action, "Run remat-lint", {"paths": "src", "args": "--select NOPE1"}, workspace)
    assert done.returncode == 2


@pytest.fixture
def fake_python(tmp_path: Path) -> tuple[str, Path]:
    """A `python3` that logs its arguments and, for `-m venv DIR`, makes a logging DIR/bin/python."""
    log = tmp_path / "python-calls"
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    logger = f'#!/bin/sh\necho "$0 $*" >> "{log}"\n'
    (fake / "python3").write_text(
        logger + 'if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then mkdir -p "$3/bin"; '
        f"printf '%s' '{logger}' > \"$3/bin/python\"; chmod +x \"$3/bin/python\"; fi\n"
    )
    (fake / "python3").chmod(0o755)
    return f"{fake}{os.pathsep}/usr/bin{os.pathsep}/bin", log


@pytest.mark.parametrize(
    "version, requirement",
    [
        ("", str(ROOT)),
        ("0.1.0", "remat-lint==0.1.0"),
        (">=0.1,<0.2", "remat-lint>=0.1,<0.2"),
        ("remat-lint[trace]==0.1.0", "remat-lint[trace]==0.1.0"),
    ],
)
def test_action_installs_with_pip_in_a_virtual_environment(action, workspace, fake_python, version, requirement):
    path, log = fake_python
    done, outputs, github_path = run_step(action, "Install remat-lint", {"version": version}, workspace, path=path)
    assert done.returncode == 0, done.stderr
    venv = workspace / "runner-temp" / "remat-lint-venv"
    calls = log.read_text().splitlines()
    assert calls[0].endswith(f"python3 -m venv {venv}")
    assert calls[1] == f"{venv}/bin/python -m pip install --disable-pip-version-check --quiet {requirement}"
    assert github_path == ""  # later steps keep the job's python and pip
    assert outputs == {"executable": f"{venv}/bin/remat-lint"}  # the run step calls it by this path


def test_action_version_none_uses_what_is_installed(action, workspace, fake_python):
    _, log = fake_python
    done, outputs, github_path = run_step(
        action, "Install remat-lint", {"version": "none"}, workspace, path=f"{BIN}{os.pathsep}{os.environ['PATH']}"
    )
    assert done.returncode == 0 and "remat-lint" in done.stdout
    assert not log.exists() and github_path == "" and outputs == {"executable": "remat-lint"}
