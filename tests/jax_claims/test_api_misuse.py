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


def assert_quotes_the_error(code: str, rule: str, call, error: type[Exception] = TypeError) -> None:
    """The one finding on ``code`` quotes exactly the error that ``call()`` raises."""
    (message,) = messages(code, rule)
    kind, text = quoted_error(message)
    with pytest.raises(error) as info:
        call()
    assert kind == error.__name__ and str(info.value) == text


def apis_under_test() -> dict[str, object]:
    """Every canonical remat API that is installed, by qualified name."""
    found: dict[str, object] = {"jax.checkpoint": jax.checkpoint, "jax.remat": jax.remat}
    try:
        import flax.linen as nn
        import flax.linen.partitioning as nn_partitioning
        from flax import nnx

        found.update(
            {
                "flax.linen.remat": nn.remat,
                "flax.linen.partitioning.remat": nn_partitioning.remat,
                "flax.nnx.remat": nnx.remat,
            }
        )
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
        (
            "from flax import nnx\ng = nnx.remat(f, concrete=False)",
            lambda: pytest.importorskip("flax.nnx").remat(f, concrete=False),
        ),
        (
            "from flax import nnx\ng = nnx.remat(f, static_argnames='n')",
            lambda: pytest.importorskip("flax.nnx").remat(f, static_argnames="n"),
        ),
        (
            "import flax.linen as nn\ng = nn.remat(Block, static_argnames='n')",
            lambda: pytest.importorskip("flax.linen").remat(
                pytest.importorskip("flax.linen").Dense, static_argnames="n"
            ),
        ),
        (
            "import flax.linen.partitioning as nnp\ng = nnp.remat(Block, static_argnames='n')",
            lambda: pytest.importorskip("flax.linen.partitioning").remat(
                pytest.importorskip("flax.linen").Dense, static_argnames="n"
            ),
        ),
        (
            "import equinox as eqx\ng = eqx.filter_checkpoint(f, concrete=True)",
            lambda: pytest.importorskip("equinox").filter_checkpoint(f, concrete=True),
        ),
        (
            "import jax\ng = jax.checkpoint(f, jax.checkpoint_policies.dots_saveable)",
            lambda: jax.checkpoint(f, cp.dots_saveable),
        ),
        ("import haiku as hk\ng = hk.remat(f, p)", lambda: _wrap_in_haiku({}, cp.dots_saveable)),
        ("from flax import nnx\ng = nnx.remat(f, True)", lambda: pytest.importorskip("flax.nnx").remat(f, True)),
        (
            "import equinox as eqx\ng = eqx.filter_checkpoint(f, p)",
            lambda: pytest.importorskip("equinox").filter_checkpoint(f, cp.dots_saveable),
        ),
        (
            "import flax.linen as nn\nB = nn.remat(Block, True, True, False, True, (), None, None, 1)",
            lambda: pytest.importorskip("flax.linen").remat(
                pytest.importorskip("flax.linen").Dense, True, True, False, True, (), None, None, 1
            ),
        ),
    ],
)
def test_unknown_keyword_or_positional_raises_what_the_message_says(code, wrap):
    assert_quotes_the_error(code, "REM002", wrap)


@pytest.mark.parametrize(
    ("code", "args", "kwargs"),
    [
        ("import haiku as hk\ng = hk.remat(f, static_argnames='n')", (), {"static_argnames": "n"}),
        ("import haiku as hk\ng = hk.remat(f, p)", (cp.dots_saveable,), {}),
        ("import haiku as hk\ng = hk.remat(f, concrete=False)", (), {"concrete": False}),
        ("import haiku as hk\ng = hk.remat(f, concrete=True)", (), {"concrete": True}),
    ],
)
def test_haiku_checks_arguments_only_when_the_checkpointed_function_is_called(code, args, kwargs):
    hk = pytest.importorskip("haiku")
    rule = "REM005" if "concrete" in kwargs else "REM002"
    (message,) = messages(code, rule)
    assert "when the checkpointed function is called (at `init`/`apply`)" in message
    wrapped = []

    def forward(x):
        g = hk.remat(lambda y: hk.Linear(3)(y), *args, **kwargs)
        wrapped.append(g)  # hk.remat itself accepts anything
        return g(x)

    with pytest.raises(NotImplementedError if rule == "REM005" else TypeError):
        hk.transform(forward).init(jax.random.key(0), X)
    assert wrapped


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


# --- REM003 ---------------------------------------------------------------------------------------

CP = "from jax import checkpoint_policies as cp\n"


def run_fixed(code: str, rule: str) -> dict:
    scope: dict = {}
    exec(fix_all(code, {rule}), scope)
    return scope


@pytest.mark.parametrize(
    "name",
    ["dots_saveable", "checkpoint_dots", "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims"],
)
def test_calling_a_dots_policy_raises_what_the_message_says(name):
    (message,) = messages(f"{CP}p = cp.{name}()", "REM003")
    kind, text = quoted_error(message)
    with pytest.raises(TypeError) as info:
        getattr(cp, name)()
    assert kind == "TypeError" and str(info.value) == text
    jax.grad(jax.checkpoint(f, policy=run_fixed(f"{CP}p = cp.{name}()", "REM003")["p"]))(X)


def test_calling_everything_or_nothing_saveable():
    (everything,) = messages(f"{CP}p = cp.everything_saveable()", "REM003")
    assert cp.everything_saveable() is True and "`True`" in everything
    _, text = quoted_error(everything)
    with pytest.raises(TypeError, match=re.escape(text)):
        jax.grad(jax.checkpoint(f, policy=cp.everything_saveable()))(X)
    (nothing,) = messages(f"{CP}p = cp.nothing_saveable()", "REM003")
    assert cp.nothing_saveable() is False and "`False`" in nothing
    jax.grad(jax.checkpoint(f, policy=cp.nothing_saveable()))(X)  # falsy: silently the default


@pytest.mark.parametrize(
    "name",
    [
        "save_only_these_names",
        "save_any_names_but_these",
        "save_anything_except_these_names",
        "save_from_both_policies",
        "offload_dot_with_no_batch_dims",
        "save_and_offload_only_these_names",
    ],
)
def test_uncalled_factory_is_accepted_and_fails_at_first_grad(name):
    (message,) = messages(f"import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.{name})", "REM003")
    _, text = quoted_error(message)
    g = jax.checkpoint(f, policy=getattr(cp, name))
    g(X)  # plain call and jvp pass
    jax.jvp(g, (X,), (X,))
    with pytest.raises(TypeError) as info:
        jax.grad(g)(X)
    assert str(info.value).startswith(text.removesuffix(" ..."))


def test_call_hints_match_the_factory_signatures():
    import inspect

    from remat_lint.rules.rem003_policy_misuse import CALL_HINTS

    for name, hint in CALL_HINTS.items():
        assert ", ".join(inspect.signature(getattr(cp, name)).parameters) == hint


def _named(x):
    from jax.ad_checkpoint import checkpoint_name

    return jnp.sum(jnp.sin(checkpoint_name(jnp.sin(x), "a")) * checkpoint_name(jnp.cos(x), "b"))


def saved(policy) -> list[str]:
    from jax._src.ad_checkpoint import saved_residuals

    return sorted(s.split(" from ")[0] for _, s in saved_residuals(jax.checkpoint(_named, policy=policy), jnp.ones(3)))


def test_list_of_names_raises_and_the_fix_saves_them():
    code = f"{CP}p = cp.save_only_these_names(['a', 'b'])"
    (message,) = messages(code, "REM003")
    _, text = quoted_error(message)
    for factory in (cp.save_only_these_names, cp.save_any_names_but_these):
        with pytest.raises(TypeError) as info:
            factory(["a", "b"])
        assert str(info.value) == text
    assert saved(run_fixed(code, "REM003")["p"]) == ["from the argument x", "named 'a'", "named 'b'"]


def test_tuple_of_names_silently_saves_nothing_or_excludes_nothing():
    only, but = (f"{CP}p = cp.save_only_these_names(('a', 'b'))", f"{CP}p = cp.save_any_names_but_these(('a',))")
    assert "saves nothing named" in messages(only, "REM003")[0]
    assert saved(cp.save_only_these_names(("a", "b"))) == saved(None) == ["from the argument x"]
    assert saved(run_fixed(only, "REM003")["p"]) == ["from the argument x", "named 'a'", "named 'b'"]
    assert "every named value is saved" in messages(but, "REM003")[0]
    assert saved(cp.save_any_names_but_these(("a",))) == ["from the argument x", "named 'a'", "named 'b'"]
    assert saved(run_fixed(but, "REM003")["p"]) == ["from the argument x", "named 'b'"]


@pytest.mark.parametrize(
    ("code", "call"),
    [
        ("p = cp.save_from_both_policies(cp.dots_saveable)", lambda: cp.save_from_both_policies(cp.dots_saveable)),
        (
            "p = cp.save_from_both_policies(cp.dots_saveable, cp.nothing_saveable, cp.nothing_saveable)",
            lambda: cp.save_from_both_policies(cp.dots_saveable, cp.nothing_saveable, cp.nothing_saveable),
        ),
        ("p = cp.offload_dot_with_no_batch_dims()", lambda: cp.offload_dot_with_no_batch_dims()),
        ("p = cp.save_and_offload_only_these_names('a')", lambda: cp.save_and_offload_only_these_names("a")),
        (
            "p = cp.save_and_offload_only_these_names(names_which_can_be_saved=['a'])",
            lambda: cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"]),
        ),
        ("p = cp.save_only_these_names(names=('a',))", lambda: cp.save_only_these_names(names=("a",))),
        (
            "p = cp.offload_dot_with_no_batch_dims(src='device', dst='pinned_host')",
            lambda: cp.offload_dot_with_no_batch_dims(src="device", dst="pinned_host"),
        ),
    ],
)
def test_wrong_factory_arity_raises_what_the_message_says(code, call):
    (message,) = messages(CP + code, "REM003")
    _, text = quoted_error(message)
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value).startswith(text)


@pytest.mark.parametrize("first", [True, False])
def test_offloading_policy_inside_save_from_both_policies_fails_at_first_grad(first):
    offload = cp.offload_dot_with_no_batch_dims("device", "pinned_host")
    pair = (offload, cp.dots_saveable) if first else (cp.dots_saveable, offload)
    offload = "cp.offload_dot_with_no_batch_dims('device', 'pinned_host')"
    (message,) = messages(f"{CP}p = cp.save_from_both_policies(cp.dots_saveable, {offload})", "REM003")
    _, text = quoted_error(message)
    g = jax.checkpoint(f, policy=cp.save_from_both_policies(*pair))
    with pytest.raises(ValueError, match=re.escape(text)):
        jax.grad(g)(X)


def test_unknown_policy_attribute_and_getattr():
    for code in (
        "import jax\np = jax.checkpoint_policies.dots_savable",
        "import jax\np = getattr(jax.checkpoint_policies, 'dots_savable')",
    ):
        (message,) = messages(code, "REM003")
        _, text = quoted_error(message)
        with pytest.raises(AttributeError) as info:
            cp.dots_savable  # noqa: B018 (the attribute access is the test)
        assert str(info.value) == text
        assert run_fixed(code, "REM003")["p"] is cp.dots_saveable


# --- REM005 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_concrete_raises_not_implemented_at_wrap_for_jax(value):
    for code, wrap in [
        (f"import jax\ng = jax.checkpoint(f, concrete={value})", lambda: jax.checkpoint(f, concrete=value)),
        (f"import jax\ng = jax.remat(f, concrete={value})", lambda: jax.remat(f, concrete=value)),
    ]:
        (message,) = messages(code, "REM005")
        assert "`NotImplementedError` when it wraps the function" in message and "0.10.0" in message
        with pytest.raises(NotImplementedError, match="removed in JAX v0.10.0"):
            wrap()
    if not value:  # the fix deletes it, and the result works
        code = "import jax\nimport jax.numpy as jnp\ng = jax.checkpoint(lambda x: jnp.sum(jnp.sin(x)), concrete=False)"
        jax.grad(run_fixed(code, "REM005")["g"])(jnp.ones(3))


def test_flax_concrete_true_fails_at_init_only():
    nn = pytest.importorskip("flax.linen")
    (message,) = messages("import flax.linen as nn\nB = nn.remat(Block, concrete=True)", "REM005")
    _, text = quoted_error(message)
    for model in (nn.remat(nn.Dense, concrete=True)(3), nn.remat(nn.Dense, True, True, True)(3)):
        with pytest.raises(NotImplementedError) as info:
            model.init(jax.random.key(0), X)
        assert str(info.value).startswith(text)
    nn.remat(nn.Dense, concrete=False)(3).init(jax.random.key(0), X)
    assert messages("import flax.linen as nn\nB = nn.remat(Block, concrete=False)", "REM005") == []


def test_removed_ad_checkpoint_names():
    import jax.ad_checkpoint

    for name in ("checkpoint", "remat"):
        (message,) = messages(f"import jax.ad_checkpoint\ng = jax.ad_checkpoint.{name}(f)", "REM005")
        assert "AttributeError" in message
        with pytest.raises(AttributeError, match="removed in JAX v0.10.0"):
            getattr(jax.ad_checkpoint, name)
        (message,) = messages(f"from jax.ad_checkpoint import {name}", "REM005")
        _, text = quoted_error(message)
        with pytest.raises(ImportError) as info:
            exec(f"from jax.ad_checkpoint import {name}", {})
        assert str(info.value).startswith(text)
        exec(fix_all(f"from jax.ad_checkpoint import {name}", {"REM005"}), {})


@pytest.mark.parametrize(
    "code",
    [
        "import jax.checkpoint_policies",
        "import jax.checkpoint_policies as cp",
        "from jax.checkpoint_policies import dots_saveable",
        "import jax.ad_checkpoint.checkpoint_policies as cp",
    ],
)
def test_checkpoint_policies_is_not_a_module(code):
    (message,) = messages(code, "REM005")
    _, text = quoted_error(message)
    with pytest.raises(ModuleNotFoundError) as info:
        exec(code, {})
    assert str(info.value).startswith(text)
    if not code.startswith("from"):
        scope = run_fixed(code, "REM005")
        assert (scope.get("cp") or scope["jax"].checkpoint_policies) is cp


def test_jax_new_checkpoint_option_is_gone_and_its_variable_ignored():
    import subprocess
    import sys

    (message,) = messages("import jax\njax.config.update('jax_new_checkpoint', False)", "REM005")
    text = re.search(r"says `(.+?)`", message).group(1)
    with pytest.raises(AttributeError, match=re.escape(text)):
        jax.config.update("jax_new_checkpoint", False)
    with pytest.raises(AttributeError):
        jax.config.jax_new_checkpoint  # noqa: B018
    (message,) = messages("import os\nos.environ['JAX_NEW_CHECKPOINT'] = '0'", "REM005")
    assert "silently ignored" in message
    probe = "import warnings, jax; warnings.simplefilter('error'); print('jax_new_checkpoint' in jax.config.values)"
    # REM005 is right here: setting the removed variable is what this test measures JAX ignoring.
    env = {**__import__("os").environ, "JAX_NEW_CHECKPOINT": "0", "JAX_PLATFORMS": "cpu"}  # noqa: REM005
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False" and "NEW_CHECKPOINT" not in out.stderr


# --- REM006 ---------------------------------------------------------------------------------------


def _in_haiku(build) -> None:
    hk = pytest.importorskip("haiku")
    hk.transform(lambda x: build(hk)).init(jax.random.key(0), X)


@pytest.mark.parametrize(
    ("code", "call"),
    [
        (
            "import jax\n@jax.checkpoint(policy=p)\ndef g(x):\n    return x",
            lambda: jax.checkpoint(policy=cp.dots_saveable),
        ),
        ("import jax\ng = jax.remat(prevent_cse=False)(f)", lambda: jax.remat(prevent_cse=False)),
        ("import jax\n@jax.checkpoint()\ndef g(x):\n    return x", lambda: jax.checkpoint()),
        (
            "import haiku as hk\n@hk.remat(policy=p)\ndef g(x):\n    return x",
            lambda: _in_haiku(lambda hk: hk.remat(policy=cp.dots_saveable)),
        ),
        (
            "import flax.linen as nn\n@nn.remat(static_argnums=(2,))\ndef g(m, x, t):\n    return x",
            lambda: pytest.importorskip("flax.linen").remat(static_argnums=(2,)),
        ),
        (
            "import flax.linen as nn\n@nn.checkpoint(policy=p)\nclass B(nn.Module):\n    pass",
            lambda: pytest.importorskip("flax.linen").checkpoint(policy=cp.dots_saveable),
        ),
        (
            "import flax.linen.partitioning as nnp\nr = nnp.remat(static_argnums=(1,))",
            lambda: pytest.importorskip("flax.linen.partitioning").remat(static_argnums=(1,)),
        ),
        (
            "import functools\nimport jax\nr = functools.partial(jax.checkpoint, prevent_cse=False)\ng = r(policy=p)",
            lambda: functools.partial(jax.checkpoint, prevent_cse=False)(policy=cp.dots_saveable),
        ),
    ],
)
def test_keywords_only_raises_what_the_message_says(code, call):
    assert_quotes_the_error(code, "REM006", call)


def test_nnx_and_equinox_return_a_decorator_and_are_not_flagged():
    nnx = pytest.importorskip("flax.nnx")
    eqx = pytest.importorskip("equinox")
    for code, decorator in [
        ("from flax import nnx\n@nnx.remat(policy=p)\ndef g(x):\n    return x", nnx.remat(policy=cp.dots_saveable)),
        (
            "import equinox as eqx\n@eqx.filter_checkpoint(policy=p)\ndef g(x):\n    return x",
            eqx.filter_checkpoint(policy=cp.dots_saveable),
        ),
    ]:
        assert messages(code, "REM006") == []
        assert jnp.allclose(jax.grad(decorator(f))(X), jax.grad(f)(X))
    for qname, api in apis.REMAT_APIS.items():  # what remat_lint/apis/ says, as the rule relies on it
        if api.decorator_factory:
            assert qname.startswith(("flax.nnx", "flax.experimental.nnx", "equinox"))


@pytest.mark.parametrize(
    "code",
    [
        "import jax\n@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)\ndef g(x):\n    return f(x)",
        "from functools import partial\nimport jax\n@jax.remat(prevent_cse=False)\ndef g(x):\n    return f(x)",
        "import jax\ng = jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)(f)",
        "import jax\n@jax.checkpoint()\ndef g(x):\n    return f(x)",
    ],
)
def test_fixed_decorator_checkpoints_and_differentiates(code):
    fixed = fix_all(code, {"REM006"})
    assert messages(fixed, "REM006") == []
    scope: dict = {"f": f}
    exec(fixed, scope)
    assert jnp.allclose(jax.grad(scope["g"])(X), jax.grad(f)(X))
    assert "remat2" in str(jax.make_jaxpr(scope["g"])(X))  # really checkpointed


def test_fixed_flax_method_and_haiku_decorators_work():
    pytest.importorskip("flax.linen")
    hk = pytest.importorskip("haiku")
    flax_code = (
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.remat(static_argnums=(2,))\n    @nn.compact\n"
        "    def __call__(self, x, deterministic):\n        y = nn.Dense(3)(x)\n        return y if deterministic else y * 0.5"
    )
    scope: dict = {}
    fixed = fix_all(flax_code, {"REM006"})
    assert "@functools.partial(nn.remat, static_argnums=(2,))" in fixed
    exec(fixed, scope)
    model = scope["Block"]()
    variables = model.init(jax.random.key(0), X, True)
    grads = jax.grad(lambda v: jnp.sum(model.apply(v, X, False)))(variables)  # the Python bool stays static
    assert jax.tree.structure(grads) == jax.tree.structure(variables)
    haiku_code = (
        "import haiku as hk\nfrom jax import checkpoint_policies as cp\ndef forward(x):\n    @hk.remat(policy=cp.dots_saveable)\n"
        "    def layer(y):\n        return hk.Linear(3)(y)\n    return layer(x)"
    )
    scope = {}
    fixed = fix_all(haiku_code, {"REM006"})
    assert "@functools.partial(hk.remat, policy=cp.dots_saveable)" in fixed
    exec(fixed, scope)
    transformed = hk.transform(scope["forward"])
    params = transformed.init(jax.random.key(0), X)
    grads = jax.grad(lambda p: jnp.sum(transformed.apply(p, None, X)))(params)
    assert jax.tree.structure(grads) == jax.tree.structure(params)


# --- REM007 ---------------------------------------------------------------------------------------


def test_discarded_checkpoint_leaves_the_function_unchanged():
    from jax._src.ad_checkpoint import saved_residuals

    code = "import jax\nimport jax.numpy as jnp\ndef block(x):\n    return jnp.sum(jnp.sin(jnp.sin(x)))\njax.checkpoint(block)"
    (message,) = messages(code, "REM007")
    assert "leaves `block` unchanged, so nothing is checkpointed" in message
    scope: dict = {}
    exec(code, scope)
    block = scope["block"]
    saved = [s for _, s in saved_residuals(block, X)]
    assert any(s.startswith("output of cos") for s in saved)  # intermediates saved: no checkpoint
    assert [s for _, s in saved_residuals(jax.checkpoint(block), X)] == ["from the argument x"]
    assert "remat2" not in str(jax.make_jaxpr(block)(X))


def test_discarded_flax_remat_leaves_the_module_unchanged():
    nn = pytest.importorskip("flax.linen")
    (message,) = messages("import flax.linen as nn\nnn.remat(Block)", "REM007")
    assert "leaves `Block` unchanged" in message
    dense = nn.Dense
    nn.remat(dense)  # the reported statement
    model = dense(3)
    variables = model.init(jax.random.key(0), X)
    assert "remat2" not in str(jax.make_jaxpr(model.apply)(variables, X))
    rematted = nn.remat(nn.Dense)(3)
    assert "remat2" in str(jax.make_jaxpr(rematted.apply)(variables, X))


def test_discarded_checkpoint_is_quiet_in_test_files():
    from remat_lint.engine.lint import lint_source

    code = "import jax\njax.checkpoint(f)"  # a test checking that wrapping succeeds
    assert lint_source("tests/test_remat.py", code, frozenset({"REM007"}), is_test_file=True).findings == []
    assert messages(code, "REM007")


def test_calling_the_result_at_once_runs_the_checkpoint_and_is_quiet():
    assert messages("import jax\njax.checkpoint(f)(x)", "REM007") == []
    assert "remat2" in str(jax.make_jaxpr(lambda x: jax.checkpoint(f)(x))(X))


def test_quiet_fixture_runs(capsys):
    import runpy
    from pathlib import Path

    pytest.importorskip("haiku")
    pytest.importorskip("equinox")
    runpy.run_path(
        str(Path(__file__).parents[2] / "fixtures/quiet/remat_factories_and_results.py"), run_name="__main__"
    )
    assert capsys.readouterr().out.strip().endswith("ok")
