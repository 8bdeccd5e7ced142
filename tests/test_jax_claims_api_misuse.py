"""What REM002, REM003, REM005, REM006 and REM007 tell users about JAX, checked against the
installed JAX, Flax, Haiku and Equinox: each claim a message makes, run for real (tiny shapes)."""

from __future__ import annotations

import functools
import re

import pytest

from remat_lint import apis
from tests.helpers import fix_all, lint

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
cp = jax.checkpoint_policies
X = jnp.ones((3, 3))


def f(x):
    return jnp.sum(jnp.sin(x @ x))


def messages(code: str, rule: str) -> list[str]:
    return [finding.message for finding in lint(code, {rule})]


def quoted_error(message: str) -> tuple[str, str]:
    """The ``Error: text`` a message quotes in backticks, as (class name, text)."""
    match = re.search(r"`(\w+(?:\.\w+)*Error): (.+?)`", message)
    assert match, message
    return match.group(1).rpartition(".")[2], match.group(2)


def apis_under_test() -> dict[str, object]:
    """Every canonical remat API that is installed, by qualified name."""
    found: dict[str, object] = {"jax.checkpoint": jax.checkpoint, "jax.remat": jax.remat}
    try:
        import flax.linen as nn
        import flax.linen.partitioning as nn_partitioning
        from flax import nnx

        found.update({"flax.linen.remat": nn.remat, "flax.linen.partitioning.remat": nn_partitioning.remat, "flax.nnx.remat": nnx.remat})
    except ImportError:
        pass
    try:
        import haiku as hk

        found["haiku.remat"] = hk.remat
    except ImportError:
        pass
    try:
        import equinox as eqx

        found["equinox.filter_checkpoint"] = eqx.filter_checkpoint
    except ImportError:
        pass
    return found


def test_function_names_are_what_python_reports():
    for qname, api in apis_under_test().items():
        assert api.__name__ == apis.FUNCTION_NAMES[qname]


# --- REM002 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["checkpoint_policy", "save_policy", "policies", "remat_policy"])
def test_policy_synonym_raises_type_error_at_wrap_and_fix_works(keyword):
    code = f"import jax\ng = jax.checkpoint(f, {keyword}=jax.checkpoint_policies.dots_saveable)"
    (message,) = messages(code, "REM002")
    kind, text = quoted_error(message)
    with pytest.raises(TypeError) as info:
        jax.checkpoint(f, **{keyword: cp.dots_saveable})
    assert kind == "TypeError" and str(info.value) == text
    fixed = fix_all(code, {"REM002"})
    scope = {"f": f}
    exec(fixed, scope)
    jax.grad(scope["g"])(X)


def _wrap_in_haiku(kwargs: dict, *args: object) -> None:
    hk = pytest.importorskip("haiku")

    def forward(x):
        return hk.remat(lambda y: hk.Linear(3)(y), *args, **kwargs)(x)

    hk.transform(forward).init(jax.random.key(0), X)


@pytest.mark.parametrize(
    ("code", "wrap"),
    [
        ("import jax\ng = jax.remat(f, static_argnames='n')", lambda: jax.remat(f, static_argnames="n")),
        ("import haiku as hk\ng = hk.remat(f, static_argnames='n')", lambda: _wrap_in_haiku({"static_argnames": "n"})),
        ("from flax import nnx\ng = nnx.remat(f, concrete=False)", lambda: pytest.importorskip("flax.nnx").remat(f, concrete=False)),
        ("from flax import nnx\ng = nnx.remat(f, static_argnames='n')", lambda: pytest.importorskip("flax.nnx").remat(f, static_argnames="n")),
        (
            "import flax.linen as nn\ng = nn.remat(Block, static_argnames='n')",
            lambda: pytest.importorskip("flax.linen").remat(pytest.importorskip("flax.linen").Dense, static_argnames="n"),
        ),
        (
            "import flax.linen.partitioning as nnp\ng = nnp.remat(Block, static_argnames='n')",
            lambda: pytest.importorskip("flax.linen.partitioning").remat(pytest.importorskip("flax.linen").Dense, static_argnames="n"),
        ),
        ("import equinox as eqx\ng = eqx.filter_checkpoint(f, concrete=True)", lambda: pytest.importorskip("equinox").filter_checkpoint(f, concrete=True)),
        ("import jax\ng = jax.checkpoint(f, jax.checkpoint_policies.dots_saveable)", lambda: jax.checkpoint(f, cp.dots_saveable)),
        ("import haiku as hk\ng = hk.remat(f, p)", lambda: _wrap_in_haiku({}, cp.dots_saveable)),
        ("from flax import nnx\ng = nnx.remat(f, True)", lambda: pytest.importorskip("flax.nnx").remat(f, True)),
        ("import equinox as eqx\ng = eqx.filter_checkpoint(f, p)", lambda: pytest.importorskip("equinox").filter_checkpoint(f, cp.dots_saveable)),
        (
            "import flax.linen as nn\nB = nn.remat(Block, True, True, False, True, (), None, None, 1)",
            lambda: pytest.importorskip("flax.linen").remat(pytest.importorskip("flax.linen").Dense, True, True, False, True, (), None, None, 1),
        ),
    ],
)
def test_unknown_keyword_or_positional_raises_what_the_message_says(code, wrap):
    (message,) = messages(code, "REM002")
    kind, text = quoted_error(message)
    with pytest.raises(TypeError) as info:
        wrap()
    assert kind == "TypeError" and str(info.value) == text


def test_flax_policy_in_a_positional_slot_fails_at_init():
    nn = pytest.importorskip("flax.linen")
    errors = pytest.importorskip("flax.errors")
    code = "import flax.linen as nn\nfrom jax import checkpoint_policies as cp\nB = nn.remat(Block, cp.dots_saveable)"
    (message,) = messages(code, "REM002")
    assert "InvalidFilterError" in message
    model = nn.remat(nn.Dense, cp.dots_saveable)(3)  # accepted when wrapping
    with pytest.raises(errors.InvalidFilterError):
        model.init(jax.random.key(0), X)
    scope: dict = {"Block": nn.Dense}
    exec(fix_all(code, {"REM002"}), scope)
    model = scope["B"](3)
    jax.grad(lambda v: jnp.sum(model.apply(v, X)))(model.init(jax.random.key(0), X))


def test_flax_policy_in_other_slots_fails_as_the_message_says():
    nn = pytest.importorskip("flax.linen")
    from remat_lint.rules.rem002_unknown_keyword import FLAX_SLOT_EFFECTS

    slots = apis.REMAT_APIS["flax.linen.remat"].positional
    for slot, effect in FLAX_SLOT_EFFECTS.items():
        args = [True, True, False, True, (), None, None]
        args[slots.index(slot)] = cp.dots_saveable
        kind = re.search(r"`(?:flax\.errors\.)?(\w+)", effect.split("raises ", 1)[1]).group(1)
        with pytest.raises(Exception) as info:
            nn.remat(nn.Dense, *args)(3).init(jax.random.key(0), X)
        assert type(info.value).__name__ == kind, slot
        detail = re.search(r": (.+)`", effect)
        if detail:
            assert str(info.value).startswith(detail.group(1))
