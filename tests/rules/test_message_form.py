"""Messages scan: a first sentence that states the problem and stands alone (what ``concise``,
GitHub titles, flake8 and the JSON ``message`` show), then the measured why (``full``, the JSON
``detail``, SARIF)."""

from __future__ import annotations

import statistics

from remat_lint.findings import Finding, Position, Severity


def finding(message: str) -> Finding:
    return Finding("REM001", "policy-not-callable", Severity.ERROR, message, "m.py", Position(1, 0), Position(1, 1))


def test_the_title_is_the_first_sentence_outside_backticks():
    f = finding("`jax.checkpoint` ignores `static_argnames=`. JAX honours it only under `jax_remat3`. Use `x`.")
    assert (f.title, f.why) == (
        "`jax.checkpoint` ignores `static_argnames=`",
        "JAX honours it only under `jax_remat3`. Use `x`.",
    )
    f = finding("`cp` has no `nothing_savable`; did you mean `nothing_saveable`? Evaluating it raises `AttributeError`")
    assert f.title.endswith("did you mean `nothing_saveable`?") and f.why == "Evaluating it raises `AttributeError`"
    f = finding("`policy=True` raises `TypeError: 'bool' object is not callable. at grad`")
    assert (f.title, f.why) == (f.message, "")


def test_every_fixture_finding_has_a_short_title_then_the_why(cli_results):
    """The issue's measure: on fixtures/, the median `concise` line is at most 160 characters and
    none exceeds 300; and no finding is a title alone."""
    findings = [item for items in cli_results.values() for item in items if item["code"] != "REM000"]
    lines = [
        f"{i['filename']}:{i['location']['row']}:{i['location']['column']}: {i['code']} {i['message']}"
        for i in findings
    ]
    assert statistics.median(map(len, lines)) <= 160
    assert max(map(len, lines)) <= 300, max(lines, key=len)
    assert [i["message"] for i in findings if not i["detail"]] == []
