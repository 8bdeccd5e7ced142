"""Which files are worth a libcst parse: cheap, staged and sound for every rule.

libcst parses about 10x slower than ``ast`` and most files in a JAX repository never use remat, so a
file is parsed only when it could hold a finding. Rules find remat APIs only through names the
semantic model resolves from imports, so a file can hold a finding only if an identifier (never a
comment or string) names one of the APIs in ``remat_lint/apis/``:

1. a rule's ``prefilter_words`` as a whole word, as written or in lower or upper case, anywhere keeps the file
   (rules that declare words may look at strings and comments, e.g. REM005's
   ``"JAX_NEW_CHECKPOINT"``);
2. otherwise one of the API tokens (``remat``, ``checkpoint``, ``ad_checkpoint``... derived
   from ``remat_lint/apis/``) must occur as a whole word ("save_checkpoint" and "checkpoints" do not
   count), or, for a rule that fires without any remat API (REM301: a scan body that is *not*
   checkpointed), the last name of an API of each group in its ``prefilter_apis`` (``scan``:
   the grad may be in another module; stage 3 then also asks ``layer_scans.py`` whether a scan
   may run over layers);
3. ``ast``: an identifier holding such a token could resolve to such an API: an import of one,
   an attribute chain whose root is imported from one, or a name the semantic model might alias
   (assigned, or brought in by ``import *``). Names bound only to other imports
   (``from jax._src.interpreters import remat``), parameters, defs and builtins cannot.
   The semantic model resolves a name only through the imports of its own file, so what this
   finds there is all it can resolve. Most rejections need no parse: ``text_references.py``
   reaches them from the text (on jax+flax, 30 of the 31 files stage 3 rejects; 40k of their
   42k lines are no longer parsed), as an over-approximation that leaves every doubt to ``ast``.

Measured on the installed jax/flax/haiku/equinox (926 files, 409k lines): ``remat|checkpoint``
occurs in 77 files (82k lines), stage 2 keeps 55 (64k lines), stage 3 15 (16k lines). Linting,
with every rule selected, the 41 files this rejects although they contain ``remat|checkpoint``
gave no finding. On the installed jax+flax (726 files), every rule selected keeps the 8 files
(11k lines) the default rules keep: REM301's scan group keeps a file only when one of its scans
may run over layers (it kept 9 more with a scan alone, 17 in all; its word "scan" used to keep
60 files, 97k lines); linting with no prefilter the 63 files it rejects that contain "scan"
gave no REM301 finding, candidate or not, nor did the 317 such files of MaxText and 20 other
public JAX repositories (where the files kept for a scan alone went from 52 to 7).
tests/engine/test_prefilter.py does the same on the fixtures and synthetic files.
A kept file that ``ast`` cannot parse goes to libcst,
which reports the error, unless Python hit a nesting limit (see ``check``). A file rejected from
the text is not parsed, so an error in it goes unreported, as in a file without the words.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from remat_lint.apis import CHECKPOINT_NAME, DIFF_APIS, POLICY_NAMESPACES, REMAT_APIS, REMOVED_APIS, SCANS
from remat_lint.apis.linen import REMAT_SCAN
from remat_lint.engine.prefilter.layer_scans import may_scan_layers
from remat_lint.engine.prefilter.walk import walk
from remat_lint.project.exports import reexports_all

# Dotted names the analysis looks for besides the remat APIs (tests/engine/test_prefilter.py keeps this complete).
EXTRA_QNAMES = (REMAT_SCAN,)
_SUBSTRINGS = ("remat", "checkpoint")


@lru_cache(maxsize=1)
def api_qnames() -> frozenset[str]:
    return frozenset({*REMAT_APIS, *REMOVED_APIS, *POLICY_NAMESPACES, *CHECKPOINT_NAME, *EXTRA_QNAMES})


# The parts of the API names that hold a substring (``ad_checkpoint``, ``remat``...).
API_TOKENS = frozenset(part for q in api_qnames() for part in q.split(".") if any(s in part for s in _SUBSTRINGS))

# What a rule's ``prefilter_apis`` may name: the APIs the analysis resolves for each group.
API_GROUPS: dict[str, frozenset[str]] = {"scan": SCANS, "differentiation": frozenset(DIFF_APIS)}
# A reference to an API of a group ends with its last name: an attribute, or a name imported.
_GROUP_TOKENS = {group: frozenset(q.rsplit(".", 1)[1] for q in qnames) for group, qnames in API_GROUPS.items()}
_ALL_TOKENS = API_TOKENS.union(*_GROUP_TOKENS.values())


def _related(qname: str, apis: frozenset[str]) -> bool:
    """Whether a resolved dotted name is an API, inside one (a policy) or a module holding one."""
    return any(qname == k or qname.startswith(k + ".") or k.startswith(qname + ".") for k in apis)


def _has_token(name: str, tokens: frozenset[str]) -> bool:
    return any(part in tokens for part in name.split("."))


@dataclass
class Verdict:
    keep: bool  # worth a libcst parse (or a REM000 when ``error`` is set)
    tree: ast.AST | None = None  # the ``ast`` of a kept file, when Python could parse it
    error: SyntaxError | None = None  # why Python could not parse a kept file
    too_deep: bool = False  # the error is a nesting limit: libcst would crash (segfault) on it
    # Kept only for the rules with ``prefilter_apis`` (no remat API, no rule's word): no other rule can fire there.
    needs_only: bool = False


class Prefilter:
    """``words``: the selected rules' ``prefilter_words``; ``needs``: their ``prefilter_apis``,
    each a tuple of ``API_GROUPS`` names that must all be referenced."""

    def __init__(
        self, words: Iterable[str] = (), needs: Iterable[tuple[str, ...]] = (), *, symbols: bool = False
    ) -> None:
        self.words = tuple(sorted(set(words)))
        # ``words`` holds symbols the project phase looks for: a star import, which re-exports
        # whatever the other module binds, names them all (project/exports.py).
        self.symbols = symbols
        self._spellings = frozenset(spelling for w in self.words for spelling in (w, w.lower(), w.upper()))
        self.needs = tuple(sorted(set(needs)))

    def textual(self, source: str) -> bool | None:
        """Stages 1-2: False when the file cannot hold a finding, True when a rule's word keeps
        it, None when stage 3 decides."""
        if self._spellings and (
            _has_word(source, self._spellings, self._spellings) or self.symbols and reexports_all(source)
        ):
            return True
        if _has_word(source, _SUBSTRINGS, API_TOKENS):
            return None
        named = any(all(_has_word(source, _GROUP_TOKENS[g], _GROUP_TOKENS[g]) for g in need) for need in self.needs)
        return None if named else False

    def check(self, source: str, tree: ast.AST | None = None) -> Verdict:
        """All stages; ``tree`` is the file's ``ast`` when already parsed (flake8 gives it).

        Every kept file is parsed with ``ast`` first: CPython reports nesting beyond its limits
        as an error, where libcst's native parser overflows its stack and kills the process
        (measured: 3,000 nested brackets) or takes minutes (10,000 chained ``+``)."""
        textual = self.textual(source)
        if textual is False or (textual is None and tree is None and self.rejected_by_text(source)):
            return Verdict(False)
        if tree is None:
            try:
                tree = ast.parse(source)
            except SyntaxError as exc:
                return Verdict(True, None, exc, any(m in (exc.msg or "") for m in _NESTING_ERRORS))
            except ValueError as exc:  # null bytes (Python < 3.12)
                return Verdict(True, None, SyntaxError(str(exc)))
            except (RecursionError, MemoryError):
                return Verdict(True, None, SyntaxError(_NESTING_MESSAGE), True)
        if textual:
            return Verdict(True, tree)
        try:
            refs = _References(tree)
            if refs.may_reference(api_qnames(), API_TOKENS):
                return Verdict(True, tree)
            needed = any(
                all(refs.may_reference(API_GROUPS[g], _GROUP_TOKENS[g]) for g in need)
                and ("scan" not in need or may_scan_layers(tree))  # a scan that may run over layers
                for need in self.needs
            )
            return Verdict(needed, tree, needs_only=needed)
        except RecursionError:
            return Verdict(True, tree)

    def rejected_by_text(self, source: str) -> bool:
        """Stage 3 without a parse, where the text tells (text_references.py: most rejections),
        for a file that stages 1-2 leave to stage 3 (``textual`` is None)."""
        from remat_lint.engine.prefilter.text_references import TextReferences

        refs = TextReferences(source)

        def referenced(apis: frozenset[str], tokens: frozenset[str]) -> bool | None:
            return refs.may_reference(
                tokens, lambda q: _has_token(q, tokens) and _related(q, apis), lambda q: _related(q, apis)
            )

        if referenced(api_qnames(), API_TOKENS) is not False:
            return False
        return all(any(referenced(API_GROUPS[g], _GROUP_TOKENS[g]) is False for g in need) for need in self.needs)

    def keeps(self, source: str, tree: ast.AST | None = None) -> bool:
        return self.check(source, tree).keep


_NESTING_MESSAGE = "too deeply nested to parse"
_NESTING_ERRORS = ("too many nested parentheses", "too many levels of indentation")


def _has_word(source: str, substrings: Iterable[str], words: frozenset[str]) -> bool:
    """Whether an identifier-like word in ``words`` occurs in ``source``, found through one of
    ``substrings`` (str.find is ~50x faster than an equivalent ``\\b(?:...)\\b`` regex)."""
    for sub in substrings:
        i = source.find(sub)
        while i != -1:
            start, end = i, i + len(sub)
            while start and _is_word_char(source[start - 1]):
                start -= 1
            while end < len(source) and _is_word_char(source[end]):
                end += 1
            if source[start:end] in words:
                return True
            i = source.find(sub, end)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


class _References:
    """What one walk of a module tells about the names that could resolve to an API."""

    def __init__(self, tree: ast.AST) -> None:
        self.imported: list[str] = []  # every imported dotted name
        self.imports: dict[str, list[str]] = {}  # name -> qualified names it is imported as
        self.assigned: set[str] = set()  # names with a binding the semantic model may follow
        self.star = False
        self.uses: list[ast.Name | ast.Attribute] = []  # Name/Attribute chains ending in a token
        # Dispatched on type(node), taken once per node in this hot loop: mypy cannot narrow through ``kind``.
        node: Any
        for node in walk(tree):
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, ast.Store):
                    self.assigned.add(node.id)
                if node.id in _ALL_TOKENS:
                    self.uses.append(node)
            elif kind is ast.Attribute:
                if node.attr in _ALL_TOKENS:
                    self.uses.append(node)
            elif kind is ast.Import:
                for alias in node.names:
                    self.imported.append(alias.name)
                    bound = alias.asname or alias.name.split(".")[0]
                    self.imports.setdefault(bound, []).append(alias.name if alias.asname else bound)
            elif kind is ast.ImportFrom:
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        self.star = True
                        continue
                    qname = f"{module}.{alias.name}"
                    self.imported.append(qname)
                    self.imports.setdefault(alias.asname or alias.name, []).append(qname)

    def may_reference(self, apis: frozenset[str], tokens: frozenset[str]) -> bool:
        """Whether the semantic model could resolve a name to one of ``apis`` (whose references
        hold one of ``tokens``)."""
        if any(_has_token(q, tokens) and _related(q, apis) for q in self.imported):
            return True
        for use in self.uses:
            if (use.id if isinstance(use, ast.Name) else use.attr) not in tokens:
                continue
            attrs: list[str] = []
            root: ast.expr = use
            while isinstance(root, ast.Attribute):
                attrs.append(root.attr)
                root = root.value
            if not isinstance(root, ast.Name):
                continue  # ``f().checkpoint``: the model resolves no call results
            name = root.id
            if name in self.assigned or (self.star and name not in self.imports):
                return True
            suffix = "".join(f".{a}" for a in reversed(attrs))
            if any(_related(q + suffix, apis) for q in self.imports.get(name, ())):
                return True
        return False


@lru_cache(maxsize=16)
def prefilter_for(codes: frozenset[str]) -> Prefilter:
    """The prefilter for the rules with these codes."""
    from remat_lint.registry import rule_index

    infos = [info for info in rule_index() if info.code in codes]
    return Prefilter(
        (w for info in infos for w in info.prefilter_words),
        (info.prefilter_apis for info in infos if info.prefilter_apis),
    )
