"""Prefilter stage 3 from the text (remat_lint/engine/prefilter/text_references.py): it may reject a file only
where the ``ast`` check rejects it, and it rejects most of what that check rejects."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from remat_lint.engine.prefilter.stages import (
    _GROUP_TOKENS,
    _SUBSTRINGS,
    API_GROUPS,
    API_TOKENS,
    Prefilter,
    _has_token,
    _has_word,
    _References,
    _related,
    api_qnames,
)
from remat_lint.engine.prefilter.text_references import TextReferences

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _groups() -> list[tuple[frozenset[str], frozenset[str]]]:
    return [(API_TOKENS, api_qnames()), *((_GROUP_TOKENS[g], API_GROUPS[g]) for g in API_GROUPS)]


def by_text(source: str, tokens: frozenset[str], apis: frozenset[str]) -> bool | None:
    refs = TextReferences(source)
    return refs.may_reference(
        tokens, lambda q: _has_token(q, tokens) and _related(q, apis), lambda q: _related(q, apis)
    )


def by_ast(source: str, tokens: frozenset[str], apis: frozenset[str]) -> bool:
    return _References(ast.parse(source)).may_reference(apis, tokens)


REJECTED = [
    '"""Wrap the layer with jax.checkpoint to save memory."""\nimport jax\n',
    "import jax\n# jax.checkpoint(f) would save memory\nx = 'jax.remat'\n",
    "import orbax.checkpoint as ocp\nocp.save(step)\ncheckpoint_dir = 'x'\n",
    "from jax._src.interpreters import remat\nremat.rules[p] = rule  # full remat\n",
    "from jax._src import ad_checkpoint\n\n@register(ad_checkpoint.remat_p)\ndef f(): ...\n",
    "from . import (\n    remat_utils,  # helpers\n    checkpoint_io,\n)\ncheckpoint_io.save()\n",
    "import torch.utils.checkpoint\ntorch.utils.checkpoint.checkpoint(f, x)\n",
    "import orbax.checkpoint as ocp  # Windows line ends\r\nocp.save(1)\r\n",
    "def f(x):\n    return g(x).checkpoint\n",  # a call's attribute: the semantic model resolves no call results
    's = r\'a\\\'\' + """jax.checkpoint\n"""\nimport jax\n',
    "import jax\nprint(f'saved the checkpoint at step {step:>{width}} ({{remat}})')\n",  # an f-string's text
]


@pytest.mark.parametrize("source", REJECTED)
def test_rejects_without_a_parse_what_the_ast_check_rejects(source):
    assert not by_ast(source, API_TOKENS, api_qnames())
    assert by_text(source, API_TOKENS, api_qnames()) is False
    assert not Prefilter().check(source).keep


NOT_REJECTED = [
    "import jax\njax.checkpoint(f)\n",
    "import jax\ny = (jax  # the module\n     .checkpoint)(f)\n",  # a chain across lines and a comment
    "import jax\ny = (jax.\n     checkpoint)(f)\n",
    "from jax import (\n    checkpoint,  # x\n)\n",
    "import jax\nprint(f'{jax.checkpoint(f)}')\n",  # a replacement field is code
    "import jax\nx = f\"{'}' + jax.checkpoint(f) + '{'}\"\n",  # braces in a field's strings
    "import jax\nif c: import flax\njax.checkpoint(f)\n",  # an import not read here
    "from flax.linen import *\nremat(Block)\n",
    "import jax\nremat = jax\nremat.checkpoint(f)\n",
    "import jax\nfor remat in (1,):\n    pass\nremat.x\n",
    "import jax\nx = 'unterminated\njax.checkpoint(f)\n",  # Python cannot parse it: libcst reports the error
    'import jax\nx = f"{d["k"]}"\ny = jax.checkpoint(f)\n',  # a quote nested in an f-string (Python 3.12)
    "import jax\\\n    as j\nj.checkpoint(f)\n",
]


@pytest.mark.parametrize("source", NOT_REJECTED)
def test_leaves_uses_and_doubts_to_the_parse(source):
    assert by_text(source, API_TOKENS, api_qnames()) is not False


def _installed_and_fixture_sources() -> list[tuple[Path, bool]]:
    """(path, whether to check REM301's API groups too: on the fixtures, where they are few)."""
    from importlib.util import find_spec  # importing jax would cost more than the test

    installed = [
        p
        for name in ("jax", "flax")
        for root in find_spec(name).submodule_search_locations
        for p in Path(root).rglob("*.py")
    ]
    return sorted([*((p, False) for p in installed), *((p, True) for p in FIXTURES.rglob("*.py"))])


def test_sound_and_effective_on_the_installed_jax_flax_and_the_fixtures():
    """Every file past the word search (for the default rules' API tokens; on the fixtures for
    REM301's groups too): rejected from the text only where the ``ast`` check
    rejects it (soundness), and most of the ``ast`` check's rejections need no parse."""
    rejected_by_ast = rejected_by_text = 0
    for path, all_groups in _installed_and_fixture_sources():
        source = path.read_text(encoding="utf-8", errors="replace")
        groups = [
            (t, a)
            for t, a in _groups()[: None if all_groups else 1]
            if _has_word(source, _SUBSTRINGS if t is API_TOKENS else t, t)
        ]
        if not groups:
            continue
        try:
            refs: _References | None = _References(ast.parse(source))
        except (SyntaxError, ValueError, RecursionError):
            refs = None
        text = TextReferences(source)
        for tokens, apis in groups:
            kept = refs is None or refs.may_reference(apis, tokens)
            by_text = text.may_reference(
                tokens,
                lambda q, t=tokens, a=apis: _has_token(q, t) and _related(q, a),
                lambda q, a=apis: _related(q, a),
            )
            assert not (kept and by_text is False), (path, sorted(tokens))
            rejected_by_ast += not kept
            rejected_by_text += by_text is False
    assert rejected_by_text >= 0.8 * rejected_by_ast, (rejected_by_text, rejected_by_ast)
