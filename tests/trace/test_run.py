"""``--trace --trace-run CMD``: findings checked at the shapes the project's own tests differentiate
(parameter dicts, a Flax model's variables), and an exception a test hits at the flagged checkpoint
as evidence. The command's output never mixes with remat-lint's."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.trace_cases import LINEN_INIT, LINEN_LAYERS, LINEN_MODEL, lint

pytest.importorskip("jax")
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pyproject.toml": "[tool.remat-lint]\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_shapes_recorded_from_the_tests_confirm_a_finding_no_declaration_could(tmp_path: Path):
    project(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.model import loss\n",
            "pkg/model.py": """\
            import jax
            import jax.numpy as jnp


            def mlp(params, x):
                return jnp.tanh(x @ params["w"]) @ params["v"]


            block = jax.checkpoint(mlp, policy="dots_saveable")


            def loss(params, batch):
                return jnp.mean((block(params, batch["x"]) - batch["y"]) ** 2)
            """,
            "tests/test_model.py": """\
            import jax
            import jax.numpy as jnp

            from pkg import loss


            def test_grad():
                print("output of the user's tests")
                params = {"w": jnp.ones((8, 16)), "v": jnp.ones((16, 4))}
                batch = {"x": jnp.ones((2, 8)), "y": jnp.zeros((2, 4))}
                assert jax.grad(loss)(params, batch)["w"].shape == (8, 16)
            """,
        },
    )
    without = json.loads(lint("--trace", "--output-format", "json", "pkg", cwd=tmp_path).stdout)
    assert without[0]["trace"]["status"] == "unconfirmed"  # the shape search cannot build parameter dicts
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    (item,) = json.loads(proc.stdout)
    assert item["trace"]["status"] == "confirmed", item["trace"]
    assert item["trace"]["reason"] == (
        "TypeError: 'str' object is not callable (grad: grad of loss({v: f32[16,4], w: f32[8,16]}, "
        "{x: f32[2,8], y: f32[2,4]})) [shapes recorded from the project's run]"
    )
    assert item["trace"]["evidence"]["shapes"] == "recorded"
    assert "output of the user's tests" not in proc.stdout  # the failing command's tail is quoted, indented, on stderr
    assert all(line.startswith("    ") for line in proc.stderr.splitlines() if "output of the user's tests" in line)
    assert f"remat-lint: warning: --trace-run: `{PYTEST}` exited with 1; its last output lines:\n" in proc.stderr
    assert "\n    1 failed" in proc.stderr


def test_an_exception_a_test_hits_at_the_checkpoint_confirms_it(tmp_path: Path):
    pytest.importorskip("flax")
    project(
        tmp_path,
        {
            "pkg/__init__.py": LINEN_INIT,
            "pkg/layers.py": LINEN_LAYERS,
            "pkg/model.py": LINEN_MODEL,
            "tests/test_model.py": """\
            import jax
            import jax.numpy as jnp

            from pkg import Model


            def test_init():
                assert Model().init(jax.random.key(0), jnp.ones((4, 16)))
            """,
        },
    )
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    verdicts = {item["code"]: item["trace"] for item in json.loads(proc.stdout)}
    assert set(verdicts) == {"REM011", "REM202"}, proc.stderr
    for v in verdicts.values():
        assert v["status"] == "confirmed", v
        assert v["reason"].startswith("TracerBoolConversionError: ")
        assert v["reason"].endswith("(run: the --trace-run command) [shapes recorded from the project's run]")
    assert "never called jax.grad, jax.value_and_grad, jax.vjp or a checkpointed function of the project" in proc.stderr


def test_flax_nnx_transforms_are_recorded_over_the_modules_state(tmp_path: Path):
    pytest.importorskip("flax")
    project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """\
            from functools import partial

            import jax
            from flax import nnx


            class Block(nnx.Module):
                def __init__(self, dim, rngs):
                    self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
                    self.down = nnx.Linear(4 * dim, dim, rngs=rngs)

                @partial(nnx.remat, policy=jax.checkpoint_policies.everything_saveable)
                def __call__(self, x):
                    return x + self.down(jax.nn.gelu(self.up(x)))
            """,
            "tests/test_model.py": """\
            import jax.numpy as jnp
            from flax import nnx

            from pkg.model import Block


            def test_step():
                model = Block(16, nnx.Rngs(0))
                x = jnp.ones((4, 16))
                loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
                assert loss >= 0
            """,
        },
    )
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    (item,) = json.loads(proc.stdout)
    assert item["code"] == "REM104", proc.stderr
    v = item["trace"]
    assert v["status"] == "confirmed", v
    assert v["reason"].startswith("The checkpoint saves no memory and removing it costs no FLOPs.")
    assert v["evidence"]["shapes"] == "recorded" and proc.returncode == 1
    assert "warning" not in proc.stderr  # the tests pass, and the differentiated lambda was recorded


def test_a_checkpoint_the_tests_only_call_forward_is_differentiated_at_their_shapes(tmp_path: Path):
    project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": """\
            import jax
            import jax.numpy as jnp


            def mlp(params, x):
                return jnp.tanh(x @ params["w"]) @ params["v"]


            block = jax.checkpoint(mlp, policy="dots_saveable")
            """,
            "tests/test_model.py": """\
            import jax.numpy as jnp

            from pkg.model import block


            def test_forward():
                params = {"w": jnp.ones((8, 16)), "v": jnp.ones((16, 4))}
                assert block(params, jnp.ones((2, 8))).shape == (2, 4)
            """,
        },
    )
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    (item,) = json.loads(proc.stdout)
    assert item["trace"]["reason"] == (
        "TypeError: 'str' object is not callable (grad: grad of mlp({v: f32[16,4], w: f32[8,16]}, f32[2,8])) "
        "[shapes recorded from a call of the checkpointed function in the project's run]"
    ), item["trace"]
    assert "warning" not in proc.stderr
