"""The value layer (remat_lint/analysis/values.py), seen where users meet it: REM001 on a policy
that every path makes a string, and silence as soon as one path may give a policy, None or
something unknown. A few cases read the layer directly: what the project model builds on."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.values import Value, Values
from tests.helpers import codes, lint

PRELUDE = """
import argparse, dataclasses, os
import jax
from absl import flags
from jax import checkpoint_policies as cp
"""

STRING_POLICIES = {
    "dict-subscript": "P = {'a': 'dots_saveable'}\ng = jax.checkpoint(f, policy=P['a'])",
    "dict-subscript-unknown-key": "P = {'a': 'dots_saveable', 'b': 'nothing_saveable'}\ng = jax.checkpoint(f, policy=P[k])",
    "dict-get-with-default": "P = {'a': cp.dots_saveable}\ng = jax.checkpoint(f, policy=P.get('b', 'nothing_saveable'))",
    "dict-literal-get": "g = jax.checkpoint(f, policy={'a': 'dots_saveable'}.get(k, 'nothing_saveable'))",
    "helper": "def pick(n):\n    return {'a': 'dots_saveable'}.get(n, 'nothing_saveable')\ng = jax.checkpoint(f, policy=pick(k))",
    "helper-of-helper": "def a():\n    return 'dots_saveable'\ndef b():\n    return a()\ng = jax.checkpoint(f, policy=b())",
    "environ-get-default": "g = jax.checkpoint(f, policy=os.environ.get('P', 'dots_saveable'))",
    "getenv-default": "g = jax.checkpoint(f, policy=os.getenv('P', 'dots_saveable'))",
    "environ-subscript": "g = jax.checkpoint(f, policy=os.environ['P'])",
    "dataclass-default": "@dataclasses.dataclass\nclass C:\n    p: str = 'dots_saveable'\nc = C()\ng = jax.checkpoint(f, policy=c.p)",
    "dataclass-keyword": "@dataclasses.dataclass\nclass C:\n    p: object = None\nc = C(p='dots_saveable')\ng = jax.checkpoint(f, policy=c.p)",
    "annotated-parameter": "@dataclasses.dataclass\nclass C:\n    p: str = 'dots_saveable'\ndef build(c: C):\n"
    "    return jax.checkpoint(f, policy=c.p)",
    "absl-flags": "flags.DEFINE_string('p', 'dots_saveable', 'h')\nFLAGS = flags.FLAGS\ng = jax.checkpoint(f, policy=FLAGS.p)",
    "absl-holder": "P = flags.DEFINE_enum('p', 'dots_saveable', ['dots_saveable'], 'h')\ng = jax.checkpoint(f, policy=P.value)",
    "argparse": (
        "def main():\n    ap = argparse.ArgumentParser()\n    ap.add_argument('--policy', default='dots_saveable')\n"
        "    a = ap.parse_args()\n    return jax.checkpoint(f, policy=a.policy)"
    ),
}


@pytest.mark.parametrize("code", STRING_POLICIES.values(), ids=STRING_POLICIES.keys())
def test_a_policy_that_is_always_a_string_is_reported(code):
    assert codes(PRELUDE + code, select={"REM001"}) == ["REM001"]


NOT_ALWAYS_STRINGS = {
    "dict-with-a-policy-and-unknown-key": "P = {'a': 'dots_saveable', 'b': cp.dots_saveable}\ng = jax.checkpoint(f, policy=P[k])",
    "dict-get-without-default": "P = {'a': 'dots_saveable'}\ng = jax.checkpoint(f, policy=P.get(k))",
    "dict-mutated": "P = {'a': 'x'}\nP['a'] = cp.dots_saveable\ng = jax.checkpoint(f, policy=P['a'])",
    "dict-updated": "P = {'a': 'x'}\nP.update(a=cp.dots_saveable)\ng = jax.checkpoint(f, policy=P['a'])",
    "dict-with-spread": "P = {'a': 'x', **OTHER}\ng = jax.checkpoint(f, policy=P['a'])",
    "helper-returning-getattr": "def pick(n):\n    return getattr(cp, n)\ng = jax.checkpoint(f, policy=pick('dots_saveable'))",
    "helper-falling-through": "def pick(n):\n    if n:\n        return 'dots_saveable'\ng = jax.checkpoint(f, policy=pick(k))",
    "helper-returning-a-parameter": "def pick(n):\n    return n\ng = jax.checkpoint(f, policy=pick('dots_saveable'))",
    "decorated-helper": "from tools import wrap\n@wrap\ndef pick():\n    return 'x'\ng = jax.checkpoint(f, policy=pick())",
    "getenv-without-default": "g = jax.checkpoint(f, policy=os.getenv('P'))",
    "dataclass-post-init": (
        "@dataclasses.dataclass\nclass C:\n    p: str = 'dots_saveable'\n    def __post_init__(self):\n"
        "        self.p = getattr(cp, self.p)\nc = C()\ng = jax.checkpoint(f, policy=c.p)"
    ),
    "field-written-later": "@dataclasses.dataclass\nclass C:\n    p: str = 'x'\nc = C()\nc.p = cp.dots_saveable\ng = jax.checkpoint(f, policy=c.p)",
    "positional-construction": "@dataclasses.dataclass\nclass C:\n    p: object = 'x'\nc = C(cp.dots_saveable)\ng = jax.checkpoint(f, policy=c.p)",
    "unknown-base-class": "from mylib import Base\nclass C(Base):\n    p: str = 'x'\ng = jax.checkpoint(f, policy=C().p)",
    "annotated-callable-field": "@dataclasses.dataclass\nclass C:\n    p: object = 'x'\ndef build(c: C):\n    return jax.checkpoint(f, policy=c.p)",
    "flag-default-none": "flags.DEFINE_string('p', None, 'h')\nFLAGS = flags.FLAGS\ng = jax.checkpoint(f, policy=FLAGS.p)",
    "argparse-without-default": (
        "ap = argparse.ArgumentParser()\nap.add_argument('--policy')\na = ap.parse_args()\ng = jax.checkpoint(f, policy=a.policy)"
    ),
    "argparse-with-type": (
        "ap = argparse.ArgumentParser()\nap.add_argument('--policy', type=lookup, default='x')\na = ap.parse_args()\n"
        "g = jax.checkpoint(f, policy=a.policy)"
    ),
    "name-rebound-to-a-policy-on-one-path": "P = 'dots_saveable'\nif fast:\n    P = cp.dots_saveable\ng = jax.checkpoint(f, policy=P)",
}


@pytest.mark.parametrize("code", NOT_ALWAYS_STRINGS.values(), ids=NOT_ALWAYS_STRINGS.keys())
def test_a_policy_that_may_be_a_policy_or_unknown_is_not_reported(code):
    assert codes(PRELUDE + code, select={"REM001"}) == []


def _values(code: str, imported=None) -> tuple[Value, ...] | None:
    model = SemanticModel(cst.parse_module(textwrap.dedent(code)))
    last = model.module.body[-1].body[0].value  # type: ignore[attr-defined]
    return Values(model, imported).possible(last)


def test_possible_values_are_plain_data_with_their_source():
    found = _values("import os\nx = os.environ.get('P', 'dots')")
    assert found is not None
    assert {(v.kind, v.literal, v.via) for v in found} == {
        ("str", None, "os.environ.get"),
        ("str", "dots", "os.environ.get"),
    }


def test_imported_names_are_asked_of_the_callback():
    asked: list[tuple[str, bool]] = []

    def imported(qname: str, instance: bool) -> tuple[Value, ...] | None:
        asked.append((qname, instance))
        return (Value("str", "dots_saveable"),) if qname == "config.POLICY" else None

    assert _values("from config import POLICY\nx = POLICY", imported) == (Value("str", "dots_saveable"),)
    assert _values("from config import OTHER\nx = OTHER", imported) is None
    assert _values("from config import POLICY\nx = POLICY") is None  # no callback: unknown
    assert asked == [("config.POLICY", False), ("config.OTHER", False)]


def test_imported_modules_classes_and_config_objects_are_asked_as_written():
    asked: list[tuple[str, bool]] = []

    def imported(qname: str, instance: bool) -> tuple[Value, ...] | None:
        asked.append((qname, instance))
        return None

    _values("from . import constants\nx = constants.POLICY", imported)
    _values("from .config import Config\nx = Config.policy", imported)
    _values("from .config import Config\nx = Config(hidden=4).policy", imported)
    model = SemanticModel(cst.parse_module("from .config import Config\ndef f(cfg: Config):\n    return cfg.policy"))
    Values(model, imported).possible(model.attributes[-1])
    assert asked == [
        (".constants.POLICY", False),
        (".config.Config.policy", False),
        (".config.Config.policy", False),
        (".config.Config.policy", True),
    ]
    asked.clear()
    _values("from .config import Config\nx = Config(policy=p).policy", imported)  # set here: not the default
    _values("from .config import Config\ncfg = Config()\ncfg.policy = p\nx = cfg.policy", imported)
    assert asked == []


def test_policies_and_factories_by_qualified_name():
    assert _values("from jax import checkpoint_policies as cp\nx = cp.dots_saveable") == (
        Value("policy", qname="jax.checkpoint_policies.dots_saveable"),
    )
    (built,) = _values("import jax\nx = jax.checkpoint_policies.save_only_these_names('a')") or ()
    assert (built.kind, built.qname) == ("policy", "jax.checkpoint_policies.save_only_these_names")


def test_static_argnums_through_a_constant_is_checked():
    # nn.remat counts the Module as 0: index 1 selects `x`, and `train` stays traced.
    code = """
        import flax.linen as nn
        STATIC = (1,)
        class Block(nn.Module):
            @nn.compact
            def __call__(self, x, train: bool):
                return x * 2 if train else x
        RematBlock = nn.remat(Block, static_argnums=STATIC)
    """
    assert codes(code, select={"REM011"}) == ["REM011"]
    assert codes(code.replace("STATIC = (1,)", "STATIC = (2,)"), select={"REM011"}) == []


MORE_CONFIGS = {
    "module-config-field": (
        "import flax.linen as nn\n@dataclasses.dataclass\nclass C:\n    p: str = 'dots_saveable'\n"
        "class M(nn.Module):\n    config: C\n    def __call__(self, x):\n        return jax.checkpoint(f, policy=self.config.p)(x)"
    ),
    "config-dict": (
        "import ml_collections\ndef get_config():\n    c = ml_collections.ConfigDict()\n    c.p = 'dots_saveable'\n    return c\n"
        "g = jax.checkpoint(f, policy=get_config().p)"
    ),
}


@pytest.mark.parametrize("code", MORE_CONFIGS.values(), ids=MORE_CONFIGS.keys())
def test_configs_held_by_modules_and_config_dicts(code):
    assert codes(PRELUDE + code, select={"REM001"}) == ["REM001"]
    overridden = code + "\nCONFIG_OVERRIDE = object()\nCONFIG_OVERRIDE.p = cp.dots_saveable"
    assert codes(PRELUDE + overridden, select={"REM001"}) == []


# A string built by ``+`` from known strings is known (analysis/values.py): a checkpoint name
# spelled ``PREFIX + "_out"`` is the name a policy's typo is compared with.

SOURCE = """\
import jax
from jax.ad_checkpoint import checkpoint_name

PREFIX = "attn"

def layer(x):
    return checkpoint_name(x, PREFIX + "_out")

policy = jax.checkpoint_policies.save_only_these_names("attn_outt")
"""


def test_a_name_concatenated_from_constants_is_suggested_for_a_policys_typo():
    [finding] = lint(SOURCE)
    assert (finding.code, finding.start.row) == ("REM008", 9)
    assert finding.message.startswith(
        "`save_only_these_names` is given 'attn_outt', but no `checkpoint_name(x, 'attn_outt')` in the linted files "
        "declares it; did you mean 'attn_out'? "
    )


BRANCHING_HELPER = """
import functools
import jax
from jax import checkpoint_policies as cp

@functools.cache
def pick(save_names):
    return cp.save_only_these_names if save_names else cp.nothing_saveable

g = jax.checkpoint(f, policy=pick(CHOICE))
"""


@pytest.mark.parametrize(("choice", "found"), [("True", ["REM003"]), ("save_names=1", ["REM003"]), ("False", [])])
def test_a_returned_conditional_on_a_parameter_takes_the_branch_the_call_selects(choice: str, found: list[str]) -> None:
    """``pick(True)`` returns the uncalled factory (the first grad raises ``TypeError``, measured
    with jax 0.10.2); ``pick(False)`` returns a plain policy, which is right uncalled."""
    assert codes(BRANCHING_HELPER.replace("CHOICE", choice), select={"REM003"}) == found


def test_a_conditional_on_an_unknown_argument_may_be_either_branch() -> None:
    source = BRANCHING_HELPER.replace("CHOICE", "flag")
    module = cst.parse_module(source)
    model = SemanticModel(module)
    call = next(c for c in model.calls if isinstance(c.func, cst.Name) and c.func.value == "pick")
    assert {v.qname for v in Values(model).possible(call) or ()} == {
        "jax.checkpoint_policies.save_only_these_names",
        "jax.checkpoint_policies.nothing_saveable",
    }
