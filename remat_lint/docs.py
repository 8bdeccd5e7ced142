"""Rule documentation generated from the registry: the README's rule table and docs/rules.md, the
page that every finding's ``url`` points at. `python -m remat_lint.docs` rewrites both, and the
rule metadata table that registry.py reads (remat_lint/rule_table.py)."""

from __future__ import annotations

import re
from pathlib import Path

from remat_lint.registry import TABLE, RuleInfo, all_rules, table_source
from remat_lint.rule import FixAvailability

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rules_table() -> str:
    rows = ["| Code | Name | Severity | Default | What it flags |", "|---|---|---|---|---|"]
    for rule in all_rules():
        default = "preview" if rule.preview else "on" if rule.default_enabled else "off"
        summary = rule.summary().replace("|", "\\|")
        rows.append(f"| {rule.code} | `{rule.name}` | {rule.severity.value} | {default} | {summary} |")
    return "\n".join(rows)


def explain(rule: RuleInfo) -> str:
    """What ``remat-lint rule CODE`` prints: a title, severity and default, then the rule's doc."""
    default = "on" if rule.default_enabled else "off (enable with --extend-select)"
    facts = [f"Severity: {rule.severity.value}.", f"Default: {default}.", f"Fix: {_fix(rule)}."]
    if rule.quiet_in_tests:
        facts.append("Quiet in test code (`test-paths`).")
    if rule.project_wide:
        facts.append("Project-wide: decided on all linted files together.")
    if rule.preview:
        facts.append("Preview: its behaviour may still change; it runs only when its code is selected.")
    facts.append(f"Since {rule.since}.")
    return f"# {rule.name} ({rule.code})\n\n{' '.join(facts)}\n\n{rule.doc}"


# ruff's words for each availability (its FixAvailability's Display).
_FIX_SENTENCES = {
    FixAvailability.NONE: "Fix is not available.",
    FixAvailability.SOMETIMES: "Fix is sometimes available.",
    FixAvailability.ALWAYS: "Fix is always available.",
}


def explanation(rule: RuleInfo) -> dict[str, object]:
    """What ``remat-lint rule CODE --output-format json`` prints for a rule: the fields of ruff's
    ``rule --output-format json`` (``linter`` is this tool; a rule's messages vary, so
    ``message_formats`` is empty), then this tool's severity, default and docs address."""
    return {
        "name": rule.name,
        "code": rule.code,
        "linter": "remat-lint",
        "summary": rule.summary,
        "message_formats": [],
        "fix": _FIX_SENTENCES[rule.fix],
        "fix_availability": rule.fix.name.capitalize(),
        "explanation": rule.doc,
        "preview": rule.preview,
        "severity": rule.severity.value,
        "default_enabled": rule.default_enabled,
        "url": rule.url,
    }


def _fix(rule: RuleInfo) -> str:
    if rule.fix is FixAvailability.NONE:
        return "none"
    kinds = " or ".join(a.value for a in rule.fix_applicability)
    return f"{rule.fix.value} available ({kinds})"


def rules_page() -> str:
    """Every rule's doc on one page, one level down, each under an anchor named by its code."""
    parts = [
        "# remat-lint rules\n\nGenerated from the rule classes by `python -m remat_lint.docs`; "
        "`remat-lint rule CODE` prints the same text."
    ]
    for rule in all_rules():
        lines, fenced = [], False
        for line in explain(RuleInfo.of(rule)).splitlines():
            fenced ^= line.startswith("```")
            lines.append("#" + line if line.startswith("#") and not fenced else line)
        parts.append(f'<a id="{rule.code.lower()}"></a>\n\n' + "\n".join(lines))
    return "\n\n".join(parts) + "\n"


def update_readme(path: Path) -> bool:
    """Rewrite the table between the markers; True when the file changed."""
    text = path.read_text(encoding="utf-8")
    new = re.sub(f"{re.escape(START)}.*?{re.escape(END)}", f"{START}\n{rules_table()}\n{END}", text, flags=re.S)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    update_readme(root / "README.md")
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "rules.md").write_text(rules_page(), encoding="utf-8")
    TABLE.write_text(table_source(), encoding="utf-8")
