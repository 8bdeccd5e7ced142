"""--memory-budget with --fix/--diff (trace/driver/budget_fix.py): the chosen policies written into the code.

The rewrites are checked on text (no JAX); one end-to-end case runs the CLI twice on a small module:
``--fix`` at a budget, then ``--trace`` on the fixed file, whose program as written must compile to
the peak temp and FLOPs the first report chose.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remat_lint.engine.sources import display_path
from remat_lint.trace.driver.budget_fix import Change, changes_by_file, fix_plans, rewrite

SOURCE = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp

    POLICY = jax.checkpoint_policies.dots_saveable


    def layer(w, x):
        return jnp.tanh(x @ w)


    block = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)
    plain = jax.checkpoint(layer)
    configured = jax.checkpoint(layer, policy=POLICY)


    @partial(jax.checkpoint, prevent_cse=False)
    def head(x):
        return jnp.sin(x)


    @jax.checkpoint
    def tail(x):
        return jnp.cos(x)


    def loss(ws, x):
        return jnp.mean(jax.value_and_grad(jax.checkpoint(head))(x)[0])
    """
)


@dataclass
class Plan:  # the driver's report of one target's plan, as the CLI hands it over
    path: str
    target: str = "loss"
    report: dict[str, Any] = field(default_factory=dict)


def plan(path: Path, *rows: tuple[int, str, str | None], fits: bool = True) -> Plan:
    return Plan(
        str(path),
        report={
            "fits": fits,
            "sites": [{"line": line, "function": "f", "chosen": c, "policy": p} for line, c, p in rows],
        },
    )


DOTS = "jax.checkpoint_policies.dots_saveable"
NAMES = "jax.checkpoint_policies.save_only_these_names('h')"


def fixed(tmp_path: Path, *plans_rows: tuple[int, str, str | None]) -> tuple[str, list[str]]:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    changes, notes = changes_by_file([plan(path, *plans_rows)])
    made, why = rewrite(str(path), changes[str(path)])
    return (made.fixed.text if made is not None else SOURCE), notes + why


def test_policy_replaced_and_added_keeping_the_rest_of_the_file(tmp_path: Path) -> None:
    text, notes = fixed(tmp_path, (13, "dots_saveable", DOTS), (14, "save_only_these_names('h')", NAMES))
    assert notes == []
    assert f"block = jax.checkpoint(layer, policy={DOTS})\n" in text
    assert f"plain = jax.checkpoint(layer, policy={NAMES})\n" in text
    before = text.replace(f"(layer, policy={DOTS})", "(layer, policy=jax.checkpoint_policies.nothing_saveable)")
    assert before.replace(f", policy={NAMES}", "") == SOURCE


def test_a_policy_read_from_a_name_is_reported_with_the_value_to_set(tmp_path: Path) -> None:
    text, notes = fixed(tmp_path, (15, "nothing_saveable", "jax.checkpoint_policies.nothing_saveable"))
    assert text == SOURCE
    assert len(notes) == 1
    assert (
        "model.py:15: the policy comes from `POLICY`: set it to jax.checkpoint_policies.nothing_saveable (not rewritten)"
        in notes[0]
    )


def test_prevent_cse_and_removals(tmp_path: Path) -> None:
    text, notes = fixed(tmp_path, (18, "prevent_cse=True", None), (23, "none", None), (29, "none", None))
    assert notes == []
    assert "@partial(jax.checkpoint, prevent_cse=True)\ndef head(x):" in text
    assert "\n\ndef tail(x):" in text and "@jax.checkpoint\ndef tail" not in text
    assert "jax.value_and_grad(head)(x)" in text


def test_a_plan_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """Removing ``block``'s checkpoint while ``configured`` keeps POLICY is a program nobody measured
    (it may not fit the budget): the plan is left out, and each of its changes is told."""
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    other = tmp_path / "other.py"
    other.write_text(SOURCE, encoding="utf-8")
    fixed, notes = fix_plans(
        [
            plan(path, (13, "none", None), (15, "nothing_saveable", "jax.checkpoint_policies.nothing_saveable")),
            plan(other, (13, "none", None)),  # a plan that can be written whole still is
        ]
    )
    assert [made.path for made in fixed] == [str(other)]
    assert "block = layer\n" in fixed[0].fixed.text
    shown = display_path(str(path))
    assert notes == [
        f"{shown}:15: the policy comes from `POLICY`: set it to jax.checkpoint_policies.nothing_saveable (not rewritten)",
        f"{shown}: the plan for loss was not written: its change at line 15 cannot be made here, and a part of a "
        "plan is a program that was not measured (it may not fit): make every change of its table by hand",
    ]


def test_plans_that_disagree_on_a_site_are_both_left_out(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    step = plan(path, (13, "dots_saveable", DOTS))
    step.target = "step"
    fixed, notes = fix_plans([plan(path, (13, "none", None), (14, "none", None)), step])
    assert fixed == []  # loss's change at line 14 alone is not its plan
    shown = display_path(str(path))
    assert notes[0] == f"{shown}:13: targets disagree (dots_saveable / none): not rewritten"
    assert [note.split(" was not written")[0] for note in notes[1:]] == [
        f"{shown}: the plan for loss",
        f"{shown}: the plan for step",
    ]


def test_a_bare_decorator_becomes_a_partial(tmp_path: Path) -> None:
    text, notes = fixed(tmp_path, (23, "dots_saveable", DOTS))
    assert notes == []
    assert f"@partial(jax.checkpoint, policy={DOTS})\ndef tail(x):" in text


def test_a_bare_decorator_without_partial_imported_is_told(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE.replace("from functools import partial\n", ""), encoding="utf-8")
    made, notes = rewrite(str(path), changes_by_file([plan(path, (22, "dots_saveable", DOTS))])[0][str(path)])
    assert made is None
    assert (
        "model.py:22: write the checkpoint as functools.partial(..., policy=jax.checkpoint_policies.dots_saveable)"
        in notes[0]
    )


def test_targets_that_disagree_leave_the_site_alone(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    changes, notes = changes_by_file(
        [
            plan(path, (13, "none", None)),
            plan(path, (13, "dots_saveable", DOTS)),
            plan(path, (14, "none", None), fits=False),
        ]
    )
    assert changes == {}  # a plan that does not fit changes nothing
    assert notes == [f"{display_path(str(path))}:13: targets disagree (dots_saveable / none): not rewritten"]


def test_a_site_without_a_line_is_told_unless_another_module_places_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    row = {"line": None, "function": "Block.__call__", "chosen": "none", "policy": None}
    alone = Plan(str(a), report={"fits": True, "sites": [row]})
    changes, notes = changes_by_file([alone])
    assert changes == {} and notes == [
        "loss: the site Block.__call__ has no line in the linted files: set none by hand"
    ]
    placed = Plan(str(b), report={"fits": True, "sites": [{**row, "line": 7}]})
    changes, notes = changes_by_file([alone, placed])
    assert changes == {str(b): {7: Change("none", None)}} and notes == []


STACK = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def layer(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    block = jax.checkpoint(layer, policy=jax.checkpoint_policies.nothing_saveable)


    def loss(ws, x):
        for w in ws:
            x = block(w, x)
        return jnp.mean(x**2)


    @jax.checkpoint
    def logged(x):  # a finding (REM201), on which JSON output carries the module's budget plans
        print(x)
        return x
    """
)
CONFIG = textwrap.dedent(
    """\
    [[tool.remat-lint.trace.targets]]
    function = "stack:loss"
    args = [["f32[64,64]", "f32[64,64]", "f32[64,64]"], "f32[32,64]"]
    argnums = 0
    """
)


def cli(folder: Path, *extra: str) -> list[dict[str, Any]]:
    """The budget plans of a --trace --memory-budget 1 run (JSON output); none for --fix."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "remat_lint",
            "--trace",
            "--memory-budget",
            "1",
            "--no-cache",
            "--output-format",
            "json",
            *extra,
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    findings = json.loads(proc.stdout) if proc.stdout.strip().startswith("[") else []
    return [b for f in findings[:1] for b in (f.get("trace") or {}).get("budget", [])]


def test_fix_writes_code_that_compiles_to_the_chosen_program(tmp_path: Path) -> None:
    (tmp_path / "stack.py").write_text(STACK, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
    [before] = cli(tmp_path)
    assert before["fits"] and [s["chosen"] for s in before["sites"]] == [
        "none"
    ]  # all fits: fewest FLOPs, no checkpoint
    diff = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--trace", "--memory-budget", "1", "--diff", "--no-cache", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert diff.stdout.startswith("--- a/") and "\n-block = jax.checkpoint(" in diff.stdout  # the patch alone
    assert "+block = layer\n" in diff.stdout and "--memory-budget 1 for loss(" in diff.stderr
    cli(tmp_path, "--fix")
    assert "\nblock = layer\n" in (tmp_path / "stack.py").read_text(encoding="utf-8")
    env = {**os.environ, "XLA_FLAGS": "--xla_disable_hlo_passes=cse_barrier_expander", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.splitlines()[-1]) == before["chosen"]


# The fixed module's target compiled as the worker compiles it (build.from_spec, costs.Program).
COMPILE = textwrap.dedent(
    """\
    import json, sys, tomllib
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import stack
    from remat_lint.trace.worker import build, costs
    from remat_lint.trace.inputs import parse_targets

    table = tomllib.loads(Path(sys.argv[1], "pyproject.toml").read_text())["tool"]["remat-lint"]["trace"]
    specs, _ = parse_targets(table, Path(sys.argv[1]))
    p = build.from_spec(specs[0], stack, False)
    print(json.dumps(costs.Program.trace(p.fun, p.args, p.kwargs, tuple(range(len(p.args)))).costs({}).to_json()))
    """
)


TRAIN = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp

    import stack

    ws = [jnp.eye(64) * 0.5] * 3
    print(jax.value_and_grad(stack.loss)(ws, jnp.ones((32, 64)))[0])
    """
)


def test_recorded_shapes_are_planned(tmp_path: Path) -> None:
    """--trace-run: the program the project's own command differentiated is planned, as a declared target is."""
    (tmp_path / "stack.py").write_text(STACK, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n", encoding="utf-8")
    [plan] = cli(tmp_path, "--trace-run", f"{sys.executable} train.py")
    assert plan["target"].startswith("loss(") and plan["fits"]
    assert [(s["line"], s["chosen"]) for s in plan["sites"]] == [(9, "none")]
    assert plan["chosen"] == plan["no_checkpoint"]  # budget 1: everything fits, and no checkpoint recomputes nothing
