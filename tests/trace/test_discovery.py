"""``--trace --trace-run CMD`` discovery: every checkpoint a differentiated program of the run applied is
judged at its line, whatever its spelling (REM401 saves no memory, REM402 never applied, REM403 names
that match nothing), and a checkpoint that saves memory is never reported."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.output.reporters import FORMATS
from tests.trace_cases import lint

pytest.importorskip("jax")
pytest.importorskip("flax")
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"

MODEL = """\
    import os

    import jax
    import jax.numpy as jnp
    from flax import nnx
    from jax.ad_checkpoint import checkpoint_name


    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(16, 64, rngs=rngs)
            self.l2 = nnx.Linear(64, 64, rngs=rngs)
            self.l3 = nnx.Linear(64, 4, rngs=rngs)

        def __call__(self, x):
            return self.l3(jnp.tanh(self.l2(jnp.tanh(self.l1(x)))))


    def run(model, x):
        return model(x)


    forward = nnx.remat(run)  # line 23: the whole forward, then a squared error


    def loss(model, x, y):
        return jnp.mean((forward(model, x) - y) ** 2)


    def shallow(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    layer = jax.checkpoint(shallow)  # line 34: bypassed for 8 layers or more


    def deep(ws, x):
        for w in ws:
            x = shallow(w, x) if len(ws) >= 8 else layer(w, x)
        return jnp.sum(x**2)


    def named(w, x):
        return checkpoint_name(jnp.tanh(x @ w), "hidden") @ w


    SAVE = os.environ.get("SAVE_NAMES", "hiden").split(",")
    saving = jax.checkpoint(named, policy=jax.checkpoint_policies.save_only_these_names(*SAVE))  # line 48


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    per_layer = jax.checkpoint(dense)  # line 55: saves memory: never reported
    # line 56: per_layer is the only checkpoint of dense


    def stack(ws, x):
        for w in ws:
            x = jnp.tanh(saving(w, x))
        return jnp.sum(x**2)


    def saved(ws, x):
        for w in ws:
            x = per_layer(w, x)
        return jnp.sum(x**2)


    def mix(w, x):
        return jnp.tanh(x @ w)


    used = jax.checkpoint(mix)  # line 75: this one runs (its calls name it),
    spare = jax.checkpoint(mix)  # line 76: this one never does, though it wraps mix too: REM402


    def pair(ws, x):
        for w in ws:
            x = used(w, x)
        return jnp.sum(x**2)


    def total(w, x):
        return jnp.sum(jnp.tanh(x @ w) ** 2)


    whole = jax.checkpoint(total)  # line 89: REM101 reports it; discovery confirms it


    def whole_grad(w, x):
        return jax.grad(whole)(w, x)


    SHARED = jax.checkpoint_policies.save_only_these_names(*os.environ.get("SHARED_NAMES", "a,b").split(","))


    def first(w, x):
        return checkpoint_name(jnp.tanh(x @ w), "a") @ w


    def second(w, x):
        return checkpoint_name(jnp.sin(x @ w), "b") @ w


    shared_a = jax.checkpoint(first, policy=SHARED)  # line 107: one policy for two bodies, each declaring one name
    shared_b = jax.checkpoint(second, policy=SHARED)  # line 108


    def both(ws, x):
        return jnp.sum(shared_b(ws[1], jnp.tanh(shared_a(ws[0], x))) ** 2)
    """

TESTS = """\
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from pkg.model import MLP, deep, loss, pair, saved, stack


    def test_nnx():
        model = MLP(nnx.Rngs(0))
        assert nnx.grad(loss)(model, jnp.ones((8, 16)), jnp.ones((8, 4))) is not None


    def test_deep():
        assert jax.grad(deep)([jnp.ones((8, 8))] * 8, jnp.ones((4, 8)))[0].shape == (8, 8)


    def test_stack():
        assert jax.grad(stack)([jnp.ones((32, 32))] * 4, jnp.ones((16, 32)))[0].shape == (32, 32)


    def test_saved():
        assert jax.grad(saved)([jnp.ones((64, 64))] * 4, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_pair():
        assert jax.grad(pair)([jnp.ones((8, 8))] * 2, jnp.ones((4, 8)))[0].shape == (8, 8)


    def test_whole():
        from pkg.model import whole_grad

        assert whole_grad(jnp.ones((8, 8)), jnp.ones((4, 8))).shape == (8, 8)


    def test_both():
        from pkg.model import both

        assert jax.grad(both)([jnp.ones((8, 8))] * 2, jnp.ones((4, 8)))[0].shape == (8, 8)
    """


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pyproject.toml": "[tool.remat-lint]\n", "pkg/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


@pytest.fixture(scope="module")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict], dict[str, str]]:
    """The JSON findings, the SARIF results and every other format's output of one --trace-run over
    the project above."""
    root = project(tmp_path_factory.mktemp("discovery"), {"pkg/model.py": MODEL, "tests/test_model.py": TESTS})
    others = [fmt for fmt in FORMATS if fmt != "json"]
    extra = [arg for fmt in others for arg in ("--extra-output", f"{fmt}={root / ('out.' + fmt)}")]
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", *extra, "pkg", cwd=root)
    assert proc.returncode == 1, proc.stderr
    texts = {fmt: (root / f"out.{fmt}").read_text() for fmt in others}
    return json.loads(proc.stdout), json.loads(texts["sarif"])["runs"][0]["results"], texts


def by_line(findings: list[dict]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for f in findings:
        out.setdefault(f["location"]["row"], []).append(f["code"])
    return out


def test_whole_forward_nnx_checkpoint_before_a_squared_error_is_reported_with_its_numbers(discovered):
    (found,) = [f for f in discovered[0] if f["code"] == "REM401" and f["location"]["row"] < 94]
    assert found["location"]["row"] == 23
    assert found["message"].startswith(
        "This checkpoint saves no memory in the differentiated program but costs compute: temp "
    )
    evidence = found["trace"]["evidence"]
    assert evidence["as_written"]["temp_bytes"] >= evidence["without"]["temp_bytes"]  # measured 4,152 vs 4,096 bytes
    assert evidence["as_written"]["flops"] > evidence["without"]["flops"] * 1.2  # measured +33 %
    # and at 16 times the batch of x and y: measured 98,360 vs 98,304 bytes
    assert (
        "; at 16 times the batch (f32[128,16], f32[128,4]): temp 96.05 KiB as written vs 96.00 KiB" in found["message"]
    )
    assert evidence["scaled"]["as_written"]["temp_bytes"] >= evidence["scaled"]["without"]["temp_bytes"]
    assert found["trace"]["found_by"] == "trace"
    assert found["trace"]["reason"].startswith("found by tracing in tests/test_model.py::test_nnx, program loss(")


def test_a_checkpoint_a_branch_bypasses_is_not_applied_in_any_program_of_the_command(discovered):
    found, spare = [f for f in discovered[0] if f["code"] == "REM402"]
    assert found["location"]["row"] == 34
    assert spare["location"]["row"] == 76  # its twin at line 75 wraps the same function; only it is called
    assert found["message"].startswith(f"This checkpoint was not applied in any differentiated program of `{PYTEST}`")
    # three programs named; the evidence lists the seven. The trace sees differentiated programs only,
    # so the message names both causes it cannot tell apart
    assert found["message"].endswith(
        " and 4 more): a branch or a setting bypasses it there, or the run called it only outside a gradient"
    )
    assert len(found["trace"]["evidence"]["programs"]) == 7


def test_a_name_policy_whose_names_match_no_checkpoint_name_is_reported(discovered):
    (found,) = [f for f in discovered[0] if f["code"] == "REM403"]
    assert found["location"]["row"] == 48
    assert "'hiden'" in found["message"] and "names in the checkpointed body: hidden" in found["message"]
    assert "tests/test_model.py::test_stack" in found["trace"]["reason"]


def test_a_checkpoint_that_saves_memory_is_not_reported(discovered):
    lines = by_line(discovered[0])
    assert 55 not in lines and 75 not in lines
    assert [line for line in sorted(lines) if line < 94] == [23, 34, 48, 76, 89]


def test_a_policy_shared_by_two_checkpoints_is_judged_against_the_whole_program(discovered):
    """Each body declares one of the policy's two names: both names are in the program, so no REM403."""
    assert [f for f in discovered[0] if f["code"] == "REM403"] == [
        f for f in discovered[0] if f["location"]["row"] == 48
    ]


def test_a_discovery_on_a_line_the_static_pass_flagged_confirms_that_finding(discovered):
    (found,) = [f for f in discovered[0] if f["location"]["row"] == 89]
    assert found["code"] == "REM101" and found["trace"]["status"] == "confirmed"


def test_every_output_format_carries_the_discovered_findings(discovered):
    results = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in discovered[1]}
    results = {(code, line) for code, line in results if line < 94}
    assert results == {("REM401", 23), ("REM402", 34), ("REM403", 48), ("REM402", 76), ("REM101", 89)}
    for fmt, text in discovered[2].items():  # text, github, gitlab, junit...: each names the three new codes
        assert all(code in text for code in ("REM401", "REM402", "REM403")), fmt


def test_a_program_that_fails_to_build_again_gives_no_finding_and_says_what_failed(tmp_path: Path):
    project(
        tmp_path,
        {
            "pkg/model.py": """\
            import jax
            import jax.numpy as jnp

            CALLS = []


            def loss(x):
                CALLS.append(x)
                if len(CALLS) > 1:  # the run's own call traces; the replay does not
                    raise RuntimeError("traced once only")
                return jnp.sum(jax.checkpoint(jnp.sin)(x))
            """,
            "tests/test_model.py": """\
            import jax
            import jax.numpy as jnp

            from pkg.model import loss


            def test_grad():
                assert jax.grad(loss)(jnp.ones(4)).shape == (4,)
            """,
        },
    )
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    assert json.loads(proc.stdout) == []
    assert "no discovery in loss(f32[4]): the program failed at " in proc.stderr
    assert "RuntimeError: traced once only" in proc.stderr


def test_costs_measured_without_the_cpu_barrier_flag_report_nothing(tmp_path: Path):
    """A command that clears XLA_FLAGS: XLA:CPU merges the recomputation away, and the per-layer checkpoint
    that saves memory compiles to more temp than none (measured 65,544 vs 40,968 bytes): no REM401 from it."""
    root = project(tmp_path, {"pkg/model.py": MODEL, "tests/test_model.py": TESTS})
    command = f"XLA_FLAGS= {PYTEST}/test_model.py::test_saved"
    proc = lint("--trace", "--trace-run", command, "--output-format", "json", "pkg", cwd=root)
    assert "REM401" not in {f["code"] for f in json.loads(proc.stdout)}
    assert "no compiled-cost discovery in saved(<4 arrays>, f32[32,64]): XLA:CPU ran without " in proc.stderr


# Three projects' modules in one project and one --trace-run (each module is judged on the programs
# that apply its checkpoints; none of them expects a REM402, whose evidence lists every program).
LAYERS = """\
    import jax.numpy as jnp


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)
    """
CROSS = """\
    import jax
    import jax.numpy as jnp

    from pkg import layers

    layer = jax.checkpoint(layers.dense)


    def saved(ws, x):
        for w in ws:
            x = layer(w, x)
        return jnp.sum(x**2)
    """
CROSS_TEST = """\
    import jax
    import jax.numpy as jnp

    from pkg.cross import saved


    def test_saved():
        assert jax.grad(saved)([jnp.ones((64, 64))] * 4, jnp.ones((32, 64)))[0].shape == (64, 64)
    """
WHOLE_LINEN = """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return x + nn.Dense(16)(jnp.tanh(nn.Dense(64)(x)))


    class GPT(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(2):
                x = Block()(x)
            return nn.Dense(4)(x)


    Model = nn.remat(GPT)


    def loss(params, x, y):
        return jnp.mean((Model().apply(params, x) - y) ** 2)
    """
WHOLE_LINEN_TEST = """\
    import jax
    import jax.numpy as jnp

    from pkg.whole import Model, loss


    def test_grads():
        x = jnp.ones((8, 16))
        params = Model().init(jax.random.key(0), x)
        assert jax.grad(loss)(params, x, jnp.ones((8, 4))) is not None
    """
PROJECTED = """\
    import jax
    import jax.numpy as jnp


    def mlp(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x


    forward = jax.checkpoint(mlp)


    def loss(ws, x, proj):
        return jnp.mean((forward(ws, x) @ proj) ** 2)
    """
PROJECTED_TEST = """\
    import jax
    import jax.numpy as jnp

    from pkg.projected import loss


    def test_grad():
        ws = [jnp.ones((32, 32))] * 3
        assert len(jax.grad(loss)(ws, jnp.ones((16, 32)), jnp.ones((32, 4)))) == 3
    """


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Per module: its JSON findings from one --trace-run over the modules above."""
    files = {
        "pkg/layers.py": LAYERS,
        "pkg/cross.py": CROSS,
        "tests/test_cross.py": CROSS_TEST,
        "pkg/whole.py": WHOLE_LINEN,
        "tests/test_whole.py": WHOLE_LINEN_TEST,
        "pkg/projected.py": PROJECTED,
        "tests/test_projected.py": PROJECTED_TEST,
    }
    root = project(tmp_path_factory.mktemp("merged"), files)
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=root)
    by_module: dict[str, list[dict]] = {Path(name).name: [] for name in files if name.startswith("pkg/")}
    for finding in json.loads(proc.stdout):
        by_module[Path(finding["filename"]).name].append(finding)
    return by_module


def test_a_checkpoint_of_another_modules_function_is_not_called_unapplied(merged: dict[str, list[dict]]):
    """``jax.checkpoint(layers.dense)``: the equation's function is in layers.py and its calls are in
    cross.py, so it matches no static site line; it ran, so REM402 must not say it did not."""
    assert merged["layers.py"] == merged["cross.py"] == [], merged


def test_a_linen_model_wrapped_whole_by_nn_remat_is_reported_at_the_wrap(merged: dict[str, list[dict]]):
    [found] = merged["whole.py"]
    assert (found["code"], found["location"]["row"]) == ("REM401", 20)  # the nn.remat line, not the body
    assert "program loss(<10 arrays>, f32[8,16], f32[8,4])" in found["trace"]["reason"]
    assert "; at 16 times the batch (f32[128,16], f32[128,4]): temp " in found["message"], found["message"]


PER_LAYER = """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from flax import nnx


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(16)(jnp.tanh(nn.Dense(64)(x)))


    class Linen(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(2):
                x = nn.remat(Block)()(x)  # line 17
            return x


    def linen_loss(params, x):
        return jnp.mean(Linen().apply(params, x) ** 2)


    class Layer(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(16, 64, rngs=rngs)
            self.b = nnx.Linear(64, 16, rngs=rngs)

        def __call__(self, x):
            return self.b(jnp.tanh(self.a(x)))


    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([Layer(rngs) for _ in range(2)])

        def __call__(self, x):
            for layer in self.layers:
                x = layer_call(layer, x)
            return x


    layer_call = nnx.remat(lambda layer, x: layer(x))  # line 44


    def nnx_loss(model, x):
        return jnp.mean(model(x) ** 2)


    def dense(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    per_layer = jax.checkpoint(dense)  # line 55


    def jax_loss(ws, x):
        for w in ws:
            x = per_layer(w, x)
        return jnp.mean(x**2)


    spare = jax.checkpoint(jnp.sin)  # line 64: no program applies it: REM402 lists the programs judged
    """

PER_LAYER_TESTS = """\
    import jax
    import jax.numpy as jnp
    import pytest
    from flax import nnx

    from pkg.model import Linen, Net, jax_loss, linen_loss, nnx_loss

    BATCHES = [pytest.param(8, id="grad"), pytest.param(4, id="value_and_grad")]


    @pytest.mark.parametrize("batch", BATCHES)
    def test_linen(batch):
        x = jnp.ones((batch, 16))
        params = Linen().init(jax.random.key(0), x)
        grad = jax.grad if batch == 8 else lambda f: lambda *a: jax.value_and_grad(f)(*a)[1]
        assert jax.tree_util.tree_leaves(grad(linen_loss)(params, x))


    @pytest.mark.parametrize("batch", BATCHES)
    def test_nnx(batch):
        grad = nnx.grad if batch == 8 else lambda f: lambda *a: nnx.value_and_grad(f)(*a)[1]
        assert grad(nnx_loss)(Net(nnx.Rngs(0)), jnp.ones((batch, 16))) is not None


    @pytest.mark.parametrize("batch", BATCHES)
    def test_jax(batch):
        grad = jax.grad if batch == 8 else lambda f: lambda *a: jax.value_and_grad(f)(*a)[1]
        assert grad(jax_loss)([jnp.ones((16, 16))] * 2, jnp.ones((batch, 16)))[0].shape == (16, 16)
    """


def test_per_layer_checkpoints_that_save_memory_at_a_larger_batch_are_not_reported_at_tiny_shapes(tmp_path: Path):
    """At the tests' batch a per-layer checkpoint compiles to more temp than none (fixed-size buffers
    decide it), at 16 times the batch to less: the checkpoint saves memory, so no REM401, in linen,
    nnx and plain jax, under grad and value_and_grad."""
    project(tmp_path, {"pkg/model.py": PER_LAYER, "tests/test_model.py": PER_LAYER_TESTS})
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    found = json.loads(proc.stdout)
    assert [(f["code"], f["location"]["row"]) for f in found] == [("REM402", 64)]
    assert len(found[0]["trace"]["evidence"]["programs"]) == 6  # linen, nnx and jax, at batch 8 and 4


def test_a_program_that_does_not_trace_at_a_larger_batch_gives_no_rem401(merged: dict[str, list[dict]]):
    """``proj`` is not differentiated, so its leading dimension grows with the batch's and ``h @ proj``
    no longer traces: the verdict at the recorded shapes alone is not reported (precision)."""
    assert merged["projected.py"] == [], merged
