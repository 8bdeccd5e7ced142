"""What REM011, REM201, REM202, REM203 and REM302 tell users about JAX and Flax, checked against
the installed packages: every claim in their messages, and the fixtures' flagged and quiet code
(imported and run: what is flagged fails, what is quiet works)."""

from __future__ import annotations

import importlib.util
import logging
import random
import re
import runpy
import time
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
np = pytest.importorskip("numpy")
nn = pytest.importorskip("flax.linen")
nn_partitioning = pytest.importorskip("flax.linen.partitioning")
hk = pytest.importorskip("haiku")
nnx = pytest.importorskip("flax.nnx")
eqx = pytest.importorskip("equinox")
io_callback = pytest.importorskip("jax.experimental").io_callback

from tests.helpers import fix_all, lint  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
cp = jax.checkpoint_policies


def load_fixture(name: str):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def init_and_grad(model, *args):
    variables = model.init({"params": KEY, "dropout": KEY}, *args)
    loss = lambda p: jnp.sum(model.apply({**variables, "params": p}, *args, mutable=True)[0])
    return jax.grad(loss)(variables.get("params", {}))


TRACER_BOOL = jax.errors.TracerBoolConversionError


# --- REM201: Python side effects run at trace time only -------------------------------------------


def counting_body():
    seen = []

    def body(x):
        seen.append(x)
        return jnp.sum(jnp.sin(x) * x)

    return body, seen


def test_python_effects_run_once_per_trace_not_per_call():
    body, seen = counting_body()
    checkpointed = jax.checkpoint(body)
    for _ in range(3):
        checkpointed(X)
    assert len(seen) == 1, "later eager calls reuse the cached trace"
    assert isinstance(seen[0], jax.core.Tracer), "the body sees tracers, not values"
    jax.grad(checkpointed)(X)
    assert len(seen) == 1, "grad reuses the trace and the recompute does not rerun Python code"
    plain, plain_seen = counting_body()
    for _ in range(3):
        plain(X)
    assert len(plain_seen) == 3


def test_python_effects_are_not_repeated_by_the_recompute():
    for transform in (jax.checkpoint, nnx.remat, eqx.filter_checkpoint):
        body, seen = counting_body()
        jax.grad(transform(body))(X)
        assert len(seen) == 1, transform
    body, seen = counting_body()
    jitted = jax.jit(jax.grad(jax.checkpoint(body)))
    jitted(X)
    jitted(X)
    assert len(seen) == 1, "under jit, later calls reuse the cached trace"


@pytest.mark.parametrize(
    "draw",
    [
        lambda: np.random.normal(),
        lambda: random.random(),
        lambda: time.time(),
        np.random.default_rng().normal,
        random.Random().random,
    ],
    ids=["np.random", "random", "time", "numpy Generator", "random.Random"],
)
def test_random_and_clock_values_are_baked_in_as_constants(draw):
    checkpointed = jax.checkpoint(lambda x: x + draw())
    first, second = checkpointed(X), checkpointed(X)
    assert jnp.array_equal(first, second)


def test_logging_a_traced_value_logs_a_tracer(caplog):
    @jax.checkpoint
    def body(x):
        logging.getLogger("rem201").warning("value %s", x)
        return x * 2

    with caplog.at_level(logging.WARNING, logger="rem201"):
        body(X)
        body(X)
    assert len(caplog.records) == 1
    assert isinstance(caplog.records[0].args[0], jax.core.Tracer)


def test_rem201_fixture_quiet_code_runs():
    fixture = load_fixture("rem201_impure_checkpoint_body")
    fixture.pure_block(X, jnp.ones((4, 4)))
    out, structure, shapes = fixture.forward_with_structure(X)
    assert structure is not None and shapes == [X.shape], "a per-call side channel is fresh on every call"
    assert fixture.with_local_state(X).shape == X.shape
    fixture.checkpointed_noise(X, KEY)
    init_and_grad(fixture.RematViTBlock(), jnp.ones((2, 2, 4)))


# --- REM202: traced arguments in Python control flow ----------------------------------------------


def test_rem202_fixture_flagged_code_fails_and_quiet_code_runs():
    f = load_fixture("rem202_traced_python_control_flow")
    w = jnp.ones((4, 4))
    with pytest.raises(TRACER_BOOL):
        f.dropout_block(X, w, KEY, True)
    with pytest.raises(TRACER_BOOL):
        f.dropout_block(X, w, KEY, training=True)  # keyword arguments are traced too
    with pytest.raises(jax.errors.TracerIntegerConversionError):
        f.repeated_remat(X, w, 2)
    with pytest.raises(TRACER_BOOL):
        f.scaled_remat(X, 2.0)
    for steps in (3, 3.0, jnp.int32(3)):  # a number computed with ``-=``: traced, whatever it is
        with pytest.raises(TRACER_BOOL):
            f.countdown_remat(X, steps)
    with pytest.raises(TRACER_BOOL):
        f.decoder(X, X, X)
    with pytest.raises(TRACER_BOOL):
        init_and_grad(f.RematMLPBlock(features=4), X, True)
    with pytest.raises(TRACER_BOOL):
        f.NnxBlock(nnx.Rngs(0))(jnp.ones((2, 8)), True)
    f.static_dropout(X, w, KEY, True)
    f.masked(X, X)
    f.masked(X)
    f.traced_choice(X, True)
    f.encoder(X)
    init_and_grad(f.RematMergedBlock(deterministic=True), X)
    init_and_grad(f.RematStaticBlock(features=4), X, True)
    f.bound_remat(X)
    f.cached_remat(X, {"k": X})
    f.cached_remat(X, None)
    f.consume_remat(X, [2.0, 0.5])
    f.consume_remat(X, [])


def test_rem202_a_flag_handed_on_fails_where_it_is_tested():
    f = load_fixture("rem202_traced_python_control_flow")
    x, mask = jnp.ones((2, 3, 4)), jnp.ones((2, 1, 3, 3), bool)
    with pytest.raises(TRACER_BOOL):  # Flax's Dropout with a nonzero rate tests `if deterministic`
        init_and_grad(f.RematEncoderLayer(), x, mask, True)
    with pytest.raises(TRACER_BOOL):  # REM011: index 2 is `mask` under nn.remat
        init_and_grad(f.OffByOneEncoderLayer(), x, mask, True)
    with pytest.raises(TRACER_BOOL):  # a same-module helper's `if`
        f.scaled_block(X, True)
    with pytest.raises(TRACER_BOOL):  # BatchNorm tests `if use_running_average`; REM011: 1 is `x`
        init_and_grad(f.Issue3946MLP(), X, True)
    init_and_grad(f.FixedBatchNormMLP(), X, True)
    with pytest.raises(TRACER_BOOL):  # re-bound names: the def and the class above are checkpointed
        f.gated_residual(X, jnp.ones((4, 4)), True)
    with pytest.raises(TRACER_BOOL):
        f.apply_damped(X)
    with pytest.raises(TRACER_BOOL):
        init_and_grad(f.RebindMLP(), X, True)
    init_and_grad(f.RematStaticEncoderLayer(), x, mask, True)
    init_and_grad(f.PositionalStaticEncoderLayer(), x, mask, True)  # static_argnums in its positional slot
    init_and_grad(f.RematZeroDropoutLayer(), X, True)  # a zero rate returns before the test


def test_equinox_keeps_python_flags_static():
    @eqx.filter_checkpoint
    def block(x, training: bool):
        return x * 2 if training else x

    assert jnp.array_equal(block(X, True), X * 2)


# --- REM011: static_argnums under each API's convention -------------------------------------------


def flagged(x, training):
    return x * 2 if training else x


@pytest.mark.parametrize("transform", [jax.checkpoint, jax.remat, nnx.remat], ids=["checkpoint", "remat", "nnx"])
def test_a_list_fails_at_call_not_at_wrap(transform):
    wrapped = transform(flagged, static_argnums=[1])
    with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool"):
        wrapped(X, True)


def test_a_list_fails_in_haiku_and_linen_but_works_in_nn_partitioning():
    forward = hk.transform(lambda x: hk.remat(flagged, static_argnums=[1])(x, True))
    with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool"):
        forward.init(KEY, X)
    f = load_fixture("rem011_bad_static_argnums")
    with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool"):
        init_and_grad(f.ListStatic(features=4), X, X, True, True)
    init_and_grad(f.GoodListForPartitioning(features=4), X, X, True, True)


def test_an_index_past_the_arguments_raises_value_error():
    with pytest.raises(ValueError, match="less than `len\\(args\\)`"):
        jax.checkpoint(flagged, static_argnums=(2,))(X, True)
    with pytest.raises(ValueError, match="less than `len\\(args\\)`"):
        jax.checkpoint(flagged, static_argnums=(1,))(X, training=True)  # static arguments must be positional


def test_rem011_fixture_flagged_code_fails_and_quiet_code_runs():
    f = load_fixture("rem011_bad_static_argnums")
    enc_args, dec_args = (X, X, True), (X, X, True, True)
    for off_by_one in (f.RematEncoderBlock, f.PartitionedEncoderBlock):  # the flag stays traced
        with pytest.raises(TRACER_BOOL):
            init_and_grad(off_by_one(features=4), *enc_args)
    for flag_traced in (f.LastStatic, f.CommentedDecoder):  # -1 selects Flax internals; off by one
        with pytest.raises(TRACER_BOOL):
            init_and_grad(flag_traced(features=4), *dec_args)
    init_and_grad(f.SelfStatic(features=4), *dec_args)  # 0 is useless (see below), 3 and 4 are right
    with pytest.raises(TypeError, match="'int' object is not iterable"):
        init_and_grad(f.IntStatic(features=4), *dec_args)
    with pytest.raises(ValueError, match="but got \\(4, 6\\)"):  # nn.remat shows its own shifted indices
        init_and_grad(f.TooFar(features=4), *dec_args)
    with pytest.raises(TypeError, match="must be an int, tuple of ints or, bool"):
        f.fast_attention(X, X, X, True)
    with pytest.raises(ValueError, match="less than `len\\(args\\)`"):
        f.wrong_attention(X, X, X, True)
    for good, args in [
        (f.GoodEncoderBlock, enc_args),
        (f.GoodPartitioned, enc_args),
        (f.GoodDecoder, dec_args),
        (f.GoodIntForm, enc_args),
    ]:
        init_and_grad(good(features=4), *args)
    llama_args = (X, None, None, True, False, False)
    with pytest.raises(TRACER_BOOL):  # the flags under the other convention: output_attentions traced
        init_and_grad(f.ShiftedLlamaBlock(features=4), *llama_args)
    init_and_grad(f.GoodLlamaBlock(features=4), *llama_args)
    init_and_grad(f.GoodPartitionedLlamaBlock(features=4), *llama_args)
    f.good_attention(X, X, X, True)
    f.last_attention(X, X, X, True)


def test_a_negative_index_before_the_first_argument_raises_value_error():
    # REM011 quotes this text for negative indices; a defaulted parameter does not change it.
    with pytest.raises(ValueError, match="greater than or equal to -len\\(args\\)"):
        load_fixture("rem011_bad_static_argnums").first_from_end(X, X, X, True)


def test_nn_remat_maps_0_and_negative_indices_onto_its_internals():
    class Last(nn.Module):
        @nn.compact
        def __call__(self, x, flag: bool):
            return nn.Dense(4)(x) * (2.0 if flag else 1.0)

    init_and_grad(nn.remat(Last, static_argnums=(-2,))(), X, True)  # -2 is the last argument
    with pytest.raises(TRACER_BOOL):
        init_and_grad(nn.remat(Last, static_argnums=(-1,))(), X, True)
    with pytest.raises(TRACER_BOOL):
        init_and_grad(nn.remat(Last, static_argnums=(0,))(), X, True)  # 0 is self: nothing becomes static
    for internal in (-4, -5):  # shifted onto Flax's groups: not out of range (no ValueError)
        with pytest.raises(TRACER_BOOL):
            init_and_grad(nn.remat(Last, static_argnums=(internal,))(), X, True)
    with pytest.raises(ValueError, match="greater than or equal to -len\\(args\\)"):
        init_and_grad(nn.remat(Last, static_argnums=(-6,))(), X, True)
    source = (
        "import flax.linen as nn\nclass Last(nn.Module):\n    def __call__(self, x, flag: bool):\n        return x\n"
        "A = nn.remat(Last, static_argnums=(-4,))\nB = nn.remat(Last, static_argnums=(-6,))\n"
    )
    messages = [f.message for f in lint(source, {"REM011"})]
    assert len(messages) == 2 and "out of range" not in messages[0] and "out of range" in messages[1]
    with pytest.raises(TRACER_BOOL):
        init_and_grad(nn_partitioning.remat(Last, static_argnums=(-1,))(), X, True)  # ignored
    init_and_grad(nn_partitioning.remat(Last, static_argnums=(1,))(), X, True)
    with pytest.raises(TRACER_BOOL):
        init_and_grad(nn_partitioning.remat(Last, static_argnums=(2,))(), X, True)  # past the end: ignored


def test_rem011_fixes_give_working_code():
    fixed = fix_all("import jax\ng = jax.checkpoint(f, static_argnums=[1])\n", {"REM011"})
    assert fixed.endswith("static_argnums=(1,))\n")
    jax.checkpoint(flagged, static_argnums=(1,))(X, True)
    fixed = fix_all(
        "import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block, static_argnums=2)\n",
        {"REM011"},
    )
    assert fixed.endswith("static_argnums=(2,))\n")


# --- REM203: run-time callbacks in a checkpoint ---------------------------------------------------


def callback_count(policy=None, jit=False, given=lambda x: x[0, 0]) -> int:
    count = [0]

    def body(x):
        jax.debug.callback(lambda v: count.__setitem__(0, count[0] + 1), given(x))
        return jnp.sum(jnp.sin(x @ x.T))

    step = jax.grad(jax.checkpoint(body, policy=policy))
    (jax.jit(step) if jit else step)(X).block_until_ready()
    jax.effects_barrier()
    return count[0]


def test_debug_callbacks_run_twice_under_grad_once_with_everything_saveable_when_computed_inside():
    assert callback_count() == 2
    assert callback_count(jit=True) == 2
    assert callback_count(cp.dots_saveable) == 2
    assert callback_count(cp.everything_saveable) == 1
    assert callback_count(cp.everything_saveable, given=lambda x: x) == 2  # an argument as it is: still twice


def test_debug_print_runs_twice_under_grad(capfd):
    def body(x):
        jax.debug.print("rem203 {v}", v=x[0, 0])
        return jnp.sum(jnp.sin(x))

    jax.grad(jax.checkpoint(body))(X)
    jax.effects_barrier()
    assert capfd.readouterr().out.count("rem203") == 2


def _stated(error: str) -> str:
    """The text REM203's message says ``error`` has (``ValueError: ...``), backticks aside."""
    from rules.rem203_debug_callback_in_checkpoint import IO_FAILS

    (text,) = re.findall(rf"`{error}: ([^`]+)`", IO_FAILS)
    return text


def _raises_as_stated(error: type[Exception], call) -> None:
    with pytest.raises(error) as raised:
        call()
    assert _stated(error.__name__) in str(raised.value).replace("`", "")


@pytest.mark.parametrize(
    "policy", [None, jax.checkpoint_policies.dots_saveable, jax.checkpoint_policies.everything_saveable]
)
def test_io_callback_in_a_checkpoint_fails_under_grad_only(policy):
    def body(x, step):
        io_callback(lambda s: None, None, step)
        return jnp.sum(jnp.sin(x))

    checkpointed = jax.checkpoint(body, policy=policy)
    checkpointed(X, 1)
    jax.jit(checkpointed)(X, 1)
    _raises_as_stated(NotImplementedError, lambda: jax.grad(checkpointed)(X, 1))
    _raises_as_stated(NotImplementedError, lambda: jax.jit(jax.grad(checkpointed))(X, 1))


def test_io_callback_of_a_differentiated_value_fails_with_or_without_a_checkpoint():
    def body(x):
        y = io_callback(lambda v: np.asarray(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return jnp.sum(jnp.sin(x) * y)

    for fun in (body, jax.checkpoint(body), jax.jit(jax.checkpoint(body))):
        _raises_as_stated(ValueError, lambda fun=fun: jax.grad(fun)(X))
    _raises_as_stated(ValueError, lambda: jax.jvp(jax.checkpoint(body), (X,), (X,)))  # the doc says jvp too


def test_rem203_fixture_linen_block_prints_twice(capfd):
    f = load_fixture("rem203_debug_callback_in_checkpoint")
    model = f.RematBlock()
    variables = model.init(KEY, X)
    capfd.readouterr()
    jax.grad(lambda v: jnp.sum(model.apply(v, X)))(variables)
    jax.effects_barrier()
    assert capfd.readouterr().out.count("block output") == 2


# --- REM302: jax.remat forwards to jax.checkpoint ---------------------------------------------------


def test_jax_remat_is_a_separate_wrapper_without_static_argnames():
    assert jax.remat is not jax.checkpoint
    with pytest.raises(TypeError, match="static_argnames"):
        jax.remat(flagged, static_argnames=("training",))


@pytest.mark.parametrize(
    "keywords",
    [{}, {"prevent_cse": False}, {"policy": cp.dots_saveable}, {"static_argnums": (1,)}],
    ids=["plain", "prevent_cse", "policy", "static_argnums"],
)
def test_rem302_fix_is_behaviour_preserving(keywords):
    def loss(transform):
        wrapped = transform(lambda x, n: jnp.sum(jnp.sin(x @ x.T)) * n, **keywords)
        return str(jax.make_jaxpr(jax.grad(lambda x: wrapped(x, 2)))(X))

    assert loss(jax.remat) == loss(jax.checkpoint)
    fixed = fix_all("import jax\ng = jax.remat(f, prevent_cse=False)\n", {"REM302"})
    assert fixed == "import jax\ng = jax.checkpoint(f, prevent_cse=False)\n"


def test_quiet_fixture_is_correct_code(capsys):
    runpy.run_path(str(FIXTURES / "quiet/bodies_and_static_args.py"), run_name="__main__")
    assert capsys.readouterr().out.strip().endswith("ok")
