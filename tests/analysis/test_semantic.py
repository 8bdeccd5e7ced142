"""Name resolution as users meet it: which spellings of a remat API are found, and which are not.

Each case is a small module; ``sites`` lists every checkpoint site ``find_sites`` reports in it as
(api, form, checkpointed expression). A spelling that cannot be resolved with certainty must give
no site at all, so that no rule fires on it.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import find_sites
from remat_lint.analysis.values import Values
from tests.helpers import codes, lint


def model(code: str) -> SemanticModel:
    return SemanticModel(cst.parse_module(textwrap.dedent(code)))


def sites(code: str) -> list[tuple[str, str, str | None]]:
    m = model(code)
    return [
        (
            s.api.qname,
            s.form,
            None
            if s.target is None or isinstance(s.target, (cst.FunctionDef, cst.ClassDef))
            else m.module.code_for_node(s.target),
        )
        for s in find_sites(m, Values(m).entries)
    ]


def qname_of_call(code: str) -> str | None:
    """The qualified name of the callee of the last call in ``code``."""
    m = model(code)
    return m.qualified_name(m.calls[-1].func)


# --- imports and aliases --------------------------------------------------------------------------

RESOLVED = {
    "import-as": ("import jax as j\ng = j.checkpoint(f)", "jax.checkpoint"),
    "from-import-as": ("from jax import remat as r\ng = r(f)", "jax.remat"),
    "from-flax-import-linen": ("from flax import linen as nn\nB = nn.remat(Block)", "flax.linen.remat"),
    "nn-checkpoint-alias": ("import flax.linen as nn\nB = nn.checkpoint(Block)", "flax.linen.remat"),
    "partitioning-module": (
        "import flax.linen.partitioning as nn_partitioning\nB = nn_partitioning.remat(Block)",
        "flax.linen.partitioning.remat",
    ),
    "module-level-alias-used-in-function": (
        """
        import flax.linen.partitioning as nn_partitioning
        remat = nn_partitioning.remat

        def build(block):
            return remat(block, static_argnums=(2,))
        """,
        "flax.linen.partitioning.remat",
    ),
    "annotated-alias": (
        "import jax\nfrom typing import Callable\nckpt: Callable = jax.checkpoint\ng = ckpt(f)",
        "jax.checkpoint",
    ),
    "dotted-import": ("import flax.linen\nB = flax.linen.remat(Block)", "flax.linen.remat"),
    "submodule-import-binds-top-package": ("import jax.numpy\ng = jax.checkpoint(f)", "jax.checkpoint"),
    "import-inside-function": ("def build():\n    import jax\n    return jax.checkpoint(f)", "jax.checkpoint"),
    "try-except-same-module": (
        """
        try:
            import flax.linen as nn
        except ImportError:
            from flax import linen as nn
        B = nn.remat(Block)
        """,
        "flax.linen.remat",
    ),
    "global-read-only": ("import jax\ndef build():\n    global jax\n    return jax.checkpoint(f)", "jax.checkpoint"),
    "method-sees-module-not-class": (
        """
        import jax
        class Model:
            jax = None
            def layer(self):
                return jax.checkpoint(f)
        """,
        "jax.checkpoint",
    ),
    "equinox": ("import equinox as eqx\ng = eqx.filter_checkpoint(f)", "equinox.filter_checkpoint"),
    # Program order: a use sees the bindings that reach it, as Python runs the module.
    "import-used-above-a-later-def": (
        "from jax import checkpoint\ng = checkpoint(f)\ndef checkpoint(fn):\n    return fn",
        "jax.checkpoint",
    ),
    "alias-used-before-it-is-rebound": (
        "import jax\nckpt = jax.checkpoint\ng = ckpt(f)\nckpt = my_checkpoint",
        "jax.checkpoint",
    ),
    "tuple-unpacked-alias": (
        "import jax\nckpt, vg = jax.checkpoint, jax.value_and_grad\ng = ckpt(f)",
        "jax.checkpoint",
    ),
    "list-unpacked-alias": (
        "import jax\n[vg, ckpt] = [jax.value_and_grad, jax.checkpoint]\ng = ckpt(f)",
        "jax.checkpoint",
    ),
    "rebound-to-the-same-api": (
        "import jax\nckpt = jax.checkpoint\nif old:\n    ckpt = jax.checkpoint\ng = ckpt(f)",
        "jax.checkpoint",
    ),
    "swapped-in-one-statement": (
        "import jax\na, b = jax.checkpoint, jax.grad\na, b = b, a\ng = b(f)\nh = a(f)",
        "jax.checkpoint",
    ),
    "class-body-before-its-own-binding": (
        "import jax\nclass Model:\n    g = jax.checkpoint(f)\n    jax = None",
        "jax.checkpoint",
    ),
    "conditional-binding-after-an-unconditional-one-in-the-same-branch": (
        "import jax\nif remat:\n    ckpt = my_checkpoint\n    ckpt = jax.checkpoint\n    g = ckpt(f)",
        "jax.checkpoint",
    ),
    "haiku": ("import haiku as hk\ng = hk.remat(f)", "haiku.remat"),
}


@pytest.mark.parametrize(("code", "api"), RESOLVED.values(), ids=RESOLVED.keys())
def test_spelling_resolves_to_the_api(code, api):
    assert [(qname, form) for qname, form, _ in sites(code)] == [(api, "call")]


def test_optional_import_with_none_fallback_resolves():
    # ``nn = None`` cannot be called or have attributes: wherever nn.remat runs, nn is the import.
    code = """
        try:
            import flax.linen as nn
        except ImportError:
            nn = None
        B = nn.remat(Block, policy="dots_saveable")
    """
    assert sites(code) == [("flax.linen.remat", "call", "Block")]
    assert codes(code, select={"REM001"}) == ["REM001"]


UNRESOLVED = {
    "parameter-named-jax": "import jax\ndef build(jax):\n    return jax.checkpoint(f)",
    "lambda-parameter": "import jax\nh = lambda jax: jax.checkpoint(f)",
    "local-def-checkpoint": "from jax import checkpoint\ndef build():\n    def checkpoint(fn):\n        return fn\n    return checkpoint(f)",
    "module-def-shadows-import": "from jax import checkpoint\ndef checkpoint(fn):\n    return fn\ng = checkpoint(f)",
    "global-rebinding": "import jax\ndef patch():\n    global jax\n    jax = fake_jax\ng = jax.checkpoint(f)",
    "nonlocal-rebinding": """
        def build():
            from jax import checkpoint
            def patch():
                nonlocal checkpoint
                checkpoint = my_checkpoint
            patch()
            return checkpoint(f)
    """,
    "class-scope-binding": "import jax\nclass Model:\n    jax = None\n    g = jax.checkpoint(f)",
    "comprehension-target": "import jax\ngs = [jax.checkpoint(f) for jax in modules]",
    "class-name-invisible-in-comprehension": "import jax\nclass Model:\n    ckpt = jax.checkpoint\n    gs = [ckpt(f) for f in fs]",
    "for-target": "import jax\nfor jax in modules:\n    jax.checkpoint(f)",
    "with-as": "import jax\nwith open(p) as jax:\n    jax.checkpoint(f)",
    "except-as": "import jax\ntry:\n    pass\nexcept Exception as jax:\n    pass\njax.checkpoint(f)",
    "walrus": "import jax\nif (ckpt := jax.checkpoint):\n    ckpt(f)",
    "reassigned-alias": "import jax\nckpt = jax.checkpoint\nckpt = my_checkpoint\nckpt(f)",
    "conditional-alias": "import jax\nif old:\n    ckpt = jax.remat\nelse:\n    ckpt = jax.checkpoint\nckpt(f)",
    "star-import": "from jax import *\ng = checkpoint(f)",
    "relative-import-module": "from . import jax\ng = jax.checkpoint(f)",
    "relative-import-name": "from .jax import checkpoint\ng = checkpoint(f)",
    "dunder-import": "jax = __import__('jax')\ng = jax.checkpoint(f)",
    "parameter-default": "import jax\ndef build(ckpt=jax.checkpoint):\n    return ckpt(f)",
    "torch-checkpoint": "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)",
    "torch-module": "import torch.utils.checkpoint as checkpoint\ny = checkpoint.checkpoint(f, x)",
    "orbax": "import orbax.checkpoint as ocp\nckptr = ocp.Checkpointer(ocp.PyTreeCheckpointHandler())",
    "flax-training-checkpoints": "from flax.training import checkpoints\ncheckpoints.save_checkpoint(d, state, step)",
    "api-passed-as-value": "import flax.linen as nn\nm = TransformedMLP(transform=nn.remat)",
    "function-body-sees-the-final-binding": "import jax\nckpt = jax.checkpoint\ndef build():\n    return ckpt(f)\nckpt = my_checkpoint",
    "later-def-seen-from-a-function": "from jax import checkpoint\ndef build():\n    return checkpoint(f)\ndef checkpoint(fn):\n    return fn",
    "rebound-later-in-a-loop": "import jax\nckpt = jax.checkpoint\nfor m in ms:\n    g = ckpt(m)\n    ckpt = wrap(ckpt)",
    "rebound-under-a-condition": "import jax\nckpt = jax.checkpoint\nif old:\n    ckpt = my_checkpoint\ng = ckpt(f)",
    "imports-that-disagree": "try:\n    from jax import checkpoint\nexcept ImportError:\n    from mylib import checkpoint\ng = checkpoint(f)",
    "unpacked-from-a-call": "import jax\nckpt, vg = pick(jax.checkpoint, jax.value_and_grad)\ng = ckpt(f)",
    "unpacked-with-a-star": "import jax\nckpt, *rest = jax.checkpoint, jax.value_and_grad\ng = ckpt(f)",
    "used-before-any-binding": "g = checkpoint(f)\nfrom jax import checkpoint",
}


@pytest.mark.parametrize("code", UNRESOLVED.values(), ids=UNRESOLVED.keys())
def test_unresolvable_spelling_gives_no_site(code):
    assert sites(code) == []


def test_shadowed_policy_string_is_not_reported():
    code = """
        import jax
        def build(jax, f):
            return jax.checkpoint(f, policy="dots_saveable")
    """
    assert codes(code, select={"REM001"}) == []


def test_first_iterable_of_a_comprehension_is_not_misresolved():
    # The loop target `jax` shadows the module inside the comprehension; the rule must not treat
    # the element expression as jax.checkpoint.
    assert sites("import jax\ngs = [jax.checkpoint(g) for jax in [jax]]") == []


# --- forms of application --------------------------------------------------------------------------


def test_partial_as_decorator():
    code = """
        import functools
        import jax

        @functools.partial(jax.checkpoint, static_argnums=(1,))
        def layer(x, training):
            return x
    """
    assert sites(code) == [("jax.checkpoint", "decorator", None)]


def test_from_functools_import_partial_as_decorator():
    code = "from functools import partial\nimport jax\n@partial(jax.checkpoint, prevent_cse=False)\ndef body(c, x):\n    return c, x"
    assert sites(code) == [("jax.checkpoint", "decorator", None)]


def test_partial_bound_to_a_name_then_applied_and_used_as_decorator():
    code = """
        import functools
        import jax

        ckpt = functools.partial(jax.checkpoint, policy=jax.checkpoint_policies.dots_saveable)
        layer = ckpt(mlp)

        @ckpt
        def block(x):
            return x
    """
    m = model(code)
    found = find_sites(m, Values(m).entries)
    assert sorted((s.form, s.api.qname) for s in found) == [("call", "jax.checkpoint"), ("decorator", "jax.checkpoint")]
    assert all("policy" in s.keywords for s in found)


def test_partial_keywords_merge_and_later_ones_win():
    code = """
        import functools
        import jax
        p1 = functools.partial(jax.checkpoint, policy=a, prevent_cse=False)
        p2 = functools.partial(p1, policy=b)
        g = p2(f)
    """
    m = model(code)
    (site,) = find_sites(m, Values(m).entries)
    assert m.module.code_for_node(site.keyword("policy").value) == "b"
    assert m.module.code_for_node(site.keyword("prevent_cse").value) == "False"
    assert m.module.code_for_node(site.target) == "f"


def test_partial_policy_string_is_reported_on_the_decorator_line():
    code = "import functools\nimport jax\n\n@functools.partial(jax.checkpoint, policy='dots_saveable')\ndef f(x):\n    return x\n"
    (finding,) = lint(code, {"REM001"})
    assert finding.start.row == 4


def test_nnx_remat_factory_form():
    code = """
        from flax import nnx

        @nnx.remat(policy=jax.checkpoint_policies.dots_saveable)
        def block(model, x):
            return model(x)

        g = nnx.remat(prevent_cse=False)(block)
    """
    m = model(code)
    found = find_sites(m, Values(m).entries)
    assert sorted((s.form, s.api.qname) for s in found) == [("call", "flax.nnx.remat"), ("decorator", "flax.nnx.remat")]
    by_form = {s.form: s for s in found}
    assert "policy" in by_form["decorator"].keywords and by_form["decorator"].ref.factory is not None
    assert m.module.code_for_node(by_form["call"].target) == "block"
    assert "prevent_cse" in by_form["call"].keywords


def test_keywords_only_call_is_a_factory_not_a_site():
    # ``nnx.remat(policy=p)`` builds a decorator; its application is the site. Never applied in the
    # module (exported), the factory call is a site of its own, with no target, as is a partial.
    assert sites("from flax import nnx\nr = nnx.remat(policy=p)\ng = r(f)") == [("flax.nnx.remat", "call", "f")]
    assert sites("from flax import nnx\nr = nnx.remat(policy=p)") == [("flax.nnx.remat", "call", None)]
    assert sites("import jax, functools\nr = functools.partial(jax.checkpoint, policy=p)") == [
        ("jax.checkpoint", "call", None)
    ]
    assert sites("import jax\nr = jax.checkpoint(policy=p)") == []  # raises (REM006): not a decorator


def test_star_arguments_are_not_a_decorator_factory():
    # jax.checkpoint(*fs) may well receive the function: the outer call applies its result.
    assert sites("import jax\ny = jax.checkpoint(*fs)(x)") == [("jax.checkpoint", "call", None)]
    assert sites("import jax\ny = jax.checkpoint(**kw)(x)") == [("jax.checkpoint", "call", None)]


def test_decorated_class_and_method_are_sites():
    code = """
        import flax.linen as nn

        @nn.remat
        class Block(nn.Module):
            @nn.remat
            @nn.compact
            def __call__(self, x):
                return x
    """
    assert sites(code) == [("flax.linen.remat", "decorator", None)] * 2


def test_nested_remat_of_a_class_is_two_sites():
    code = "import flax.linen as nn\nc1 = nn.remat(nn.remat(C))()"
    assert sites(code) == [("flax.linen.remat", "call", "nn.remat(C)"), ("flax.linen.remat", "call", "C")]


def test_scopes_of_nested_functions_and_classes():
    code = """
        import jax

        def outer():
            ckpt = jax.checkpoint
            class Inner:
                def method(self):
                    return ckpt(f)
            return Inner
    """
    assert sites(code) == [("jax.checkpoint", "call", "f")]


def test_decorator_is_resolved_in_the_enclosing_scope():
    code = """
        import jax
        def outer(jax):
            @jax.checkpoint
            def f(x):
                return x
            return f
    """
    assert sites(code) == []


def test_qualified_name_of_builtins_and_unknowns():
    assert qname_of_call("print(x)") == "builtins.print"
    assert qname_of_call("def print(x):\n    pass\nprint(x)") is None
    assert qname_of_call("unknown_function(x)") is None


# --- Flax linen Modules (remat_lint/analysis/linen.py), seen through REM004 and REM009 --------------

LINEN_PRELUDE = """
import flax.linen as nn
import jax
from mylib import Mixin, make_block

class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return x
"""

MODULE_INSTANCES = {
    "constructor": "y = nn.remat(Block())(x)",
    "flax-class": "y = nn.remat(nn.LayerNorm())(x)",
    "name-bound-once": "b = Block()\ny = nn.remat(b)(x)",
    "subclass-of-local-module": "class Big(Block):\n    pass\ny = nn.remat(Big())(x)",
    "instance-of-remat-class": "y = nn.remat(nn.remat(Block)())(x)",
    "instance-of-named-remat-class": "RematBlock = nn.remat(Block)\nlayer = RematBlock()\ny = nn.remat(layer)(x)",
    "setup-attribute": "class M(nn.Module):\n    def setup(self):\n        self.b = Block()\n"
    "    def __call__(self, x):\n        return nn.remat(self.b)(x)",
    "setup-inherited": (
        "class Base(nn.Module):\n    def setup(self):\n        self.b = Block()\n"
        "class M(Base):\n    def __call__(self, x):\n        return nn.remat(self.b)(x)"
    ),
    "setup-attribute-in-closure": (
        "class M(nn.Module):\n    def setup(self):\n        self.b = Block()\n"
        "    def __call__(self, x):\n        f = lambda y: nn.remat(self.b)(y)\n        return f(x)"
    ),
    "bound-compact-method": "class M(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return x\n"
    "    def run(self, x):\n        return nn.remat(self.__call__)(x)",
}


@pytest.mark.parametrize("code", MODULE_INSTANCES.values(), ids=MODULE_INSTANCES.keys())
def test_certain_module_instances_are_reported(code):
    assert codes(LINEN_PRELUDE + code, select={"REM004"}) == ["REM004"]


NOT_MODULE_INSTANCES = {
    "class": "B = nn.remat(Block)",
    "function-returning-a-class": "B = nn.remat(make_block(cfg))",
    "instance-of-a-function-result": "B = make_block(cfg)\ny = nn.remat(B())(x)",
    "name-bound-twice": "b = Block()\nb = make_block(cfg)\ny = nn.remat(b)(x)",
    "unresolvable-base": "class Mixed(Mixin):\n    pass\ny = nn.remat(Mixed())(x)",
    "plain-class": "class Plain:\n    pass\ny = nn.remat(Plain())(x)",
    "dataclass-field-holding-a-class": "class M(nn.Module):\n    block: type = Block\n    def __call__(self, x):\n"
    "        return nn.remat(self.block)()(x)",
    "attribute-not-assigned-in-setup": "class M(nn.Module):\n    def __call__(self, x):\n        return nn.remat(self.block_fn)(x)",
    "setup-assigns-a-class": "class M(nn.Module):\n    def setup(self):\n        self.b = Block\n"
    "    def __call__(self, x):\n        return nn.remat(self.b)()(x)",
    "setup-attribute-also-a-field": (
        "class M(nn.Module):\n    b: object = None\n    def setup(self):\n        self.b = Block()\n"
        "    def __call__(self, x):\n        return nn.remat(self.b)(x)"
    ),
    "member-may-come-from-unknown-mixin": (
        "class M(Mixin, nn.Module):\n    def __call__(self, x):\n        return nn.remat(self.encode)(x)"
    ),
    "staticmethod": "class M(nn.Module):\n    @staticmethod\n    def body(module, x):\n        return x\n"
    "    def __call__(self, x):\n        return nn.remat(self.body)(self, x)",
    "self-of-a-plain-class": "class P:\n    def f(self, x):\n        return x\n    def g(self, x):\n        return nn.remat(self.f)(x)",
    "not-the-first-parameter": "class M(nn.Module):\n    def f(self, x):\n        return x\n    def g(self, other):\n"
    "        return nn.remat(other.f)(self)",
    "shadowed-nn": "def build(nn):\n    return nn.remat(Block())",
    "nnx-remat": "from flax import nnx\ny = nnx.remat(Block())(x)",
}


@pytest.mark.parametrize("code", NOT_MODULE_INSTANCES.values(), ids=NOT_MODULE_INSTANCES.keys())
def test_uncertain_module_instances_are_not_reported(code):
    assert codes(LINEN_PRELUDE + code, select={"REM004"}) == []


def test_linen_remat_spellings_all_reach_rem004():
    code = """
        try:
            from flax import linen as nn
        except ImportError:
            nn = None
        import flax.linen.partitioning as nn_partitioning
        remat = nn_partitioning.remat
        ckpt = nn.checkpoint

        class Block(nn.Module):
            pass

        a = nn.remat(Block())(x)
        b = remat(Block())(x)
        c = ckpt(Block())(x)
    """
    assert codes(code, select={"REM004"}) == ["REM004"] * 3


def test_jax_checkpoint_through_an_alias_reaches_rem009():
    code = """
        from jax import remat as r
        from flax import linen

        class Block(linen.Module):
            @r
            def __call__(self, x):
                return x
    """
    assert codes(code, select={"REM009"}) == ["REM009"]
