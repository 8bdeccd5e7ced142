"""REM008 across files: what the CLI and flake8 report for a set of files or a part of a project."""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import RuleSelection, Settings
from remat_lint.engine import lint as engine
from remat_lint.engine import runner
from remat_lint.engine.runner import run
from remat_lint.flake8_plugin import Plugin
from tests.helpers import lint as lint_one

LAYERS = """
from jax.ad_checkpoint import checkpoint_name

def mlp(x):
    return checkpoint_name(x, "mlp_out")
"""
POLICY = """
import jax
policy = jax.checkpoint_policies.save_only_these_names("mlp_outt", "attn_out")
"""


def lint(tmp_path: Path, **files: str) -> list[tuple[str, str]]:
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(str(path))
    result = run(paths, Resolver.of(Settings(selection=[RuleSelection(select=("REM008",))])))
    return [(Path(f.path).stem, f.message) for f in result.findings]


def test_names_declared_in_another_file_count_and_suggest(tmp_path):
    (first, second) = lint(tmp_path, layers=LAYERS, policy=POLICY)
    assert first[0] == second[0] == "policy"
    assert "'mlp_outt'" in first[1] and "did you mean 'mlp_out'?" in first[1]
    assert "'attn_out'" in second[1] and "did you mean" not in second[1]


def test_a_name_declared_elsewhere_is_not_reported(tmp_path):
    attention = "from jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(x, 'attn_out')\n"
    found = lint(tmp_path, layers=LAYERS, policy=POLICY, attention=attention)
    assert len(found) == 1 and "'mlp_outt'" in found[0][1]


def test_a_name_that_cannot_be_known_is_named_in_an_info_finding(tmp_path):
    tagged = "from jax.ad_checkpoint import checkpoint_name\ndef tag(x, name):\n    return checkpoint_name(x, name)\n"
    paths = []
    for name, text in {"layers": LAYERS, "policy": POLICY, "tagged": tagged}.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text), encoding="utf-8")
        paths.append(str(tmp_path / f"{name}.py"))
    found = run(paths, Resolver.of(Settings(selection=[RuleSelection(select=("REM008",))]))).findings
    assert [f.data["names"] for f in found] == [["mlp_outt"], ["attn_out"]]
    assert all(
        f.severity.value == "info"
        and "cannot be known here gives it: `checkpoint_name(x, name)` in tagged.py" in f.message
        for f in found
    )


@pytest.mark.parametrize("tag", ['f"mlp_{i}"', '"mlp_%d" % i', '"mlp_{}".format(i)', '"mlp_" + str(i)'])
def test_names_built_at_run_time_are_patterns(tmp_path, tag):
    layers = f"from jax.ad_checkpoint import checkpoint_name\ndef f(x, i):\n    return checkpoint_name(x, {tag})\n"
    policy = "import jax\np = jax.checkpoint_policies.save_only_these_names('mlp_0', 'mlp0', 'attn_1')\n"
    found = lint(tmp_path, layers=layers, policy=policy)
    assert [("'mlp0'" in m, "'attn_1'" in m) for _, m in found] == [(True, False), (False, True)]


def test_no_declaration_in_the_linted_files_is_silent(tmp_path):
    # The names come from code that was not linted (another package, a library).
    assert lint(tmp_path, policy=POLICY) == []


def flake8_rows(source: str, filename: str) -> list[tuple[int, str]]:
    lines = source.splitlines(keepends=True)
    return [(row, message) for row, _, message, _ in Plugin(None, lines, filename).run()]  # type: ignore[arg-type]


# A project: the CLI is given only some of its files (pre-commit passes the staged ones, an editor
# one buffer); the names the other files declare count, findings come only from the linted files.
DECLARES = 'from jax.ad_checkpoint import checkpoint_name\n\ndef f(x):\n    return checkpoint_name(x, "attn")\n'
POLICIES = 'import jax\n\nok = jax.checkpoint_policies.save_only_these_names("attn")\ntypo = jax.checkpoint_policies.save_only_these_names("atn")\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n")
    (tmp_path / "a.py").write_text(DECLARES)
    (tmp_path / "b.py").write_text(POLICIES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    code = main(["--output-format", "json", *args])
    found = json.loads(capsys.readouterr().out)
    assert code == (1 if found else 0)
    return [(f["filename"], f["location"]["row"], f["message"]) for f in found]


def only_the_typo(found: list[tuple[str, int, str]]) -> bool:
    [(path, row, message)] = found
    return (path, row) == ("b.py", 4) and "'atn'" in message and "did you mean 'attn'?" in message


def test_a_file_linted_alone_sees_the_names_its_project_declares(project, capsys):
    assert only_the_typo(cli(capsys, "b.py"))
    assert only_the_typo(cli(capsys, "--no-cache", "b.py"))
    assert only_the_typo(cli(capsys, "--force-exclude", "b.py"))  # the pre-commit hook's entry


def test_a_buffer_on_stdin_sees_the_names_its_project_declares(project, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(POLICIES.encode())))
    assert only_the_typo(cli(capsys, "--stdin-filename", "b.py", "-"))


def test_fixing_a_file_sees_the_names_its_project_declares(project, capsys):
    assert only_the_typo(cli(capsys, "--fix", "b.py"))


def test_warm_cache_gives_the_same_findings(project, capsys):
    cold = cli(capsys, "b.py")
    assert (project / ".remat_lint_cache").is_dir()
    assert cli(capsys, "b.py") == cold and only_the_typo(cold)


def test_a_run_on_the_whole_project_warms_the_cache_for_a_run_on_part_of_it(project, capsys, monkeypatch):
    assert only_the_typo(cli(capsys, "."))
    linted: list[str] = []
    monkeypatch.setattr(engine, "lint_source", lambda path, *args, **kw: linted.append(path))
    assert only_the_typo(cli(capsys, "b.py")) and linted == []


def test_without_a_project_only_the_linted_files_count(project, capsys):
    (project / "pyproject.toml").unlink()
    assert cli(capsys, "b.py") == []  # no linted file declares a name: silent, as before
    assert only_the_typo(cli(capsys, "a.py", "b.py"))


@pytest.mark.parametrize("marker", ["pyproject.toml", ".git"])
def test_an_unconfigured_project_is_found_by_its_pyproject_or_git_folder(project, capsys, marker):
    (project / "pyproject.toml").unlink()
    (project / "pkg").mkdir()
    (project / "b.py").rename(project / "pkg" / "b.py")
    if marker == ".git":
        (project / marker).mkdir()
    else:
        (project / marker).write_text("[project]\nname = 'p'\n")  # no [tool.remat-lint] table
    [(path, _, message)] = cli(capsys, os.path.join("pkg", "b.py"))
    assert path == os.path.join("pkg", "b.py") and "did you mean 'attn'?" in message


def test_a_file_outside_the_projects_files_keeps_the_run_to_the_linted_files(project, capsys):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["b.py"]\n')
    assert cli(capsys, "b.py") == []  # b.py is excluded: not a part of the project that a.py belongs to


def test_names_the_project_leaves_unknowable_are_shown_where_the_policy_is(project, capsys):
    (project / "c.py").write_text(
        "from jax.ad_checkpoint import checkpoint_name\ndef tag(x, name):\n    return checkpoint_name(x, name)\n"
    )
    [(path, row, _)] = cli(capsys, "b.py")
    assert (path, row) == ("b.py", 4)
    main(["--output-format", "full", "b.py"])
    assert (
        "unless one of the names that cannot be known here gives it: `checkpoint_name(x, name)` in c.py"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize("ignored", ["REM008", "ALL"])
def test_a_file_whose_rules_are_ignored_still_declares_its_names(project, capsys, ignored):
    (project / "pyproject.toml").write_text(f'[tool.remat-lint.per-file-ignores]\n"a.py" = ["{ignored}"]\n')
    assert only_the_typo(cli(capsys, "."))
    assert only_the_typo(cli(capsys, "b.py"))


def test_no_other_file_is_read_unless_a_project_wide_rule_fires(project, capsys, monkeypatch):
    read: list[str] = []
    real_read = runner._read
    monkeypatch.setattr(runner, "_read", lambda path: read.append(os.path.basename(path)) or real_read(path))
    (project / "c.py").write_text(
        "import jax\n" + DECLARES + 'p = jax.checkpoint_policies.save_only_these_names("attn")\n'
    )
    assert cli(capsys, "c.py") == [] and set(read) == {"c.py"}  # its imports too: only jax
    read.clear()
    assert only_the_typo(cli(capsys, "b.py")) and sorted(read) == ["a.py", "b.py", "c.py"]


def test_flake8_on_one_file_sees_the_names_its_project_declares(project):
    [(row, message)] = flake8_rows(POLICIES, "b.py")
    assert row == 4 and message.startswith("REM008 ") and "'atn'" in message  # a.py declares 'attn'
    (project / "a.py").write_text(DECLARES.replace('"attn"', '"atn"'))
    [(row, message)] = flake8_rows(POLICIES, "b.py")  # the cache keys on content: never stale
    assert row == 3 and "'attn'" in message


def test_a_name_mentioned_only_in_a_file_the_prefilter_skips_counts(project, capsys):
    (project / "c.py").write_text("def conv(x):\n    return layer(x, name='atn')\n")  # no remat API at all
    assert cli(capsys, "b.py") == []


# REM008 (unknown checkpoint name): cases found by mutation testing that no other test pinned.


def test_unknown_names_from_one_sequence_are_reported_together_each_with_its_closest_name() -> None:
    source = """
    import jax
    from jax.ad_checkpoint import checkpoint_name
    def mlp(x):
        return checkpoint_name(checkpoint_name(x, "mlp_out"), "attn_out")
    NAMES = ("mlp_outt", "attn_outt")
    policy = jax.checkpoint_policies.save_only_these_names(*NAMES)
    """
    [finding] = lint_one(source, {"REM008"})
    assert finding.message.startswith(
        "`save_only_these_names` is given 'mlp_outt', 'attn_outt' (from `NAMES`), but no `checkpoint_name(x, "
        "'mlp_outt')` in the linted files declares these; did you mean 'mlp_out' for 'mlp_outt'; did you mean "
        "'attn_out' for 'attn_outt'? JAX matches names exactly and never warns"
    )
