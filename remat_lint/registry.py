"""The rule registry: every ``Rule`` subclass defined in a module of ``remat_lint.rules``.

``rule_index`` reads what a run needs before any parse (codes, defaults, prefilter words) from the
rule modules' source text, without importing them: importing a rule imports libcst, which costs
about 0.3 s, more than a warm run or a pre-commit run on a file that never mentions remat.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remat_lint.rule import Rule


@dataclass(frozen=True)
class RuleInfo:
    code: str
    module: str  # the module defining the rule, e.g. ``remat_lint.rules.rem001_policy_not_callable``
    default_enabled: bool
    prefilter_words: tuple[str, ...]
    project_wide: bool  # overrides ``project_filter``


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, sorted by code."""
    import remat_lint.rules as package
    from remat_lint.rule import Rule

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"duplicate rule code {value.code}: {found[value.code]} and {value}")
                found[value.code] = value
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    code = code.upper()
    return next((rule for rule in all_rules() if rule.code == code), None)


# Class-level attributes of a rule, as written in the usual way (one per line, literal values).
_ATTR = re.compile(r"^    (code|default_enabled|prefilter_words)\b[^=\n]*=[ \t]*(.+(?:\n[ \t]+.+)*?)[ \t]*(?:#.*)?$", re.M)


@lru_cache(maxsize=1)
def rule_index() -> tuple[RuleInfo, ...]:
    """Every rule's code, default and prefilter words, sorted by code."""
    import remat_lint.rules as package

    infos = []
    for info in pkgutil.iter_modules(package.__path__):
        name = f"{package.__name__}.{info.name}"
        try:
            text = (Path(info.module_finder.path) / f"{info.name}.py").read_text(encoding="utf-8")  # type: ignore[union-attr]
            attrs = _static_attrs(text)
        except (OSError, AttributeError, ValueError, SyntaxError):
            return _imported_index()
        if attrs is None:
            continue
        infos.append(
            RuleInfo(attrs["code"], name, attrs.get("default_enabled", True), tuple(attrs.get("prefilter_words", ())),
                     "def project_filter" in text)
        )
    return tuple(sorted(infos, key=lambda i: i.code))


def _static_attrs(text: str) -> dict[str, object] | None:
    """The rule attributes in a module's source; None for a module without a rule. Raises
    ValueError when the module defines a rule in a way this cannot read (the caller imports)."""
    attrs: dict[str, object] = {}
    for match in _ATTR.finditer(text):
        key, value = match.group(1), ast.literal_eval(match.group(2).strip())
        if key in attrs:
            raise ValueError("two rules in one module")
        attrs[key] = value
    if "code" not in attrs:
        if re.search(r"^class \w+\(.*Rule\b", text, re.M):
            raise ValueError("rule without a literal code")
        return None
    if not isinstance(attrs.get("default_enabled", True), bool) or not isinstance(attrs.get("prefilter_words", ()), tuple):
        raise ValueError("unexpected attribute value")
    return attrs


def _imported_index() -> tuple[RuleInfo, ...]:
    from remat_lint.rule import Rule

    return tuple(
        RuleInfo(rule.code, rule.__module__, rule.default_enabled, tuple(rule.prefilter_words),
                 rule.project_filter.__func__ is not Rule.project_filter.__func__)  # type: ignore[attr-defined]
        for rule in all_rules()
    )


def rule_class(code: str) -> type[Rule]:
    """The rule with ``code``, importing only its module."""
    from remat_lint.rule import Rule

    info = next(i for i in rule_index() if i.code == code)
    module = importlib.import_module(info.module)
    return next(v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Rule) and getattr(v, "code", None) == code)
