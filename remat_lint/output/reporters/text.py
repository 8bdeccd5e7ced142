"""``concise`` (path:line:col: CODE and the message's first sentence) and ``full`` (plus the source
line, a caret, the rest of the message and the fix hint)."""

from __future__ import annotations

from remat_lint.findings import Finding
from remat_lint.output.reporters import fix_label, place


def _paint(text: str, style: str, colour: bool) -> str:
    """ANSI styling (``--color``): "1" bold, "1;31" bold red, "36" cyan, as ruff colours its output."""
    return f"\x1b[{style}m{text}\x1b[0m" if colour else text


def _head(f: Finding, colour: bool = False) -> str:
    colon = _paint(":", "36", colour)
    return (
        f"{_paint(place(f), '1', colour)}{colon}{f.start.row}{colon}{f.start.column + 1}{colon} "
        f"{_paint(f.code, '1;31', colour)} {f.title}"
    )


def _trace(f: Finding) -> str:
    """The --trace verdict under a finding."""
    return f"  = trace: {f.trace.status}: {f.trace.reason}".rstrip() if f.trace is not None else ""


def concise(findings: list[Finding], sources: dict[str, str], colour: bool = False) -> str:
    return "".join(_head(f, colour) + "\n" + (_trace(f) + "\n" if f.trace is not None else "") for f in findings)


def full(findings: list[Finding], sources: dict[str, str], colour: bool = False) -> str:
    out = []
    for f in findings:
        out.append(_head(f, colour))
        lines = sources.get(place(f), "").splitlines()
        if 0 < f.start.row <= len(lines):
            line = lines[f.start.row - 1].expandtabs(1)
            width = (f.end.column if f.end.row == f.start.row else len(line)) - f.start.column
            gutter = str(f.start.row)
            out.append(f"{' ' * len(gutter)} |")
            out.append(f"{gutter} | {line}")
            out.append(f"{' ' * len(gutter)} | {' ' * f.start.column}{_paint('^' * max(width, 1), '1;31', colour)}")
        if f.why:
            out.append(f"  = why: {f.why}")
        out += [f"  = note: {r.path}:{r.start.row}:{r.start.column + 1}: {r.message}" for r in f.related]
        if f.fix is not None:
            label = fix_label(f, " (unsafe: --unsafe-fixes)")
            out.append(f"  = help: {f.fix.message}{label}")
        if f.trace is not None:
            out.append(_trace(f))
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
