"""The project model across modules: import forms resolved to the module that defines a
checkpoint, REM101 reported at the checkpoint when another module differentiates it whole (CLI on
the whole project, on one staged file, and flake8), and the cases that stay quiet."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.flake8_plugin import Plugin

LOSSES = """
import jax
import jax.numpy as jnp


@jax.checkpoint
def loss_fn(params, x):
    return jnp.sum(jnp.tanh(x @ params))
"""
# How train.py names losses.loss_fn: absolute and relative imports, aliases, a module imported
# from its package, and the package's __init__ re-exporting it.
IMPORT_FORMS = {
    "from pkg.losses import loss_fn": "loss_fn",
    "from pkg.losses import loss_fn as lf": "lf",
    "from .losses import loss_fn": "loss_fn",
    "from . import losses": "losses.loss_fn",
    "from pkg import losses": "losses.loss_fn",
    "import pkg.losses": "pkg.losses.loss_fn",
    "import pkg.losses as L": "L.loss_fn",
    "from pkg import loss_fn": "loss_fn",
    "import pkg": "pkg.loss_fn",
}


def make_project(
    root: Path, train: str, init: str = "from .losses import loss_fn as loss_fn\n", losses: str = LOSSES
) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text(init)
    (root / "pkg" / "losses.py").write_text(textwrap.dedent(losses))
    (root / "pkg" / "train.py").write_text(textwrap.dedent(train))


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, int, str]]:
    main(["--select", "ALL", "--output-format", "concise", *args])
    rows = []
    for line in capsys.readouterr().out.splitlines():
        if ": REM" in line:
            path, row, _, message = line.split(":", 3)
            rows.append((path, int(row), message.strip()))
    return rows


def train_with(form: str, name: str) -> str:
    return f"import jax\n{form}\n\n\ndef step(params, x):\n    return jax.value_and_grad({name})(params, x)\n"


@pytest.mark.parametrize("form", IMPORT_FORMS)
def test_each_import_form_reaches_the_checkpoint(tmp_path, capsys, monkeypatch, form):
    make_project(tmp_path, train_with(form, IMPORT_FORMS[form]))
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--no-cache", os.path.join("pkg", "losses.py"))  # the staged file alone
    assert (path, row) == (os.path.join("pkg", "losses.py"), 6)
    assert message.startswith("REM101 The whole function differentiated by `jax.value_and_grad` at train.py:6")


def test_whole_project_flake8_and_warm_cache_agree(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, train_with("from .losses import loss_fn", "loss_fn"))
    monkeypatch.chdir(tmp_path)
    whole = cli(capsys, ".")
    assert [(p, r) for p, r, _ in whole] == [(os.path.join("pkg", "losses.py"), 6)]
    assert cli(capsys, ".") == whole  # warm: summaries and facts from the cache
    assert cli(capsys, os.path.join("pkg", "train.py")) == []  # the finding belongs where the fix goes
    lines = (tmp_path / "pkg" / "losses.py").read_text().splitlines(keepends=True)
    [(row, _, text, _)] = Plugin(None, lines, os.path.join("pkg", "losses.py")).run()  # type: ignore[arg-type]
    assert row == 6 and text == whole[0][2]


def test_the_flake8_plugin_follows_each_working_directorys_configuration(tmp_path, monkeypatch):
    """One process (an editor's flake8) linting two projects: the second, which has no
    ``[tool.remat-lint]``, is not given the first's root (where its train.py is not)."""
    configured, plain = tmp_path / "configured", tmp_path / "plain"
    for root, pyproject in (
        (configured, '[tool.remat-lint]\nignore = ["REM012"]\n'),
        (plain, "[project]\nname = 'p'\n"),
    ):
        root.mkdir()
        make_project(root, train_with("from .losses import loss_fn", "loss_fn"))
        (root / "pyproject.toml").write_text(pyproject)

    def flake8_rows(root: Path) -> list[int]:
        monkeypatch.chdir(root)
        lines = (root / "pkg" / "losses.py").read_text().splitlines(keepends=True)
        return [row for row, *_ in Plugin(None, lines, os.path.join("pkg", "losses.py")).run()]  # type: ignore[arg-type]

    assert (flake8_rows(configured), flake8_rows(plain), flake8_rows(configured)) == ([6], [6], [6])


QUIET_TRAIN = {
    "per example (vmap)": "import jax\nfrom .losses import loss_fn\ng = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0))\n",
    "per microbatch (loop)": "import jax\nfrom .losses import loss_fn\ndef acc(p, mbs):\n    return [jax.grad(loss_fn)(p, mb) for mb in mbs]\n",
    "inside a loss (higher order)": "import jax\nfrom .losses import loss_fn\ndef penalty_loss(p, x):\n    return jax.grad(loss_fn)(p, x).sum()\n",
    "scanned elsewhere": (
        "import jax\nfrom .losses import loss_fn\ndef body(c, x):\n    return c + loss_fn(c, x), None\n"
        "scanned = jax.lax.scan(body, 0.0, None)\ng = jax.value_and_grad(loss_fn)\n"
    ),
    "pullback kept": "import jax\nfrom .losses import loss_fn\ny, pull = jax.vjp(loss_fn, 1.0, 2.0)\nz = 3\n",
    "another module's loss_fn": "import jax\nfrom other import loss_fn\ng = jax.value_and_grad(loss_fn)\n",
    "re-bound locally": "import jax\nfrom .losses import loss_fn\nloss_fn = wrap(loss_fn)\ng = jax.value_and_grad(loss_fn)\n",
}


@pytest.mark.parametrize("case", QUIET_TRAIN)
def test_quiet_where_the_checkpoint_saves_or_is_not_the_differentiated_one(tmp_path, capsys, monkeypatch, case):
    make_project(tmp_path, QUIET_TRAIN[case])
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


@pytest.mark.parametrize(
    "losses",
    [
        LOSSES.replace(
            "@jax.checkpoint", "@functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)"
        ).replace("import jax\n", "import functools\nimport jax\n"),
        LOSSES.replace("@jax.checkpoint\n", "@jax.jit\n@jax.checkpoint\n"),  # not the outermost: another callable
    ],
)
def test_quiet_when_the_checkpoint_itself_saves_or_is_wrapped(tmp_path, capsys, monkeypatch, losses):
    make_project(tmp_path, train_with("from .losses import loss_fn", "loss_fn"), losses=losses)
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


def test_test_code_differentiating_a_checkpoint_is_not_a_use(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, "")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_losses.py").write_text(train_with("from pkg.losses import loss_fn", "loss_fn"))
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


def test_noqa_at_the_checkpoint_suppresses_it(tmp_path, capsys, monkeypatch):
    make_project(
        tmp_path,
        train_with("from .losses import loss_fn", "loss_fn"),
        losses=LOSSES.replace("@jax.checkpoint", "@jax.checkpoint  # noqa: REM101"),
    )
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


LAYER = """
import flax.linen as nn


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool{star}):
        x = nn.Dense(4)(x)
        if train:
            x = nn.Dropout(0.1, deterministic=False)(x)
        return x
"""


@pytest.mark.parametrize(
    ("remat", "expected"),
    [
        (
            "nn.remat(Block, static_argnums=(1,))",
            "index 1 selects `x`, not `train`",
        ),  # measured: TracerBoolConversionError
        (
            "nn.remat(Block, static_argnums=(3,))",
            "is out of range: `Block.__call__` takes 3 positional arguments counting",
        ),
        ("nn.remat(Block, static_argnums=(2,))", None),
        ("nn_partitioning.remat(Block, static_argnums=(1,))", None),
        ("nn_partitioning.remat(Block, static_argnums=(2,))", "(it does not count `self`: `train` is 1)"),
    ],
)
def test_static_argnums_of_an_imported_module_class(tmp_path, capsys, monkeypatch, remat, expected):
    model = (
        "import flax.linen as nn\nfrom flax.linen import partitioning as nn_partitioning\n"
        f"from pkg.layers import Block\n\nRemat = {remat}\n"
    )
    make_project(tmp_path, model, init="")
    (tmp_path / "pkg" / "layers.py").write_text(LAYER.format(star=""))
    monkeypatch.chdir(tmp_path)
    found = cli(capsys, "--no-cache", os.path.join("pkg", "train.py"))
    if expected is None:
        assert found == []
    else:
        [(_, row, message)] = found
        assert row == 5 and message.startswith("REM011 ")
        main(["--select", "ALL", "--no-cache", "--output-format", "full", os.path.join("pkg", "train.py")])
        assert expected in capsys.readouterr().out


def test_static_argnums_of_an_imported_class_with_star_args_is_not_judged(tmp_path, capsys, monkeypatch):
    make_project(
        tmp_path, "import flax.linen as nn\nfrom .layers import Block\nRemat = nn.remat(Block, static_argnums=(1,))\n"
    )
    (tmp_path / "pkg" / "layers.py").write_text(LAYER.format(star=", *rest"))
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []


@pytest.mark.parametrize(
    ("base", "reported"),
    [
        ("nn.Module", True),
        ("Base", True),  # a project class that is a Module, from yet another module
        ("object", False),
    ],
)
def test_remat_of_an_instance_of_an_imported_class(tmp_path, capsys, monkeypatch, base, reported):
    model = "import flax.linen as nn\nfrom pkg.layers import Block\n\nstack = nn.remat(Block(4))\n"
    make_project(tmp_path, model, init="")
    (tmp_path / "pkg" / "base.py").write_text("import flax.linen as nn\n\n\nclass Base(nn.Module):\n    pass\n")
    (tmp_path / "pkg" / "layers.py").write_text(
        f"import flax.linen as nn\nfrom .base import Base\n\n\nclass Block({base}):\n    features: int = 4\n"
    )
    monkeypatch.chdir(tmp_path)
    found = cli(capsys, "--no-cache", os.path.join("pkg", "train.py"))
    assert [(row, message.split()[0]) for _, row, message in found] == ([(4, "REM004")] if reported else [])


def _rule_table_is_current() -> bool:
    from remat_lint import registry, rule_table

    return rule_table.SOURCES == registry.sources_digest()


# A stale table makes every run import the rules (tests/rules/test_rule_metadata.py fails then).
@pytest.mark.skipif(not _rule_table_is_current(), reason="rule table stale: run python -m remat_lint.docs")
def test_a_warm_project_phase_imports_no_libcst(tmp_path, monkeypatch):
    """pre-commit on one file: what is left after the cache is the project phase."""
    make_project(tmp_path, "")
    (tmp_path / "pkg" / "names.py").write_text(
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(1.0, 'attn')\n"
        "p = jax.checkpoint_policies.save_only_these_names('atn')\n"
    )
    monkeypatch.chdir(tmp_path)
    script = (
        "import sys\nfrom remat_lint.cli.command import main\ncode = main(['--output-format', 'concise', 'pkg/names.py'])\n"
        "print(code, 'libcst' in sys.modules)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True) for _ in range(2)
    ]
    assert "REM008" in runs[0].stdout and runs[1].stdout.splitlines()[-1] == "1 False"


def test_a_failing_project_phase_is_a_rem000_finding_not_a_crash(tmp_path, capsys, monkeypatch):
    from remat_lint.rules.rem101_checkpoint_whole_loss import CheckpointWholeLoss

    def broken(cls, candidates, module, project):
        raise KeyError("boom")

    make_project(tmp_path, train_with("from .losses import loss_fn", "loss_fn"))
    monkeypatch.setattr(CheckpointWholeLoss, "check_project", classmethod(broken))
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--no-cache", ".")
    assert (path, row) == (os.path.join("pkg", "losses.py"), 1)
    assert message.startswith("REM000 internal error in REM101 (project phase), please report it: KeyError")


def test_a_failing_project_phase_keeps_the_findings_the_file_decided_alone(tmp_path, capsys, monkeypatch):
    from remat_lint.rules.rem101_checkpoint_whole_loss import CheckpointWholeLoss

    def broken(cls, candidates, module, project):
        raise KeyError("boom")

    local = (
        LOSSES
        + "\n\ndef head(params, x):\n    return jnp.sum(x @ params)\n\n\nhead_grad = jax.grad(jax.checkpoint(head))\n"
    )
    make_project(tmp_path, train_with("from .losses import loss_fn", "loss_fn"), losses=local)
    monkeypatch.chdir(tmp_path)
    found = [(row, message.split(" ", 1)[0]) for _, row, message in cli(capsys, "--no-cache", ".")]
    assert found == [(6, "REM101"), (15, "REM101")]  # the candidate confirmed by train.py, and the local grad
    monkeypatch.setattr(CheckpointWholeLoss, "check_project", classmethod(broken))
    found = [(row, message.split(" ", 1)[0]) for _, row, message in cli(capsys, "--no-cache", ".")]
    assert found == [(1, "REM000"), (15, "REM101")]


def test_a_file_without_a_project_module_drops_the_candidates_of_rules_that_need_one(tmp_path, capsys, monkeypatch):
    """Without the file's module REM101 cannot be asked (its candidate is dropped, unseen); REM008,
    which reads only the project's facts, still decides its own."""
    from remat_lint.project.model import Project
    from remat_lint.rules.rem101_checkpoint_whole_loss import CheckpointWholeLoss

    def unreachable(cls, candidates, module, project):
        raise AssertionError("called without a module")

    make_project(tmp_path, train_with("from .losses import loss_fn", "loss_fn"))
    (tmp_path / "pkg" / "names.py").write_text(
        "import jax\nfrom jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(1.0, 'attn')\n"
        "p = jax.checkpoint_policies.save_only_these_names('atn')\n"
    )
    monkeypatch.chdir(tmp_path)
    found = {(path, message.split(" ", 1)[0]) for path, _, message in cli(capsys, "--no-cache", ".")}
    assert found == {(os.path.join("pkg", "losses.py"), "REM101"), (os.path.join("pkg", "names.py"), "REM008")}
    monkeypatch.setattr(Project, "module_of", lambda self, path: None)
    monkeypatch.setattr(CheckpointWholeLoss, "check_project", classmethod(unreachable))
    found = {(path, message.split(" ", 1)[0]) for path, _, message in cli(capsys, "--no-cache", ".")}
    assert found == {(os.path.join("pkg", "names.py"), "REM008")}


def test_a_checkpoint_re_exported_under_another_name_is_followed(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, train_with("import pkg", "pkg.objective"), init="from .losses import loss_fn as objective\n")
    monkeypatch.chdir(tmp_path)
    [(path, row, message)] = cli(capsys, "--no-cache", os.path.join("pkg", "losses.py"))
    assert (path, row) == (os.path.join("pkg", "losses.py"), 6) and "at train.py:6" in message


STAGED_LOSS = """
import jax
import jax.numpy as jnp


def _head(w, h):
    return jnp.tanh(h @ w) @ w.T


def loss_fn(params, x):
    h = jnp.tanh(x @ params[0])
    out = jax.checkpoint(_head)(params[1], h)
    return jnp.sum(out)
"""


@pytest.mark.parametrize(
    ("train", "expected"),
    [
        (train_with("from .losses import loss_fn", "loss_fn"), "under `jax.value_and_grad` it recomputes the stage"),
        ("import jax\nfrom .losses import loss_fn\ng = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0))\n", None),
        ("import jax\nfrom .losses import loss_fn\nf = jax.jacfwd(loss_fn)\n", None),
    ],
)
def test_a_checkpointed_last_stage_of_a_loss_differentiated_in_another_module(
    tmp_path, capsys, monkeypatch, train, expected
):
    make_project(tmp_path, train, losses=STAGED_LOSS)
    monkeypatch.chdir(tmp_path)
    found = cli(capsys, "--no-cache", ".")
    if expected is None:
        assert found == []
        return
    assert [(p, r, m.split()[0]) for p, r, m in found] == [(os.path.join("pkg", "losses.py"), 12, "REM102")]
    main(["--select", "ALL", "--no-cache", "--output-format", "full", "."])
    out = capsys.readouterr().out
    assert expected in out and "(differentiated at train.py:6)" in out


TWO_CALLS_DOWN = """
import jax
import jax.numpy as jnp


def _head(w, h):
    return jnp.tanh(h @ w) @ w.T


ckpt_head = jax.checkpoint(_head)


def head(params, h):
    return ckpt_head(params[1], h)


def logits(params, h):
    return head(params, h) * 2.0


def loss_fn(params, x):
    h = jnp.tanh(x @ params[0])
    return logits(params, h).mean()
"""


@pytest.mark.parametrize(
    "train",
    [
        "import jax\nfrom .losses import loss_fn\ng = jax.value_and_grad(loss_fn)\n",  # another module
        "",  # the same module: losses.py differentiates it itself (below)
    ],
)
def test_a_last_stage_two_calls_below_the_differentiated_function(tmp_path, capsys, monkeypatch, train):
    losses = TWO_CALLS_DOWN + ("" if train else "\ng = jax.value_and_grad(loss_fn)\n")
    make_project(tmp_path, train, losses=losses)
    monkeypatch.chdir(tmp_path)
    main(["--select", "REM102", "--no-cache", "--output-format", "concise", "."])
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(
        f"{os.path.join('pkg', 'losses.py')}:14:12: REM102 `ckpt_head(...)` is the last stage of `loss_fn` (through `logits`, `head`)"
    )


FORWARD = """
import jax
import jax.numpy as jnp


def _head(w, h):
    return jnp.tanh(h @ w) @ w.T


def forward(params, x):
    h = jnp.tanh(x @ params[0])
    return jax.checkpoint(_head)(params[1], h)
"""


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("return forward(params, x).mean()", "the last stage of `train_loss` (through `forward`)"),
        ("return other(forward(params, x))", None),  # an unknown function after it: maybe expensive
        ("y = forward(params, x)\n    return jnp.sum(model(params, y))", None),
    ],
)
def test_a_last_stage_in_a_module_that_the_differentiated_function_calls(tmp_path, capsys, monkeypatch, tail, expected):
    train = (
        "import jax\nimport jax.numpy as jnp\nfrom .losses import forward\n\n\n"
        f"def train_loss(params, x):\n    {tail}\n\n\ng = jax.value_and_grad(train_loss)\n"
    )
    make_project(tmp_path, train, losses=FORWARD)
    monkeypatch.chdir(tmp_path)
    main(["--select", "REM101,REM102", "--no-cache", "--output-format", "full", os.path.join("pkg", "losses.py")])
    out = capsys.readouterr().out
    if expected is None:
        assert "REM10" not in out
    else:
        assert "losses.py:12:12: REM102" in out and expected in out and "(differentiated at train.py:10)" in out


CONFIG = """
import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    remat_policy: str = "dots_saveable"
"""
LAYERS = """
import jax
from .config import Config


def make_block(f, cfg: Config):
    return jax.checkpoint(f, policy=cfg.remat_policy)
"""


def test_a_policy_from_another_modules_config_follows_that_module(tmp_path, capsys, monkeypatch):
    """The staged layers.py alone (CLI, warm cache, flake8) is judged by config.py's field; its cached
    result does not keep the verdict once config.py changes."""
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "config.py").write_text(textwrap.dedent(CONFIG))
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS))
    monkeypatch.chdir(tmp_path)
    layers = os.path.join("pkg", "layers.py")
    [(_, row, message)] = cli(capsys, layers)
    assert row == 7 and message.startswith(
        "REM001 `policy=cfg.remat_policy` (from config.py) is a string, not a policy"
    )
    assert cli(capsys, layers) == [(layers, row, message)]  # warm
    lines = (tmp_path / layers).read_text().splitlines(keepends=True)
    assert [r for r, *_ in Plugin(None, lines, layers).run()] == [7]  # type: ignore[arg-type]
    (tmp_path / "pkg" / "config.py").write_text(
        textwrap.dedent(CONFIG)
        .replace('str = "dots_saveable"', "object = jax.checkpoint_policies.dots_saveable")
        .replace("import dataclasses", "import dataclasses\nimport jax")
    )
    assert cli(capsys, layers) == []


@pytest.mark.skipif(not _rule_table_is_current(), reason="rule table stale: run python -m remat_lint.docs")
def test_a_warm_policy_from_another_module_imports_no_libcst(tmp_path, monkeypatch):
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "config.py").write_text(textwrap.dedent(CONFIG))
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS))
    monkeypatch.chdir(tmp_path)
    script = (
        "import sys\nfrom remat_lint.cli.command import main\ncode = main(['--output-format', 'concise', 'pkg/layers.py'])\n"
        "print(code, 'libcst' in sys.modules)\n"
    )
    runs = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True) for _ in range(2)
    ]
    assert "REM001" in runs[1].stdout and runs[1].stdout.splitlines()[-1] == "1 False"


def test_a_config_field_another_module_assigns_is_unknown(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, "from .config import Config\ncfg = Config()\ncfg.remat_policy = None\n", losses="")
    (tmp_path / "pkg" / "config.py").write_text(textwrap.dedent(CONFIG))
    (tmp_path / "pkg" / "layers.py").write_text(textwrap.dedent(LAYERS))
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, os.path.join("pkg", "layers.py")) == []


HELPERS = """
import jax


def make_block(f):
    return jax.checkpoint(f, prevent_cse=False)
"""
USERS = {
    "called per layer of a Python loop": (
        "def forward(ws, x):\n    block = make_block(f)\n    for w in ws:\n        x = block(w, x)\n    return x\n",
        [6],
    ),
    "scanned": "import jax\ndef forward(ws, x):\n    return jax.lax.scan(make_block(f), x, ws)\n",
    "passed on": "def forward(ws, x):\n    return run(make_block(f), ws, x)\n",
    "never called (a library's public API)": "",
}


@pytest.mark.parametrize("case", USERS)
def test_prevent_cse_false_returned_by_a_helper_is_judged_by_its_callers(tmp_path, capsys, monkeypatch, case):
    user, expected = USERS[case] if isinstance(USERS[case], tuple) else (USERS[case], [])
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (tmp_path / "pkg" / "model.py").write_text(f"from .helpers import make_block\n{user}" if user else "")
    monkeypatch.chdir(tmp_path)
    rows = cli(capsys, "--no-cache", os.path.join("pkg", "helpers.py"))  # the staged helper alone
    assert [row for _, row, _ in rows] == expected
    if expected:
        assert "`make_block` returns makes it save no memory" in rows[0][2] and "(model.py, in `forward`)" in rows[0][2]


def test_a_helper_called_in_a_function_that_another_modules_lambda_scans_is_quiet(tmp_path, capsys, monkeypatch):
    make_project(tmp_path, "", losses="")
    (tmp_path / "pkg" / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (tmp_path / "pkg" / "model.py").write_text(
        "from .helpers import make_block\ndef forward(w, x):\n    return make_block(f)(w, x)\n"
    )
    (tmp_path / "pkg" / "run.py").write_text(
        "import jax\nfrom .model import forward\ndef go(ws, x):\n    return jax.lax.scan(lambda c, w: (forward(w, c), None), x, ws)\n"
    )
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "--no-cache", ".") == []
