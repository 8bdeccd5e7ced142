from __future__ import annotations

from remat_lint.engine.results import PARSE_ERROR
from remat_lint.findings import Applicability, Finding, Fix, Position, Severity, TextEdit
from remat_lint.output.noqa import UNUSED_NOQA, Directive, Suppressions, split_codes
from remat_lint.rule import FixAvailability, Invalid, Rule


class UnusedNoqa(Rule):
    """
    ## What it does
    Flags a `# noqa: REMnnn` whose code suppressed nothing on its line: the finding it was written
    for is gone (fixed, or the code moved), or the code is not one of this tool's rules
    (`# noqa: REM999`, a typo). ruff's `RUF100` for remat-lint's codes.

    Only this tool's codes are judged (`F401` beside them is left alone, and so is a blanket
    `# noqa`), and a code only where its rule ran on the file: not one the configuration
    disables, nor one a rule quiet in test code would have used there. A code that suppressed a
    candidate of a project-wide rule (REM008) counts as used. Codes of the rules that the project reports at
    a call of another module's wrap (REM012, REM016) are not judged: linting one file cannot tell.

    Off by default: enable it with `extend-select = ["REM100"]`.

    ## Why is this bad?
    A stale `# noqa` hides the next real finding on that line, and tells the reader a problem is
    there that is not.

    ## Example
    ```python
    import jax

    block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)  # noqa: REM001
    ```

    ## Use instead
    ```python
    import jax

    block = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)
    ```

    ## Fix safety
    The fix is safe: it removes the unused codes, or the whole `# noqa` when none is used (a
    comment after it stays). Where something other than a comment follows the directive
    (`# noqa: REM001 because ...`) there is no fix: removing the directive would leave that text as
    code.

    ## References
    - [ruff's unused-noqa (RUF100)](https://docs.astral.sh/ruff/rules/unused-noqa/)
    - [flake8: selecting and ignoring violations](https://flake8.pycqa.org/en/latest/user/violations.html)
    """

    code = UNUSED_NOQA
    name = "unused-noqa"
    severity = Severity.WARNING
    default_enabled = False
    fix = FixAvailability.SOMETIMES
    fix_applicability = (Applicability.SAFE,)
    since = "0.2.0"
    prefilter_words = ("noqa",)

    VALID = [
        "import jax\ng = jax.checkpoint(f, policy='dots_saveable')  # noqa: REM001",
        "x = 1  # noqa",
        "x = 1  # noqa: F401, E501",
        "x = 1  # noqa: REM001",  # REM001 did not run (only REM100 is selected here)
    ]
    INVALID = [
        Invalid("x = 1  # noqa: REM999\n", fixed="x = 1\n"),
        Invalid("x = 1  # noqa: F401, REM999\n", fixed="x = 1  # noqa: F401\n"),
        Invalid("x = 1  #NOQA:REM999  # keep this comment\n", fixed="x = 1  # keep this comment\n"),
        Invalid("x = 1  # noqa: REM999 because\n"),
    ]

    def check(self) -> None:
        """Decided by ``unused`` once the file's other findings and their suppression are known."""


def unused(
    path: str, source: str, suppressions: Suppressions, suppressed: list[Finding], checked: set[str]
) -> list[Finding]:
    """A finding for each inline directive with codes of this tool that suppressed nothing in
    ``suppressed`` (the findings a ``# noqa`` hid) and whose rules all ran (``checked``)."""
    from remat_lint.registry import rule_index

    known = {info.code for info in rule_index()} | {PARSE_ERROR}
    lines = source.splitlines()
    findings = []
    for directive in suppressions.directives:
        codes = split_codes(directive.match.group("codes"))
        used = {c for c in codes for f in suppressed if f.start.row in directive.rows and f.code.startswith(c)}
        covered = {
            c: {k for k in known if k.startswith(c)} for c in codes if c.startswith("REM") and c != UnusedNoqa.code
        }
        unknown = [c for c, rules in covered.items() if not rules]
        stale = [c for c, rules in covered.items() if rules and c not in used and rules <= checked]
        if unknown or stale:
            kept = [c for c in codes if c not in unknown and c not in stale]
            findings.append(_finding(path, lines[directive.row - 1], directive, stale, unknown, kept))
    return findings


def _finding(
    path: str, line: str, directive: Directive, stale: list[str], unknown: list[str], kept: list[str]
) -> Finding:
    parts = [f"{label}: {_listed(codes)}" for label, codes in (("unused", stale), ("unknown", unknown)) if codes]
    why = [f"No {_listed(stale)} finding is reported on this line, so it only hides the next real one"] if stale else []
    why += (
        [f"{'There' if not stale else 'there'} is no remat-lint rule {_listed(unknown)} (a typo, or a removed code)"]
        if unknown
        else []
    )
    match, row = directive.match, directive.row
    edit = _removal(line, directive, kept)
    fix = None if edit is None else Fix("Remove unused `noqa` directive", Applicability.SAFE, (edit,))
    return Finding(
        UnusedNoqa.code,
        UnusedNoqa.name,
        UnusedNoqa.severity,
        f"Unused `noqa` directive ({'; '.join(parts)}). {'; '.join(why)}",
        path,
        Position(row, match.start()),
        Position(row, match.end()),
        fix,
    )


def _listed(codes: list[str]) -> str:
    return ", ".join(f"`{code}`" for code in codes)


def _removal(line: str, directive: Directive, kept: list[str]) -> TextEdit | None:
    """The edit that leaves the ``kept`` codes, or removes the directive when none is kept: with
    the spaces before it at the end of a line, else up to the comment that follows (which takes
    its place); None when text that is not a comment follows."""
    match, row = directive.match, directive.row
    if kept:
        end = match.start("codes") + len(match.group("codes").rstrip(", \t"))
        return TextEdit(Position(row, match.start("codes")), Position(row, end), ", ".join(kept))
    before, rest = line[: match.start()], line[match.end() :]
    if not rest.strip():
        return TextEdit(Position(row, len(before.rstrip())), Position(row, len(line)), "")
    if rest.lstrip().startswith("#"):
        return TextEdit(Position(row, match.start()), Position(row, len(line) - len(rest.lstrip())), "")
    return None
