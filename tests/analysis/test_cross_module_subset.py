"""A misuse that spans two modules, linted as pre-commit, flake8 and editors lint: only the calling
file. The finding is on the call (REM012, REM016) or on the ``policy=`` / ``save_only_these_names``
that is wrong (REM001, REM008), with the other place named; linting that file alone finds it, at
the same line as a run on the whole project; and a warm run (result cache and replay) after an edit
of the other module agrees with a ``--no-cache`` run."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.cache import recording
from remat_lint.cache import result_cache as cache
from remat_lint.cli import command as cli
from remat_lint.cli import launch
from remat_lint.engine.results import FileResult
from remat_lint.flake8_plugin import Plugin
from tests.engine.test_replay import age

LAYERS = """\
import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.checkpoint, static_argnums=(3,))
def rotary_attention(q, k, v, num_heads):
    return jnp.einsum("...qd,...kd->...qk", q, k) @ v / num_heads
"""
STACK = """\
from . import layers as L


def stack(q, k, v):
    return L.rotary_attention(q, k, v, num_heads=4)
"""
CALL = ("mypkg/stack.py", 5)  # where the finding goes


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "mypkg/__init__.py": "",
            "mypkg/layers.py": LAYERS,
            "mypkg/stack.py": STACK,
        },
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def json_findings(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    cli.main(["--output-format", "json", *args])
    return json.loads(capsys.readouterr().out)


def rows(findings: list[dict]) -> list[tuple[str, int, str]]:
    return [(f["filename"], f["location"]["row"], f["code"]) for f in findings]


def flake8_rows(path: str) -> list[tuple[int, str]]:
    source = Path(path).read_text()
    found = Plugin(ast.parse(source), source.splitlines(keepends=True), path).run()
    return [(row, text.split(" ", 1)[0]) for row, _, text, _ in found]


def test_the_call_is_reported_where_it_is_written_naming_the_wrap(project, capsys):
    [finding] = json_findings(capsys, "--no-cache", ".")
    assert (finding["filename"], finding["location"]["row"], finding["location"]["column"]) == (*CALL, 12)
    assert finding["message"].startswith("`num_heads` is in `static_argnums` of `rotary_attention` (layers.py:7)")
    assert finding["related"] == [
        {
            "filename": os.path.join("mypkg", "layers.py"),
            "location": {"row": 7, "column": 1},
            "message": "`rotary_attention` is checkpointed here with `static_argnums`",
        }
    ]


def test_the_full_output_notes_the_wrap_under_the_call(project, capsys):
    assert cli.main(["--no-cache", "mypkg/stack.py"]) == 1
    out = capsys.readouterr().out
    assert "5 |     return L.rotary_attention(q, k, v, num_heads=4)\n" in out
    assert "  = note: mypkg/layers.py:7:1: `rotary_attention` is checkpointed here with `static_argnums`\n" in out


def test_linting_only_the_calling_file_finds_it_at_the_same_line(project, capsys):
    whole = rows(json_findings(capsys, "--no-cache", "."))
    assert whole == [(*CALL, "REM012")]
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == whole
    assert flake8_rows("mypkg/stack.py") == [(5, "REM012")]
    # An editor's buffer, not yet saved: its text counts, also for the call's line.
    buffer = "\n\n" + STACK
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "remat_lint",
            "--no-cache",
            "--output-format",
            "json",
            "--stdin-filename",
            "mypkg/stack.py",
            "-",
        ],
        input=buffer,
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert rows(json.loads(done.stdout)) == [(CALL[0], 7, "REM012")]
    # The wrap's file alone reports nothing: the mistake is in a file that was not asked for.
    assert json_findings(capsys, "--no-cache", "mypkg/layers.py") == []


def test_a_noqa_on_the_call_and_per_file_ignores_of_the_caller_count(project, capsys):
    write(project, {"mypkg/stack.py": STACK.replace("num_heads=4)", "num_heads=4)  # noqa: REM012")})
    assert json_findings(capsys, "--no-cache", "mypkg/stack.py") == []
    write(
        project,
        {"mypkg/stack.py": STACK, "pyproject.toml": "[tool.remat-lint.per-file-ignores]\n'stack.py' = ['REM012']\n"},
    )
    assert json_findings(capsys, "--no-cache", "mypkg/stack.py") == []


def test_every_wrong_call_is_reported_and_sarif_names_the_wrap(project, capsys):
    write(
        project,
        {"mypkg/stack.py": STACK + "\n\ndef twice(q, k, v):\n    return L.rotary_attention(q, k, v, num_heads=4)\n"},
    )
    log = json_findings(capsys, "--no-cache", "--output-format", "sarif", "mypkg/stack.py")
    results = log["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [5, 9]
    [related] = results[0]["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "mypkg/layers.py"
    assert related["physicalLocation"]["region"]["startLine"] == 7
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())
    assert not list(jsonschema.validators.validator_for(schema)(schema).iter_errors(log))


REEXPORT = {
    "mypkg/__init__.py": "from .layers import rotary_attention\n",
    "mypkg/stack.py": "from mypkg import rotary_attention\n\n\ndef stack(q, k, v):\n"
    "    return rotary_attention(q, k, v, num_heads=4)\n",
}
CONFIG = {
    "mypkg/config.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Config:\n    remat_policy: str = 'dots_saveable'\n",
    "mypkg/stack.py": "import jax\n\nfrom .config import Config\n\n\ndef build(f, cfg: Config):\n"
    "    return jax.checkpoint(f, policy=cfg.remat_policy)\n",
}
NAMES = {
    "mypkg/layers.py": "from jax.ad_checkpoint import checkpoint_name\n\n\ndef block(x):\n    return checkpoint_name(x, 'attn')\n",
    "mypkg/stack.py": "import jax\n\npolicy = jax.checkpoint_policies.save_only_these_names('attn')\n",
}


@pytest.mark.parametrize(
    ("files", "edit", "before", "after"),
    [
        pytest.param(
            {},
            ("mypkg/layers.py", "@functools.partial(jax.checkpoint, static_argnums=(3,))", "@jax.checkpoint"),
            [(*CALL, "REM012")],
            [],
            id="import-static-argnums-dropped",
        ),
        pytest.param(
            {},
            ("mypkg/layers.py", "num_heads", "heads"),
            [(*CALL, "REM012")],
            [(*CALL, "REM012")],
            id="import-parameter-renamed",
        ),
        pytest.param(
            REEXPORT,
            (
                "mypkg/__init__.py",
                "from .layers import rotary_attention",
                "def rotary_attention(q, k, v, num_heads):\n    return q",
            ),
            [(*CALL, "REM012")],
            [],
            id="package-init-reexport",
        ),
        pytest.param(
            CONFIG,
            (
                "mypkg/config.py",
                "remat_policy: str = 'dots_saveable'",
                "remat_policy: object = jax.checkpoint_policies.dots_saveable",
            ),
            [("mypkg/stack.py", 7, "REM001")],
            [],
            id="config-class",
        ),
        pytest.param(
            NAMES,
            ("mypkg/layers.py", "'attn'", "'atn'"),
            [],
            [("mypkg/stack.py", 3, "REM008")],
            id="names-declared-in-another-module",
        ),
    ],
)
def test_a_warm_run_after_an_edit_of_the_other_module_agrees_with_no_cache(
    project, capsys, monkeypatch, tmp_path_factory, files, edit, before, after
):
    code = tmp_path_factory.mktemp("code") / "code.py"  # the linter's code, aged: see tests/engine/test_replay.py
    code.write_text("x = 1\n")
    monkeypatch.setattr(cache, "code_paths", lambda: [(str(code.parent), str(code))])
    write(project, files)
    if edit[0] == "mypkg/config.py":
        write(project, {edit[0]: "import jax\n" + (project / edit[0]).read_text()})
    age(project, code)
    args = ("--output-format", "json", "--select", "ALL", "mypkg/stack.py")

    def warm() -> list[tuple[str, int, str]]:
        launch.main(list(args))
        return rows(json.loads(capsys.readouterr().out))

    assert warm() == before and warm() == before  # the second replays the first
    path = project / edit[0]
    path.write_text(path.read_text().replace(edit[1], edit[2]))
    age(project)
    cold = rows(json_findings(capsys, "--no-cache", *args[2:]))
    assert cold == after
    assert warm() == cold and warm() == cold


def test_a_warm_run_sees_an_edit_of_what_an_imported_module_imports(project, capsys, monkeypatch, tmp_path_factory):
    """``mid.py``'s imports are kept by its signature (cache/import_index.py) and the replay record
    holds it as read: once it imports the wrap, the warm runs find the call."""
    code = tmp_path_factory.mktemp("code") / "code.py"
    code.write_text("x = 1\n")
    monkeypatch.setattr(cache, "code_paths", lambda: [(str(code.parent), str(code))])
    monkeypatch.setattr(recording, "RACY_NS", 0)  # the files were just written: keep and record them all the same
    plain = "def rotary_attention(q, k, v, num_heads):\n    return q\n"
    write(project, {"mypkg/mid.py": plain, "mypkg/stack.py": STACK.replace("import layers", "import mid")})
    args = ["--output-format", "json", "mypkg/stack.py"]

    def warm() -> list[tuple[str, int, str]]:
        launch.main(args)
        return rows(json.loads(capsys.readouterr().out))

    assert warm() == [] and warm() == []  # the second replays the first
    write(project, {"mypkg/mid.py": "from .layers import rotary_attention\n"})
    assert rows(json_findings(capsys, "--no-cache", *args[2:])) == [(*CALL, "REM012")]
    assert warm() == [(*CALL, "REM012")] and warm() == [(*CALL, "REM012")]


def test_a_warm_run_sees_a_module_added_where_an_import_found_none(project, capsys, monkeypatch, tmp_path_factory):
    """Names resolve by listing the package's folder (project/imports.py): the replay record
    holds the folder, and a module added to it stops the replay."""
    code = tmp_path_factory.mktemp("code") / "code.py"
    code.write_text("x = 1\n")
    monkeypatch.setattr(cache, "code_paths", lambda: [(str(code.parent), str(code))])
    monkeypatch.setattr(recording, "RACY_NS", 0)  # the files were just written: record them all the same
    (project / "mypkg" / "layers.py").unlink()
    args = ["--output-format", "json", "mypkg/stack.py"]

    def warm() -> list[tuple[str, int, str]]:
        launch.main(args)
        return rows(json.loads(capsys.readouterr().out))

    assert warm() == [] and warm() == []  # the second replays the first
    write(project, {"mypkg/layers.py": LAYERS})
    assert warm() == [(*CALL, "REM012")] and warm() == [(*CALL, "REM012")]


def test_pre_commit_with_only_the_caller_staged_blocks_the_commit(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    write(
        tmp_path, {"mypkg/__init__.py": "", "mypkg/layers.py": LAYERS, "pyproject.toml": "[project]\nname = 'demo'\n"}
    )
    hook = {"repos": [{"repo": "local", "hooks": [{**hook_manifest(), "language": "system"}]}]}
    (tmp_path / ".pre-commit-config.yaml").write_text(json.dumps(hook))  # JSON is YAML
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / ".pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)

    assert run("git", "init", "-q").returncode == 0
    assert run("git", "add", ".").returncode == 0 and run("git", "commit", "-qm", "layers").returncode == 0
    assert run(sys.executable, "-m", "pre_commit", "install").returncode == 0
    write(tmp_path, {"mypkg/stack.py": STACK})
    run("git", "add", "mypkg/stack.py")
    done = run("git", "commit", "-m", "stack")
    assert done.returncode != 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert (
        "mypkg/stack.py:5:12: REM012 `num_heads` is in `static_argnums` of `rotary_attention` (layers.py:7)" in output
    )
    assert "layers.py:7:1: REM" not in output
    write(tmp_path, {"mypkg/stack.py": STACK.replace("num_heads=4", "4")})
    run("git", "add", "mypkg/stack.py")
    done = run("git", "commit", "-m", "stack")
    assert done.returncode == 0, done.stdout + done.stderr


def hook_manifest() -> dict:
    """The project's own hook (.pre-commit-hooks.yaml), run with this environment's remat-lint."""
    yaml = pytest.importorskip("yaml")
    [hook] = yaml.safe_load((Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text())
    return {key: hook[key] for key in ("id", "name", "entry", "types_or", "require_serial")}


@pytest.mark.parametrize(
    "imports",
    [
        "import mypkg.layers as L",
        "from mypkg import (\n    layers as L,\n)",
        "from mypkg import layers as L  # the wrap's module",
        "from . import __init__, layers as L",
    ],
)
def test_each_import_form_brings_the_wrap_when_the_caller_is_linted_alone(project, capsys, imports):
    write(project, {"mypkg/stack.py": STACK.replace("from . import layers as L", imports)})
    row = CALL[1] + imports.count("\n")
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == [(CALL[0], row, "REM012")]


STAR_CALLER = (
    "from .ops import rotary_attention\n\n\ndef stack(q, k, v):\n    return rotary_attention(q, k, v, num_heads=4)\n"
)


@pytest.mark.parametrize(
    ("init", "exported", "found"),
    [
        ("from ..layers import *\n", "", True),
        ("from ..layers import *\n", "__all__ = ['rotary_attention']\n", True),
        ("from jax.numpy import *\nfrom ..layers import *\n", "", True),  # the last one binds it
        # left alone: the name is not exported, or one cannot tell which module binds it last
        ("from ..layers import *\n", "__all__ = ['other']\n", False),
        ("from ..layers import *\n", "__all__ = sorted(['rotary_attention'])\n", False),
        ("from ..layers import *\nfrom jax.numpy import *\n", "", False),
        ("from ..layers import *\nfrom .plain import *\n", "", False),  # plain.py's own rotary_attention
    ],
)
def test_a_wrap_re_exported_by_a_star_import_is_followed_as_python_binds_it(project, capsys, init, exported, found):
    write(
        project,
        {
            "mypkg/ops/__init__.py": init,
            "mypkg/ops/plain.py": "def rotary_attention(q, k, v, num_heads):\n    return q\n",
            "mypkg/layers.py": exported + LAYERS,
            "mypkg/stack.py": STAR_CALLER,
        },
    )
    expected = [("mypkg/stack.py", 5, "REM012")] if found else []
    assert rows(json_findings(capsys, "--no-cache", ".")) == expected
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == expected
    assert flake8_rows("mypkg/stack.py") == [(row, code) for _, row, code in expected]


def test_a_wrap_in_an_excluded_folder_is_not_read_for_a_file_linted_alone(project, capsys):
    write(project, {"pyproject.toml": "[tool.remat-lint]\nextend-exclude = ['mypkg/layers.py']\n"})
    assert json_findings(capsys, "--no-cache", ".") == []
    assert json_findings(capsys, "--no-cache", "mypkg/stack.py") == []


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        (
            "xmod",
            ("REM101", "pkg/losses.py", 16, "pkg/train.py", 11, "differentiated whole here by `jax.value_and_grad`"),
        ),
        ("xmod", ("REM102", "pkg/losses.py", 36, "pkg/train.py", 19, "differentiated here by `jax.value_and_grad`")),
        ("xmod_scan", ("REM301", "pkg/model.py", 12, "pkg/train.py", 13, "differentiated here by `jax.grad`")),
        ("xmod_static", ("REM003", "pkg/policies.py", 8, "pkg/model.py", 28, "`POLICIES` read by key here")),
        (
            "xmod_calls",
            (
                "REM016",
                "mypkg/stack.py",
                24,
                "mypkg/layers.py",
                23,
                "`remat_mlp` is wrapped by `nn_partitioning.remat` here",
            ),
        ),
    ],
)
def test_the_other_place_of_a_cross_module_finding_is_a_related_location(capsys, monkeypatch, fixture, expected):
    monkeypatch.chdir(ROOT / "fixtures" / fixture)
    found = {
        (f["code"], f["filename"], f["location"]["row"], r["filename"], r["location"]["row"], r["message"])
        for f in json_findings(capsys, "--no-cache", "--select", "ALL", ".")
        for r in f["related"]
    }
    code, path, row, other, other_row, note = expected
    assert (code, os.path.normpath(path), row, os.path.normpath(other), other_row, note) in found


@pytest.mark.parametrize(
    ("code", "row", "other", "other_row", "note"),
    [
        ("REM001", 19, "pkg/conf/config.py", 10, "`remat_policy` is defined here"),
        ("REM001", 24, "pkg/conf/constants.py", 6, "`REMAT_POLICY` is defined here"),
        ("REM011", 9, "pkg/layers.py", 7, "`Block` is defined here"),
        ("REM004", 12, "pkg/layers.py", 7, "`Block` is defined here"),
    ],
)
def test_a_value_or_class_from_another_module_is_named_where_it_is_defined(
    capsys, monkeypatch, code, row, other, other_row, note
):
    monkeypatch.chdir(ROOT / "fixtures" / "xmod")
    found = {
        (f["code"], f["location"]["row"]): [(r["filename"], r["location"]["row"], r["message"]) for r in f["related"]]
        for f in json_findings(capsys, "--no-cache", "--select", "ALL", ".")
    }
    assert found[(code, row)] == [(os.path.normpath(other), other_row, note)]


def test_a_caller_with_candidates_of_its_own_gets_both_kinds_of_findings_alone(project, capsys):
    """Its own candidate (REM008) reads the whole project; the wrong call is found on the way."""
    names = "\n\nimport jax\n\npolicy = jax.checkpoint_policies.save_only_these_names('atn')\n"
    write(project, {"mypkg/stack.py": STACK + names, "mypkg/blocks.py": NAMES["mypkg/layers.py"]})
    whole = rows(json_findings(capsys, "--no-cache", "."))
    assert whole == [(*CALL, "REM012"), ("mypkg/stack.py", 10, "REM008")]
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == whole
    assert sorted(flake8_rows("mypkg/stack.py")) == [(5, "REM012"), (10, "REM008")]


def test_the_calls_column_counts_code_points_as_every_finding_does(project, capsys):
    write(project, {"mypkg/stack.py": STACK.replace("return L.rotary", 'return ("é", L.rotary').replace("=4)", "=4))")})
    [finding] = json_findings(capsys, "--no-cache", "mypkg/stack.py")
    assert (finding["location"], finding["end_location"]) == ({"row": 5, "column": 18}, {"row": 5, "column": 58})


def parsed_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the run hands to the engine (a libcst parse each), in order."""
    from remat_lint.engine import runner

    parsed: list[str] = []
    lint_task = runner._lint_task

    def recording(task: runner._Task) -> FileResult:
        parsed.append(os.path.basename(task.path))
        return lint_task(task)

    monkeypatch.setattr(runner, "_lint_task", recording)
    return parsed


def test_an_imported_module_that_exports_no_such_wrap_is_not_parsed_for_a_file_linted_alone(
    project, capsys, monkeypatch
):
    """What a linted file imports is parsed for the wraps whose calls are judged there (REM012's
    ``static_argnums``, REM016's partitioning remat); a module that only uses remat is not."""
    write(
        project,
        {
            "mypkg/blocks.py": "import jax\n\n\ndef block(x):\n    return jax.checkpoint(jax.numpy.sin)(x)\n",
            "mypkg/stack.py": STACK.replace("from . import layers as L", "from . import blocks, layers as L"),
        },
    )
    parsed = parsed_files(monkeypatch)
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == [(*CALL, "REM012")]
    assert sorted(parsed) == ["layers.py", "stack.py"]


def test_a_package_that_uses_remat_and_renames_the_wrap_still_brings_it(project, capsys, monkeypatch):
    """A re-export in an ``__init__`` that is not parsed for wraps of its own is still followed: it
    names the wrap, so it is read for the wrap's aliases."""
    write(
        project,
        {
            "mypkg/__init__.py": (
                "import jax\n\nfrom .layers import rotary_attention as attention\n\n"
                "sin = jax.checkpoint(jax.numpy.sin)\n"
            ),
            "mypkg/stack.py": "from mypkg import attention\n\n\ndef stack(q, k, v):\n    return attention(q, k, v, num_heads=4)\n",
        },
    )
    whole = rows(json_findings(capsys, "--no-cache", "."))
    assert whole == [(*CALL, "REM012")]
    parsed = parsed_files(monkeypatch)
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == whole
    assert sorted(parsed) == ["__init__.py", "layers.py", "stack.py"]


ATTENTION = 'def _attention(q, k, v, num_heads):\n    return jnp.einsum("...qd,...kd->...qk", q, k) @ v / num_heads\n'


@pytest.mark.parametrize(
    "wrap",
    [
        "ckpt = functools.partial(jax.checkpoint, static_argnums=(3,))\n\n\n@ckpt\n"
        + LAYERS.split("\n\n\n@", 1)[1].split("\n", 1)[1],
        ATTENTION + "\n\nif jax.__version__:\n    rotary_attention = jax.checkpoint(_attention, static_argnums=(3,))\n",
    ],
    ids=["partial-alias", "module-level-if"],
)
def test_each_module_level_form_of_the_wrap_is_read_for_a_file_linted_alone(project, capsys, wrap):
    """The words a wrap's module must name (``Rule.export_words``) are looked for in all the
    code that runs at module level: a partial it applies, an ``if`` around it."""
    write(project, {"mypkg/layers.py": LAYERS.split("\n\n\n@", 1)[0] + "\n\n\n" + wrap})
    whole = rows(json_findings(capsys, "--no-cache", "."))
    assert whole == [(*CALL, "REM012")]
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == whole
    assert flake8_rows("mypkg/stack.py") == [(CALL[1], "REM012")]


def test_static_argnums_inside_a_function_makes_no_module_parsed_for_a_caller(project, capsys, monkeypatch):
    """``jax.jit(f, static_argnums=...)`` in a function, ``nn.remat(..., static_argnums=...)`` in a
    method: no module-level wrap, so the module is not parsed for the file that imports it."""
    jit = "import jax\n\n\ndef compiled(f):\n    return jax.jit(jax.checkpoint(f), static_argnums=(1,))\n"
    write(
        project,
        {
            "mypkg/compiled.py": jit,
            "mypkg/stack.py": STACK.replace("from . import layers as L", "from . import compiled, layers as L"),
        },
    )
    parsed = parsed_files(monkeypatch)
    assert rows(json_findings(capsys, "--no-cache", "mypkg/stack.py")) == [(*CALL, "REM012")]
    assert sorted(parsed) == ["layers.py", "stack.py"]
