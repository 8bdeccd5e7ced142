"""What crosses between the driver and a worker (remat_lint/trace/protocol.py): each reply comes back
as the same typed object, the module it names with it; a line that is no reply is skipped. A verdict
shows in the JSON and SARIF outputs as the keys it has."""

from __future__ import annotations

import json

import pytest

from remat_lint.trace.protocol import (
    AppliedReply,
    BackendReply,
    BudgetReply,
    DiscoveredReply,
    NoteReply,
    ProgressReply,
    RecordedReply,
    SiteReply,
    Verdict,
    VerdictReply,
    decode,
    encode,
)

REPLIES = [
    BackendReply("cpu", "--xla_disable_hlo_passes=cse_barrier_expander"),
    VerdictReply(3, Verdict("confirmed", "TypeError (grad: loss)", {"target": "loss"})),
    VerdictReply(4, Verdict("refuted", "traced", None, ({"line": 12},), ({"target": "loss"},), "trace")),
    SiteReply({"line": 12, "residuals": [], "policies": []}, "loss(f32[8,8])"),
    BudgetReply({"fits": True, "sites": []}, "loss"),
    AppliedReply([4, 9], False, "grad of loss"),
    DiscoveredReply({"code": "REM401", "line": 9}, "grad of loss"),
    NoteReply("target loss failed at build: ValueError"),
    RecordedReply(["grad of loss"], ["TypeError: 'str' object is not callable"]),
    ProgressReply(2, 5, "grad of loss", process=41),
]


@pytest.mark.parametrize("reply", REPLIES, ids=lambda reply: type(reply).__name__)
def test_a_reply_comes_back_as_it_was_sent(reply):
    assert decode(encode(reply)) == (reply, "")
    assert decode(encode(reply, "/project/pkg/model.py")) == (reply, "/project/pkg/model.py")


def test_each_kind_of_reply_is_named_on_the_wire():
    kinds = [json.loads(encode(reply))["kind"] for reply in REPLIES]
    assert kinds == [
        "backend",
        "verdict",
        "verdict",
        "site",
        "budget",
        "applied",
        "discovered",
        "note",
        "recorded",
        "progress",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "",
        '{"kind": "verdict", "finding": 3, "tr',  # a worker killed mid-line
        "user output",  # a process of the --trace-run command writing to the same file
        '{"kind": "verdict", "finding": 3}',  # a field missing
        '{"kind": "verdict", "finding": 3, "trace": {"status": "maybe", "reason": "x"}}',
        '{"kind": "verdict", "finding": 3, "trace": "confirmed"}',
        '{"kind": "shout", "note": "x"}',
        '{"note": "no kind"}',
        "[1, 2]",
    ],
)
def test_a_line_that_is_no_reply_is_skipped(line):
    assert decode(line) is None


def test_a_verdict_shows_the_keys_it_has_in_the_order_users_read():
    plain = Verdict("unconfirmed", "the worker gave no result")
    assert (
        json.dumps(plain.to_json())
        == '{"status": "unconfirmed", "evidence": null, "reason": "the worker gave no result"}'
    )
    found = Verdict(
        "confirmed", "found by tracing", {"program": "grad of loss"}, sites=({"line": 3},), found_by="trace"
    )
    assert list(found.to_json()) == ["status", "evidence", "reason", "sites", "found_by"]
    assert found.to_json()["sites"] == [{"line": 3}]
