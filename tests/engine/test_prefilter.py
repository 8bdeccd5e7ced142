"""The prefilter is sound: every file that can hold a finding is parsed.

A file the prefilter rejects is never linted, so a too-tight prefilter is a silent miss. These
tests hold it against every rule's INVALID examples, every fixture and every dotted API name the
rules and the analysis look for; and check that the rule index (read without importing the rules)
agrees with the imported rules.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from remat_lint.cli import command as cli
from remat_lint.engine import lint as engine
from remat_lint.engine.prefilter.stages import API_GROUPS, Prefilter, Verdict, api_qnames, prefilter_for
from remat_lint.registry import _imported_index, all_rules, rule_index

ROOT = Path(__file__).resolve().parents[2]
ALL_CODES = frozenset(rule.code for rule in all_rules())


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_keeps_every_invalid_example(rule):
    prefilter = prefilter_for(frozenset({rule.code}))
    for example in rule.INVALID:
        assert prefilter.keeps(textwrap.dedent(example.code)), f"{rule.code} example skipped:\n{example.code}"


AT_CALLS = {rule.code for rule in all_rules() if rule.reports_at_calls}


def _found_in_its_own_text(path: Path) -> bool:
    """It expects a finding that its text alone can lead to: not only calls of another module's wrap
    (REM012, REM016), which the project phase finds in files that name no remat API."""
    expected = set(re.findall(r"# expect: ([A-Z0-9, ]+)", path.read_text(encoding="utf-8")))
    return any(code.strip() not in AT_CALLS for codes in expected for code in codes.split(","))


WITH_FINDINGS = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if _found_in_its_own_text(p))


@pytest.mark.parametrize("fixture", WITH_FINDINGS, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_keeps_every_fixture_with_findings(fixture):
    assert prefilter_for(ALL_CODES).keeps(fixture.read_text(encoding="utf-8"))


def _dotted_literals() -> set[str]:
    found = set()
    for path in [
        *(ROOT / "rules").glob("*.py"),
        *(ROOT / "remat_lint" / "analysis").glob("*.py"),
        *(ROOT / "remat_lint" / "apis").glob("*.py"),
    ]:
        for name in re.findall(r"[\"']((?:jax|flax|haiku|equinox)(?:\.\w+)+)[\"']", path.read_text(encoding="utf-8")):
            if re.search(r"remat|checkpoint", name):
                found.add(name)
    return found


@pytest.mark.parametrize("qname", sorted(_dotted_literals()))
def test_keeps_every_api_name_the_rules_resolve(qname):
    """A rule or analysis that looks for a new dotted name must make the prefilter keep its files
    (add it to remat_lint/apis/, or to prefilter.EXTRA_QNAMES)."""
    module, _, attr = qname.rpartition(".")
    assert qname in api_qnames() or any(q.startswith(qname + ".") for q in api_qnames()), qname
    for source in (
        f"import {module}\n{qname}(f)\n",
        f"from {module} import {attr}\n{attr}(f)\n",
        f"import {module} as m\nm.{attr}(f)\n",
    ):
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


def test_rules_name_only_api_groups_the_prefilter_knows():
    assert {g for rule in all_rules() for g in rule.prefilter_apis} <= API_GROUPS.keys()


# Files with the word "scan" that REM301's prefilter rejects: no scan the semantic model could
# resolve, or none that REM301 could judge to run over layers (layer_scans.py).
SCAN_REJECTED = [
    "def scan(f, init, xs):\n    return f(init, xs)\nimport jax\ng = jax.grad(lambda ps: scan(layer, 0., ps['layers']))\n",
    "from jax._src.lax.control_flow import scan\nfrom jax._src.api import grad\n"
    "g = grad(lambda ps: scan(layer, 0., ps['layers'])[0])\n",  # JAX's internals
    '"""Use jax.lax.scan over layers and jax.grad."""\nimport numpy as np\nparams = np.ones(3)\n',  # words in a docstring
    "import jax\ndef f(scan, params):\n    return scan(params['layers'])\ng = jax.grad(f)\n",  # a parameter
    "import haiku as hk\nscan = hk.scan\ng = hk.grad(loss)\n",  # never called
]
# ... and files it keeps: a scan, however spelled, with or without a differentiation (a grad in
# another module may reach it), and whatever it is called (REM301 reads what its body does).
SCAN_KEPT = [
    "import jax\ndef cell(h, x):\n    return h * x, h\ndef rnn(p, xs):\n    return jax.lax.scan(cell, p, xs)[0].sum()\ng = jax.grad(rnn)\n",
    "from jax import lax\ndef run(eqn, body, init, xs):\n    return lax.scan(body, init, xs=xs, length=eqn.params['length'])\n",
    "import jax\ndef forward(params, x):\n    return jax.lax.scan(layer, x, params['layers'])[0]\n",
    "from jax.lax import scan as s\nfrom jax import value_and_grad as vg\n"
    "def f(ps, x):\n    return s(layer, x, ps['layers'])[0].sum()\ng = vg(f)\n",
    "import jax.lax as L\nimport equinox as eqx\ndef f(m, ps, x):\n    return L.scan(layer, x, ps['blocks'])[0].sum()\n"
    "g = eqx.filter_grad(f)\n",
    "from jax import *\ndef f(ps, x):\n    return lax.scan(layer, x, ps['layers'])[0].sum()\ng = grad(f)\n",
    "from flax import linen as nn\nclass S(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
    "        return nn.scan(Block, variable_axes={'params': 0}, split_rngs={'params': True}, length=4)()(x, None)\n",
    *(
        FIRES := [  # REM301 fires here: files without a remat API that only its own prefilter keeps
            "import jax\ndef layer(c, p):\n    return c @ p, None\n"
            "def f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0].sum()\ng = jax.grad(f)\n",
            "from jax import lax, numpy as jnp, value_and_grad as vg\ndef f0(c, w):\n"
            "    return jnp.einsum('ij,jk->ik', c, w), None\n"
            "def loss(ws, x):\n    return lax.scan(f0, x, ws)[0].sum()\nstep = vg(loss)\n",
            # No word of layers anywhere: the body multiplies its carry by the slice.
            "import jax\ndef step(c, p):\n    return c @ p, None\n"
            "def f(ps, x):\n    return jax.lax.scan(step, x, ps)[0].sum()\ng = jax.grad(f)\n",
            # The body's def named through an assignment, an alias of the scan, a decorator.
            "import functools, jax\ndef block_fn(cfg, c, p):\n    return c @ p, None\ndef f(ps, x, cfg):\n"
            "    body = functools.partial(block_fn, cfg)\n    return jax.lax.scan(body, x, ps)[0].sum()\ng = jax.grad(f)\n",
            "import jax\nS = jax.lax.scan\ndef layer(c, p):\n    return c @ p, None\n"
            "def f(ps, x):\n    return S(layer, x, ps)[0].sum()\ng = jax.grad(f)\n",
            "from flax import nnx\nimport jax\n@nnx.scan(in_axes=(nnx.Carry, 0))\ndef layer_step(x, w):\n    return x @ w, None\n"
            "def f(ws, x):\n    return layer_step(x, ws)[0].sum()\ng = jax.grad(f)\n",
        ]
    ),
]


@pytest.mark.parametrize("source", SCAN_REJECTED)
def test_rem301_prefilter_rejects_files_without_a_scan(source):
    assert not prefilter_for(frozenset({"REM301"})).keeps(source)


@pytest.mark.parametrize("source", SCAN_KEPT)
def test_rem301_prefilter_keeps_a_scan(source):
    assert prefilter_for(frozenset({"REM301"})).keeps(source)


def test_rem301_fires_in_files_only_its_own_prefilter_keeps():
    for source in FIRES:
        assert not Prefilter().keeps(source)
        assert [f.code for f in engine.lint_source("a.py", source, frozenset({"REM301"})).findings] == ["REM301"]


def test_a_file_kept_for_rem301_alone_still_tells_the_project_its_names(monkeypatch, capsys):
    """The module that hands a checkpoint name to a library is kept only for REM301 (a scan over
    layers, no remat API): REM008 still reads its names, so the policy that uses the name is
    quiet whichever other rules are selected, as when the module is not kept at all."""
    monkeypatch.chdir(ROOT)
    for selection in ("ALL", "REM008,REM301", "REM008"):
        code = cli.main(["--select", selection, "--no-cache", "-j", "1", "-q", "fixtures/quiet/scan_only_names"])
        assert (code, capsys.readouterr().out) == (0, ""), selection


class _KeepAll(Prefilter):
    def check(self, source: str, tree: ast.AST | None = None) -> Verdict:
        return Verdict(True, tree or ast.parse(source))


SOUNDNESS_CORPUS = [
    *((p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "fixtures").rglob("*.py"))),
    *((f"synthetic{i}.py", s) for i, s in enumerate(SCAN_REJECTED + SCAN_KEPT)),
]


@pytest.mark.parametrize("name, source", SOUNDNESS_CORPUS, ids=[name for name, _ in SOUNDNESS_CORPUS])
def test_a_rejected_file_has_no_finding_without_the_prefilter(name, source, monkeypatch):
    """The check prefilter.py documents on real code, on the fixtures and the synthetic files:
    lint each file with every rule and no prefilter; every rule whose prefilter alone rejects
    the file must have no finding in it."""
    rejecting = {code for code in ALL_CODES if not prefilter_for(frozenset({code})).keeps(source)}
    if not rejecting:
        return
    monkeypatch.setattr(engine, "prefilter_for", lambda codes: _KeepAll())
    result = engine.lint_source(name, source, ALL_CODES)
    assert result.parsed
    assert not [f for f in result.findings if f.code in rejecting]
