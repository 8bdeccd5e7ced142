"""The prefilter is sound: every file that can hold a finding is parsed.

A file the prefilter rejects is never linted, so a too-tight prefilter is a silent miss. These
tests hold it against every rule's INVALID examples, every fixture and every dotted API name the
rules and the analysis look for; and check that the rule index (read without importing the rules)
agrees with the imported rules.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from remat_lint.prefilter import API_QNAMES, Prefilter, prefilter_for
from remat_lint.registry import _imported_index, all_rules, rule_index

ROOT = Path(__file__).resolve().parent.parent
ALL_WORDS = frozenset(w for rule in all_rules() for w in rule.prefilter_words)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_keeps_every_invalid_example(rule):
    prefilter = prefilter_for(frozenset(rule.prefilter_words))
    for example in rule.INVALID:
        assert prefilter.keeps(textwrap.dedent(example.code)), f"{rule.code} example skipped:\n{example.code}"


@pytest.mark.parametrize("fixture", sorted((ROOT / "fixtures").rglob("*.py")), ids=lambda p: p.name)
def test_keeps_every_fixture(fixture):
    source = fixture.read_text(encoding="utf-8")
    if "# expect:" in source:
        assert prefilter_for(ALL_WORDS).keeps(source)


def _dotted_literals() -> set[str]:
    found = set()
    for path in [*(ROOT / "rules").glob("*.py"), *(ROOT / "remat_lint" / "analysis").glob("*.py"), ROOT / "remat_lint" / "apis.py"]:
        for name in re.findall(r"[\"']((?:jax|flax|haiku|equinox)(?:\.\w+)+)[\"']", path.read_text(encoding="utf-8")):
            if re.search(r"remat|checkpoint", name):
                found.add(name)
    return found


@pytest.mark.parametrize("qname", sorted(_dotted_literals()))
def test_keeps_every_api_name_the_rules_resolve(qname):
    """A rule or analysis that looks for a new dotted name must make the prefilter keep its files
    (add it to apis.py, or to prefilter.EXTRA_QNAMES)."""
    module, _, attr = qname.rpartition(".")
    assert qname in API_QNAMES or any(q.startswith(qname + ".") for q in API_QNAMES), qname
    for source in (f"import {module}\n{qname}(f)\n", f"from {module} import {attr}\n{attr}(f)\n",
                   f"import {module} as m\nm.{attr}(f)\n"):
        assert Prefilter().keeps(source), source


@pytest.mark.parametrize(
    "source",
    [
        '"""Wrap the layer with jax.checkpoint to save memory."""\nimport jax\n',  # docstring only
        "import orbax\nmanager.save_checkpoint(step)  # remat the model\n",  # other words
        "from jax._src.interpreters import remat\nremat.rules[p] = rule\n",  # JAX internals
        "def f(checkpoint, remat=True):\n    return checkpoint.restore()\n",  # parameters
        "import torch.utils.checkpoint\ntorch.utils.checkpoint.checkpoint(f, x)\n",  # another library
    ],
)
def test_rejects_files_that_cannot_hold_a_finding(source):
    assert not Prefilter().keeps(source)


@pytest.mark.parametrize(
    "source",
    [
        "import jax as j\nj.checkpoint(f)\n",
        "from jax import checkpoint as ckpt\nckpt(f)\n",
        "from flax.linen import *\nremat(Block)\n",  # star import: the model may resolve it
        "import jax\nremat = jax\nremat.checkpoint(f)\n",
        "from flax import linen as nn\nclass A(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return nn.remat(B)()(x)\n",
        "import jax\np = jax.checkpoint_policies.dots_saveable\n",
        "import jax\njax.checkpoint(f\n",  # Python cannot parse it: libcst reports the syntax error
    ],
)
def test_keeps_api_uses(source):
    assert Prefilter().keeps(source)


def test_rule_words_match_anywhere_lower_or_upper_case():
    assert Prefilter(["jax_new_checkpoint"]).keeps("import os\nos.environ['JAX_NEW_CHECKPOINT'] = '1'\n")
    assert not Prefilter(["jax_new_checkpoint"]).keeps("import os\nos.environ['JAX_NEW_CHECKPOINT_X'] = '1'\n")


def test_rule_index_reads_every_rule_without_importing_it():
    """The static index (read from source) must agree with the imported rules; write the
    attributes as literals (``prefilter_words = ("word",)``) so that it can."""
    assert rule_index() == _imported_index()
