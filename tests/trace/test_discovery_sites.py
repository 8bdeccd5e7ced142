"""``--trace --trace-run``: several checkpoints of one function are told apart by the wrap each call goes
through, so every verdict, site table and discovered finding is about the checkpoint it names; and a
misuse the static pass and discovery both find (at a call and at its wrap) is one finding."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.trace.test_discovery import project
from tests.trace_cases import lint

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("equinox")
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"

WRAPS = """\
    import jax
    import jax.numpy as jnp

    SAVE_NOTHING = jax.checkpoint_policies.nothing_saveable
    SAVE_ALL = jax.checkpoint_policies.everything_saveable


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    lean = jax.checkpoint(dense, policy=SAVE_NOTHING)  # line 12: one per layer, saves memory
    fat = jax.checkpoint(dense, policy=SAVE_ALL)  # line 13: REM104, called once


    def loss(ws, x):
        x = fat(ws[0], x)
        for w in ws[1:]:
            x = lean(w, x)
        return jnp.mean(x**2)
    """

UNUSED = """\
    import jax
    import jax.numpy as jnp

    SAVE_NOTHING = jax.checkpoint_policies.nothing_saveable
    SAVE_ALL = jax.checkpoint_policies.everything_saveable


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    lean = jax.checkpoint(dense, policy=SAVE_NOTHING)  # line 12: the one called
    fat = jax.checkpoint(dense, policy=SAVE_ALL)  # line 13: REM104, never called


    def loss(ws, x):
        for w in ws:
            x = lean(w, x)
        return jnp.mean(x**2)
    """

OUTER = """\
    import functools

    import jax
    import jax.numpy as jnp


    def train_step(w, x):
        @jax.checkpoint  # line 8: the whole loss, REM401
        def body(w, x):
            return jnp.tanh(jnp.tanh(x @ w) @ w)

        return jnp.mean(body(w, x) ** 2)


    step = functools.partial(train_step)  # line 15: binds what contains the checkpoint, no wrap


    def loss(w, x):
        return step(w, x)
    """

LINEN = """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, train=False):
            h = jnp.tanh(nn.Dense(64)(x))
            return nn.Dense(64)(h if train else jnp.tanh(h))


    Lean = nn.remat(Block)  # line 13: one per layer
    Pinned = nn.remat(Block, static_argnums=(2,))  # line 14: the last stage, same policy


    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(3):
                x = Lean()(x)
            return Pinned()(x, True)


    def loss(params, x):
        return jnp.mean(Net().apply(params, x) ** 2)
    """

HELPER = """\
    import jax
    import jax.numpy as jnp

    NOTHING = jax.checkpoint_policies.nothing_saveable
    EVERYTHING = jax.checkpoint_policies.everything_saveable


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    def checkpointed(fn, policy):
        return jax.checkpoint(fn, policy=policy)  # line 13: the one wrap, applied by both lines below


    lean = checkpointed(dense, NOTHING)  # line 16: one per layer
    fat = checkpointed(dense, EVERYTHING)  # line 17: keeps everything


    def loss(ws, x):
        for w in ws[:4]:
            x = lean(w, x)
        x = fat(ws[4], x)
        return jnp.mean(x**2)
    """

JOIN = """\
    import equinox as eqx
    import jax
    import jax.numpy as jnp


    class MLP(eqx.Module):
        mlp: eqx.nn.MLP

        def __init__(self, key):
            self.mlp = eqx.nn.MLP(16, 4, 64, 2, key=key)

        def __call__(self, x):
            return jax.vmap(self.mlp)(x)


    forward = eqx.filter_checkpoint(lambda model, x: model(x))  # line 16: REM401 by tracing


    @eqx.filter_grad
    def grads(model, x, y):
        return jnp.mean((forward(model, x) - y) ** 2)  # line 21: REM102, the same checkpoint
    """

TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg import helper, join, linen, outer, unused, wraps


    def test_wraps():
        assert jax.grad(wraps.loss)([jnp.ones((64, 64))] * 5, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_unused():
        assert jax.grad(unused.loss)([jnp.ones((64, 64))] * 4, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_outer():
        assert jax.grad(outer.loss)(jnp.ones((64, 64)), jnp.ones((32, 64))).shape == (64, 64)


    def test_linen():
        x = jnp.ones((32, 64))
        params = linen.Net().init(jax.random.key(0), x)
        assert jax.tree_util.tree_leaves(jax.grad(linen.loss)(params, x))


    def test_helper():
        assert jax.grad(helper.loss)([jnp.ones((64, 64))] * 5, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_join():
        model = join.MLP(jax.random.key(0))
        assert join.grads(model, jnp.ones((8, 16)), jnp.ones((8, 4))) is not None
    """


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict], str]:
    """The JSON findings, the SARIF results and the ``full`` text of one --trace-run over the project."""
    modules = {"wraps": WRAPS, "unused": UNUSED, "outer": OUTER, "linen": LINEN, "helper": HELPER, "join": JOIN}
    files = {f"pkg/{name}.py": text for name, text in modules.items()} | {"tests/test_model.py": TESTS}
    root = project(tmp_path_factory.mktemp("sites"), files)
    extra = ["--extra-output", f"sarif={root / 'out.sarif'}", "--extra-output", f"full={root / 'out.txt'}"]
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", *extra, "pkg", cwd=root)
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads((root / "out.sarif").read_text())["runs"][0]["results"]
    return json.loads(proc.stdout), sarif, (root / "out.txt").read_text()


def found(findings: list[dict], module: str) -> list[tuple[str, int]]:
    return sorted((f["code"], f["location"]["row"]) for f in findings if f["filename"].endswith(module))


def test_a_verdict_and_its_site_table_measure_only_the_checkpoint_at_the_flagged_line(run):
    """``fat`` and ``lean`` wrap ``dense`` with policies the source names by variables: REM104 at ``fat``
    compiles without ``fat`` alone (once called), not without the four calls of both."""
    assert found(run[0], "wraps.py") == [("REM104", 13)]  # lean saves memory: no discovery at line 12
    [rem104] = [f for f in run[0] if f["filename"].endswith("wraps.py")]
    evidence = rem104["trace"]["evidence"]
    assert evidence["calls"] == 1
    assert (evidence["site"]["calls"], evidence["site"]["policy"]) == (1, "everything_saveable")


def test_a_wrap_never_called_is_not_confirmed_by_the_calls_of_its_twin(run):
    """The run records the calls of ``lean`` (a checkpointed function called in the project's code) and
    replays them: that program is ``lean``'s checkpoint, no evidence about ``fat``, which no program applied."""
    assert found(run[0], "unused.py") == [("REM104", 13), ("REM402", 13)]
    [rem104] = [f for f in run[0] if f["filename"].endswith("unused.py") and f["code"] == "REM104"]
    assert rem104["trace"]["status"] == "unconfirmed", rem104["trace"]


def test_only_the_call_of_the_checkpointed_function_names_its_wrap(run):
    """``body(w, x)`` names no wrap (a decorated ``def``); ``step(w, x)`` further out calls a name bound
    to a call of the function that contains the checkpoint, which is no wrap of it."""
    assert found(run[0], "outer.py") == [("REM401", 8)]


def test_two_nn_remat_wraps_of_one_block_with_one_policy_are_judged_apart(run):
    """``Lean`` and ``Pinned`` give equations of one function, body and policy; only the last stage,
    called once through ``Pinned``, saves no memory."""
    assert found(run[0], "linen.py") == [("REM401", 14)]
    [rem401] = [f for f in run[0] if f["filename"].endswith("linen.py")]
    assert rem401["trace"]["evidence"]["calls"] == 1


def test_a_wrap_made_by_a_helper_is_reported_at_the_line_that_chose_its_policy(run):
    """Both wraps go through the helper's one ``jax.checkpoint`` (applied, so no REM402 there); the one
    that keeps everything is the line that passes that policy, not ``dense``'s definition."""
    assert found(run[0], "helper.py") == [("REM401", 17)]
    [rem401] = [f for f in run[0] if f["filename"].endswith("helper.py")]
    assert rem401["trace"]["evidence"]["calls"] == 1


def test_one_misuse_found_at_a_call_and_at_its_wrap_is_one_finding_in_json(run):
    """``eqx.filter_checkpoint`` of a whole forward under ``eqx.filter_grad``: the static pass flags the
    call (REM102), discovery measures the wrap (REM401)."""
    [finding] = [f for f in run[0] if f["filename"].endswith("join.py")]
    assert (finding["code"], finding["location"]["row"]) == ("REM102", 21)
    assert finding["trace"]["status"] == "confirmed"
    [related] = finding["related"]
    assert related["location"]["row"] == 16 and "(REM401)" in related["message"]


def test_one_misuse_found_at_a_call_and_at_its_wrap_is_one_finding_in_sarif(run):
    results = [
        r for r in run[1] if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("join.py")
    ]
    [result] = results
    assert (result["ruleId"], result["locations"][0]["physicalLocation"]["region"]["startLine"]) == ("REM102", 21)
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == 16


def test_one_misuse_found_at_a_call_and_at_its_wrap_is_one_finding_in_text(run):
    shown = [line for line in run[2].splitlines() if "join.py:" in line]
    assert len(shown) == 2, shown  # no REM401 at pkg/join.py:16 beside the note
    assert shown[0].startswith("pkg/join.py:21:22: REM102 ")
    assert shown[1].startswith("  = note: pkg/join.py:16:1: ") and shown[1].endswith("(REM401)")


def test_a_memory_budget_plans_each_wrap_of_one_block_apart(tmp_path: Path):
    """``Lean`` and ``Pinned`` are two checkpoints to set a policy on, not one at ``Lean``'s line."""
    tests = """\
        import jax
        import jax.numpy as jnp

        from pkg import linen


        def test_linen():
            params = linen.Net().init(jax.random.key(0), jnp.ones((32, 64)))
            assert jax.tree_util.tree_leaves(jax.grad(linen.loss)(params, jnp.ones((32, 64))))
        """
    root = project(tmp_path, {"pkg/linen.py": LINEN, "tests/test_model.py": tests})
    proc = lint("--trace", "--trace-run", PYTEST, "--memory-budget", "0.5", "pkg", cwd=root)
    rows = re.findall(r"^ +(\d+) +Block\.__call__ +nothing_saveable ", proc.stdout, re.MULTILINE)
    assert rows == ["13", "14"], proc.stdout
