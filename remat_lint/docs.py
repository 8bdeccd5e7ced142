"""The README's rule table, generated from the registry (`python -m remat_lint.docs` rewrites it)."""

from __future__ import annotations

import re
from pathlib import Path

from remat_lint.registry import all_rules

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def rules_table() -> str:
    rows = ["| Code | Name | Severity | Default | What it flags |", "|---|---|---|---|---|"]
    for rule in all_rules():
        default = "on" if rule.default_enabled else "off"
        summary = rule.summary().replace("|", "\\|")
        rows.append(f"| {rule.code} | `{rule.name}` | {rule.severity.value} | {default} | {summary} |")
    return "\n".join(rows)


def update_readme(path: Path) -> bool:
    """Rewrite the table between the markers; True when the file changed."""
    text = path.read_text(encoding="utf-8")
    new = re.sub(f"{re.escape(START)}.*?{re.escape(END)}", f"{START}\n{rules_table()}\n{END}", text, flags=re.S)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    update_readme(Path(__file__).resolve().parent.parent / "README.md")
