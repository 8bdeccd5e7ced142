"""What keeps remat-lint fast at every scale, as behaviour: files are streamed (read, prefiltered and
dropped one at a time, so memory stays flat as the tree grows), and a warm run or the flake8 plugin
on a file without remat imports neither libcst nor a rule module (0.3 s of a pre-commit run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remat_lint.cache.result_cache import Cache
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import Settings
from remat_lint.engine import runner

ROOT = Path(__file__).resolve().parents[2]
BAD = "import jax\ng = jax.checkpoint(f, policy='dots_saveable')\n"  # REM001, a per-file rule
PLAIN = "import numpy as np\nx = np.ones(3)\n"


def test_files_are_read_one_at_a_time(tmp_path, monkeypatch):
    """Each file is read only after the one before it was prefiltered: nothing holds the tree."""
    paths = []
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(PLAIN if i % 2 else BAD)
        paths.append(str(tmp_path / f"m{i}.py"))
    events: list[str] = []
    read, decode = runner._read, runner.decode_source
    monkeypatch.setattr(runner, "_read", lambda path: events.append("read") or read(path))
    monkeypatch.setattr(runner, "decode_source", lambda path, data: events.append("decode") or decode(path, data))
    result = runner.run(paths, Resolver.of(Settings(root=tmp_path)))
    assert events == ["read", "decode"] * 4
    assert {f.path for f in result.findings} == {paths[0], paths[2]}
    assert set(result.sources) == {paths[0], paths[2]}  # the texts kept: those of files with findings


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_a_file_linted_alone_reads_each_imported_file_once(tmp_path, monkeypatch, cache):
    """The imported module that exports the wrap is read for its import facts and linted from that
    one read; the finding at the call is still there."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text(
        "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef double(x, n):\n"
        "    return x * n\n"
    )
    (tmp_path / "pkg" / "model.py").write_text("from pkg.layers import double\ny = double(1.0, n=3)\n")
    reads: list[str] = []
    read = runner._read
    monkeypatch.setattr(runner, "_read", lambda path: reads.append(os.path.basename(path)) or read(path))
    monkeypatch.chdir(tmp_path)
    store = Cache(str(tmp_path / ".cache")) if cache else None
    result = runner.run([os.path.join("pkg", "model.py")], Resolver.of(Settings(root=tmp_path)), cache=store)
    assert [(f.code, f.start.row) for f in result.findings] == [("REM012", 2)]
    assert reads.count("layers.py") == 1


def _modules_after(args: list[str], cwd: Path) -> tuple[str, list[str]]:
    """Run the CLI in a fresh interpreter; its output and which heavy modules it imported (subprocess
    and multiprocessing: 5 % of a warm run that is not replayed, on jax+flax)."""
    script = (
        "import json, sys\n"
        "from remat_lint.cli.command import main\n"
        f"code = main({args!r})\n"
        "heavy = [m for m in sys.modules if m in ('libcst', 'subprocess', 'multiprocessing')\n"
        "         or m.startswith(('remat_lint.rules.', 'remat_lint.output.reporters.'))]\n"
        "print(json.dumps(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd)
    return proc.stdout, json.loads(proc.stderr.strip().splitlines()[-1])


def test_warm_run_imports_no_libcst_no_rule_and_one_reporter(tmp_path):
    (tmp_path / "model.py").write_text(BAD)
    (tmp_path / "plain.py").write_text(PLAIN)
    cold_out, cold = _modules_after(["--output-format", "concise", "model.py", "plain.py"], tmp_path)
    assert "libcst" in cold  # the first run parsed model.py: the checks below can fail
    warm_out, warm = _modules_after(["--output-format", "concise", "model.py", "plain.py"], tmp_path)
    assert warm_out == cold_out and "REM001" in warm_out
    # A stale remat_lint/rule_table.py (`python -m remat_lint.docs` regenerates it) imports every rule.
    assert warm == ["remat_lint.output.reporters.text"]


def _flake8_imports_libcst(path: str, cwd: Path) -> tuple[bool, int]:
    script = (
        "import sys\n"
        "from flake8.main.cli import main\n"
        f"code = main(['--isolated', '--select=REM', {path!r}])\n"
        "print('libcst' in sys.modules, code, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd)
    imported, code = proc.stderr.split()[-2:]
    return imported == "True", int(code)


def test_flake8_plugin_imports_libcst_only_for_a_file_that_needs_a_parse(tmp_path):
    (tmp_path / "plain.py").write_text(PLAIN)
    (tmp_path / "model.py").write_text(BAD)
    assert _flake8_imports_libcst("plain.py", tmp_path) == (False, 0)
    assert _flake8_imports_libcst("model.py", tmp_path) == (True, 1)


def test_warm_run_with_a_project_wide_finding_imports_no_libcst(tmp_path):
    """REM101 confirmed in the project phase (another module differentiates the checkpoint): a warm
    run imports the rules with candidates there only (REM102 asks whether a grad reaches the
    checkpoint as a last stage), not libcst or the analyses their per-file checks need."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text("import jax\n\n\n@jax.checkpoint\ndef loss(p, x):\n    return (p * x).sum()\n")
    (tmp_path / "train.py").write_text("import jax\n\nfrom model import loss\n\ngrads = jax.grad(loss)\n")
    args = ["--output-format", "concise", "model.py", "train.py"]
    cold_out, cold = _modules_after(args, tmp_path)
    assert "libcst" in cold and "REM101" in cold_out
    warm_out, warm = _modules_after(args, tmp_path)
    assert warm_out == cold_out
    assert warm == [
        "remat_lint.rules.rem101_checkpoint_whole_loss",
        "remat_lint.rules.rem102_checkpoint_last_stage",
        "remat_lint.output.reporters.text",
    ]


def test_warm_run_confirming_rem003_and_rem011_imports_no_libcst(tmp_path):
    """REM003 (a factory in a table another module reads by key) and REM011 (static_argnums of a
    class from another module) are confirmed in the project phase: a warm run imports those rules,
    not libcst or the analyses (remat_lint/lazy_import.py)."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "policies.py").write_text(
        "from jax import checkpoint_policies as cp\n\nPOLICIES = {'dots': cp.dots_saveable, 'names': cp.save_only_these_names}\n"
    )
    (tmp_path / "layers.py").write_text(
        "import flax.linen as nn\n\n\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x, train: bool):\n"
        "        if train:\n            x = nn.Dropout(0.1, deterministic=False)(x)\n        return x\n"
    )
    (tmp_path / "model.py").write_text(
        "import flax.linen as nn\nimport jax\n\nfrom layers import Block\nfrom policies import POLICIES\n\n"
        "Remat = nn.remat(Block, static_argnums=(1,))\n\n\ndef features(x, name):\n"
        "    return jax.checkpoint(jax.numpy.sin, policy=POLICIES[name])(x)\n"
    )
    args = ["--output-format", "concise", "model.py", "policies.py", "layers.py"]
    cold_out, cold = _modules_after(args, tmp_path)
    assert "libcst" in cold and "REM003" in cold_out and "REM011" in cold_out
    warm_out, warm = _modules_after(args, tmp_path)
    assert warm_out == cold_out
    assert "libcst" not in warm
    assert {"remat_lint.rules.rem003_policy_misuse", "remat_lint.rules.rem011_bad_static_argnums"} <= set(warm)


def test_cold_run_on_remat_words_outside_the_code_imports_no_libcst(tmp_path):
    """Stage 3 from the text (remat_lint/engine/prefilter/text_references.py) rejects, in the main process, a file
    whose remat words sit in a docstring, a comment, a string or on a module holding no API: a
    cold run parses nothing, so it imports no libcst and starts no worker."""
    (tmp_path / "io.py").write_text(
        '"""Save a checkpoint of the model (jax.checkpoint is unrelated)."""\nimport orbax.checkpoint as ocp\n\n'
        "# remat later\nocp.save('checkpoint', 1)\n"
    )
    (tmp_path / "model.py").write_text(BAD)
    out, imported = _modules_after(["--no-cache", "--output-format", "concise", "io.py"], tmp_path)
    assert out == "" and imported == ["remat_lint.output.reporters.text"]
    out, imported = _modules_after(["--no-cache", "--output-format", "concise", "io.py", "model.py"], tmp_path)
    assert "REM001" in out and "libcst" in imported  # the same run with a file to parse: the check above can fail
