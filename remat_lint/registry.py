"""The rule registry: every ``Rule`` subclass defined in a module of ``remat_lint.rules``, and their
declared metadata without importing them.

Importing a rule imports libcst, about 0.3 s: more than a warm run, or a pre-commit run on files
that never mention remat. So what a run needs before any parse (code, name, severity, default,
prefilter words...) is read from ``rule_table.py``, a table generated from the rule classes by
``python -m remat_lint.docs``. The table records a digest of the sources it was generated from;
when the rules changed since (a rule edited or added, the table not regenerated yet),
``rule_index`` imports the rules instead, so a stale table costs time, never a wrong answer.
tests/rules/test_rule_metadata.py fails while the table is stale. A rule's doc and summary, which
only some outputs show (SARIF, editor hovers, ``remat-lint rule``), are read on demand from the
rule module's source with ``ast``, still without importing it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import pkgutil
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remat_lint.findings import Applicability, Severity
from remat_lint.rule import DOCS_URL, FixAvailability, clean_doc, summary_of

if TYPE_CHECKING:
    from remat_lint.rule import Rule

TABLE = Path(__file__).with_name("rule_table.py")


@dataclass(frozen=True)
class RuleInfo:
    """A rule's declared metadata (see ``Rule``), as plain data."""

    code: str
    name: str
    module: str  # the module defining the rule, e.g. ``remat_lint.rules.rem001_policy_not_callable``
    class_name: str  # the rule's class in that module
    severity: Severity
    default_enabled: bool
    quiet_in_tests: bool
    fix: FixAvailability
    fix_applicability: tuple[Applicability, ...]
    project_wide: bool
    preview: bool
    since: str
    prefilter_words: tuple[str, ...]
    prefilter_apis: tuple[str, ...]
    export_words: tuple[str, ...] | None  # a rule that reports at calls: its ``Rule.export_words``; None otherwise

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code.lower())

    @property
    def doc(self) -> str:
        return rule_doc(self.module, self.class_name)

    @property
    def summary(self) -> str:
        return summary_of(self.doc, self.name)

    @classmethod
    def of(cls, rule: type[Rule]) -> RuleInfo:
        return cls(
            rule.code,
            rule.name,
            rule.__module__,
            rule.__name__,
            rule.severity,
            rule.default_enabled,
            rule.quiet_in_tests,
            rule.fix,
            tuple(rule.fix_applicability),
            rule.project_wide,
            rule.preview,
            rule.since,
            tuple(rule.prefilter_words),
            tuple(rule.prefilter_apis),
            tuple(rule.export_words) if rule.reports_at_calls else None,
        )


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, sorted by code."""
    import remat_lint.rules as package
    from remat_lint.rule import Rule

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and value.__module__ == module.__name__
            ):
                if value.code in found:
                    raise RuntimeError(f"duplicate rule code {value.code}: {found[value.code]} and {value}")
                found[value.code] = value
    return tuple(found[code] for code in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    code = code.upper()
    return next((rule for rule in all_rules() if rule.code == code), None)


@lru_cache(maxsize=1)
def rule_index() -> tuple[RuleInfo, ...]:
    """Every rule's metadata, sorted by code: from the generated table while it is current."""
    from remat_lint import rule_table

    if rule_table.SOURCES != sources_digest():
        return _imported_index()
    return tuple(_info(dict(zip(rule_table.FIELDS, row, strict=True))) for row in rule_table.RULES)


def rule_info(code: str) -> RuleInfo | None:
    return next((info for info in rule_index() if info.code == code), None)


def rule_class(code: str) -> type[Rule]:
    """The rule with ``code``, importing only its module."""
    info = next(i for i in rule_index() if i.code == code)
    rule: type[Rule] = getattr(importlib.import_module(info.module), info.class_name)
    return rule


@lru_cache(maxsize=None)
def rule_doc(module: str, class_name: str) -> str:
    """What ``Rule.doc`` returns for the rule class ``class_name`` of ``module``, read from the
    module's source (the class's docstring); from the imported class where the source is not
    installed (only ``.pyc`` files)."""
    from importlib.abc import InspectLoader  # here: a warm run reads no doc

    spec = importlib.util.find_spec(module)
    source = spec.loader.get_source(module) if spec is not None and isinstance(spec.loader, InspectLoader) else None
    if source is None:
        rule: type[Rule] = getattr(importlib.import_module(module), class_name)
        return rule.doc()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return clean_doc(ast.get_docstring(node, clean=False))
    raise LookupError(f"no class {class_name} in {module}")


def sources_digest() -> str:
    """A digest of the rule modules and of the base class whose defaults they inherit."""
    import remat_lint.rules as package

    digest = hashlib.sha256(Path(__file__).with_name("rule.py").read_bytes())
    for directory in package.__path__:
        for path in sorted(Path(directory).glob("*.py")):
            digest.update(f"\0{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _imported_index() -> tuple[RuleInfo, ...]:
    return tuple(RuleInfo.of(rule) for rule in all_rules())


def _info(row: dict[str, object]) -> RuleInfo:
    fields: dict[str, Any] = dict(row)  # RuleInfo's fields, as the generated table spells them
    fields["severity"] = Severity(fields["severity"])
    fields["fix"] = FixAvailability(fields["fix"])
    fields["fix_applicability"] = tuple(Applicability(a) for a in fields["fix_applicability"])
    return RuleInfo(**fields)


def table_source() -> str:
    """The text of ``rule_table.py`` for the rules as they are now: one row of ``FIELDS`` per rule."""
    import pprint  # here, not at the top: only `python -m remat_lint.docs` writes the table

    rows = []
    for info in _imported_index():
        row = asdict(info)
        row["severity"], row["fix"] = info.severity.value, info.fix.value
        row["fix_applicability"] = tuple(a.value for a in info.fix_applicability)
        rows.append(tuple(row.values()))
    return (
        '"""Generated by `python -m remat_lint.docs` from the rule classes: do not edit. remat_lint/registry.py\n'
        'reads it instead of importing the rules (and libcst); the rules\' docs stay in their modules."""\n\n'
        f"SOURCES = {sources_digest()!r}\n\n"
        f"FIELDS = {pprint.pformat(tuple(f.name for f in fields(RuleInfo)), width=110, compact=True)}\n\n"
        f"RULES = {pprint.pformat(tuple(rows), width=110, compact=True)}\n"
    )
